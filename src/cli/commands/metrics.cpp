// gpubench metrics: the metric tags records carry (for compare --metric and export).

#include "cli/commands/commands.h"
#include "gpubench/report/views.hpp"

namespace gpubench::cli {

namespace {

class MetricsCommand final : public Command {
 public:
  void declare(CLI::App& /*cmd*/) override {}
  int run(Context& ctx) override {
    ctx.print(metrics_document());
    return kExitOk;
  }
};

}  // namespace

CommandSpec metrics_command() {
  return {"metrics", "List the metric tags records carry (for compare --metric and export)",
          {kExitOk, kExitUsage, kExitOutputNotWritten}, "console", [] { return std::make_unique<MetricsCommand>(); }};
}

}  // namespace gpubench::cli
