#include "cli/exit_codes.h"

#include "gpubench/core/scenario/scenario_loader.hpp"

namespace gpubench::cli {

const std::vector<ExitCodeInfo>& exit_code_table() {
  static const std::vector<ExitCodeInfo> table{
      {kExitOk, "ok"},
      {kExitRunFailed, "a run failed (its record says why: oom, nan, interrupted, failed), a measurement did, a "
                       "compared candidate run had failed, or run --dry-run found no such device"},
      {kExitUsage, "usage, scenario or input error, or an unusable output location (checked before any work)"},
      {kExitRegression, "a regression: compare or history --detect found a change for the worse"},
      {kExitOutputNotWritten, "the work finished but an output is not where asked (record, store or --save file; "
                              "the console says where it went)"},
      {kExitNotSameScenario, "not the same scenario: a candidate's baseline runs differ in identity (the keys are "
                             "listed), or a run is not a publication's recipe; --allow-missing makes it 0"},
      {kExitNoBaseline, "no baseline: nothing to compare a candidate with; --allow-missing makes it 0 (never a "
                        "failed candidate: that is 1)"},
      {kExitTooFewRuns, "not enough runs: history --detect needs more runs in a series; --allow-missing makes it 0"},
      {kExitInconclusive, "inconclusive: compare or history --detect found a difference the GPU may not have "
                          "caused: between host-bound runs without repeats on both sides, or with a run timed on a "
                          "busy host (the message names it and the figure)"},
      {kExitInterrupted, "interrupted (Ctrl-C or SIGTERM): db add keeps every record it added whole and says "
                         "how many; dataset make leaves nothing; an interrupted run is 1 (its record says so)"},
  };
  return table;
}

std::string exit_code_footer(const std::vector<int>& codes) {
  std::string out = "Exit codes:";
  for (const auto& e : exit_code_table()) {
    for (int c : codes) {
      if (c == e.code) out += "\n  " + std::to_string(e.code) + "  " + e.meaning;
    }
  }
  return out;
}

int exit_code_for(const std::exception& e) {
  if (dynamic_cast<const RunFailedError*>(&e) != nullptr) return kExitRunFailed;
  if (dynamic_cast<const OutputNotWritten*>(&e) != nullptr) return kExitOutputNotWritten;
  // UsageError, ScenarioError, and whatever a library throws at the edges (unreadable input): usage.
  return kExitUsage;
}

}  // namespace gpubench::cli
