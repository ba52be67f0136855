// gpubench: GPU training benchmarks on LibTorch. See README.md and docs/cli.md.
//
// This file is the logger, the command table and the process's edges; each command is one file under
// src/cli/commands/, the framework (flags every command shares, exit codes, did-you-mean) is src/cli/app.cpp.

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <cstdio>

#include "cli/app.h"
#include "cli/logging.h"
#include "cli/commands/commands.h"
#include "gpubench/core/analysis/identity.hpp"
#include "gpubench/engine/engine.hpp"

namespace {

/// Colour only for a terminal, and never under NO_COLOR (no-color.org) or TERM=dumb.
spdlog::color_mode color_mode() {
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  if ((no_color != nullptr && *no_color != '\0') || (term != nullptr && std::strcmp(term, "dumb") == 0)) {
    return spdlog::color_mode::never;
  }
  return spdlog::color_mode::automatic;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gpubench::cli;  // NOLINT(google-build-using-namespace): the table below names every command
  // Past a file-size limit (ulimit -f), write() should fail with EFBIG and be reported, not kill the process.
  std::signal(SIGXFSZ, SIG_IGN);
  // Line-buffered standard output even into a file or pipe: a kill -9 after training keeps every finished line.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  auto logger = spdlog::stderr_color_mt("gpubench", color_mode());
  spdlog::set_default_logger(logger);
  set_log_pattern("%^[%l]%$ %v");  // every line without passwords
  gpubench::use_model_catalog_for_labels(gpubench::available_models());  // "gpt2 (layers=2) bs8 ..." in every view

  // The commands, one line each: `gpubench --help` lists them in this order.
  const std::vector<CommandSpec> commands{
      run_command(),
      sweep_command(),
      scaling_command(),
      compare_command(),
      report_command(),
      export_command(),
      history_command(),
      db_command(),
      trace_command(),
      metrics_command(),
      list_command(),
      info_command(),
      validate_command(),
      fit_command(),
      dataset_command(),
  };
  return run_cli(commands, argc, argv);
}
