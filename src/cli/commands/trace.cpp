// gpubench trace: a Chrome trace's kernel profile by category and kernel, or two traces compared kernel by kernel.

#include <algorithm>
#include <cstdint>

#include "cli/commands/commands.h"
#include "gpubench/core/analysis/profile.hpp"
#include "gpubench/core/io/files.hpp"
#include "gpubench/core/record/record_io.hpp"
#include "gpubench/report/views.hpp"

namespace gpubench::cli {

namespace {

/// One trace's profile, with every kernel kept (a comparison matches kernels by name). Throws UsageError naming it.
ProfileRecord read_trace(const std::string& path) {
  try {
    const std::vector<ProfileEvent> events =
        events_from_chrome_trace(nlohmann::json::parse(read_text_file_or_gzip(path, kMaxTraceBytes, "Chrome trace")));
    ProfileInputs inputs;
    inputs.steps = std::max<int64_t>(1, count_steps(events));
    inputs.top_kernels = SIZE_MAX;
    ProfileRecord p = summarize_profile(events, inputs);
    if (p.wall_ms_per_step <= 0) throw std::runtime_error("it holds no kernels or operators");
    p.when = count_steps(events) > 0 ? std::to_string(inputs.steps) + " marked steps"
                                     : "no step markers: the whole trace as one step";
    p.source = "Chrome trace";
    p.trace_path = path;
    return p;
  } catch (const std::exception& e) {
    throw UsageError(path + ": " + e.what());
  }
}

class TraceCommand final : public Command {
 public:
  void declare(CLI::App& cmd) override {
    cmd.add_option("TRACES", paths_,
                   "One trace, or two to compare (A then B): gpubench's <record>.trace.json from --profile, or "
                   "torch.profiler's export_chrome_trace")
        ->required()
        ->expected(1, 2)
        ->type_name("TRACE");
    cmd.add_option("--top", top_, "Kernels listed (default 25)")->check(CLI::Range(1, 100000).description(""))->type_name("INT")->transform(decimal_whole());
    cmd.footer("Steps are the trace's step markers (gpubench::profiled_step, or torch.profiler's ProfilerStep#N); "
               "times are per step.\nCategories and patterns: docs/performance.md. Compare gpubench with PyTorch on the "
               "same GPU:\n  gpubench trace runs/bert.trace.json pytorch.trace.json");
  }

  void files(FileRoles& roles) const override {
    for (const auto& p : paths_) roles.input(p, "TRACES");
  }

  int run(Context& ctx) override {
    std::vector<std::pair<std::string, ProfileRecord>> traces;
    for (const auto& path : paths_) traces.emplace_back(path, read_trace(path));
    ctx.print(trace_document(traces, top_));
    return kExitOk;
  }

 private:
  std::vector<std::string> paths_;
  size_t top_ = 25;
};

}  // namespace

CommandSpec trace_command() {
  return {"trace", "A Chrome trace's kernel profile by category and kernel, or two traces compared kernel by kernel",
          {kExitOk, kExitUsage, kExitOutputNotWritten}, "console", [] { return std::make_unique<TraceCommand>(); }};
}

}  // namespace gpubench::cli
