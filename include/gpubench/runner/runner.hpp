#pragma once
// Runner: owns one run and hands back its complete record. It trains the scenario through the engine, samples this
// process's device while the timed epochs run (every rank of a multi-GPU job samples its own), and adds what the
// engine does not know: the telemetry block, locked-clock evidence, drift and the interconnect. Front ends (the CLI,
// tests, a library user) pass an observer that only reports progress, and all get the same record.

#include <functional>

#include "gpubench/engine/engine.hpp"

namespace gpubench {

/// `--repeats N --cooldown S`: the same scenario N times, with an idle pause between runs so that every repeat
/// starts from a similar temperature.
struct RepeatPlan {
  int count = 1;
  double cooldown_s = 0;
};

class Runner {
 public:
  explicit Runner(RunOptions options);

  /// Trains `scenario` once. Failures (no device, OOM, non-finite loss, interrupt) come back as a record with that
  /// status and a reason, never as an exception. `progress` sees every engine event plus on_telemetry.
  RunRecord run(const ResolvedScenario& scenario, RunObserver& progress) const;
  /// The same for a scenario not yet resolved (library callers, tests): the engine resolves it for this machine.
  RunRecord run(const Scenario& scenario, RunObserver& progress) const;

  /// Trains `scenario` plan.count times. Before each run, `observer_for(index)` (1-based) gives the observer for it
  /// (called once per run; it also hears the cool-down that follows);
  /// after it, `on_record(record)` receives the record (repeat_index/repeat_count set) so it is on disk before the
  /// next run starts. Stops early, also during a cool-down, once RunOptions::stop_requested is set. Returns how many
  /// runs were made.
  int run_repeats(const ResolvedScenario& scenario, const RepeatPlan& plan,
                  const std::function<RunObserver&(int index)>& observer_for,
                  const std::function<void(RunRecord& record)>& on_record) const;
  int run_repeats(const Scenario& scenario, const RepeatPlan& plan,
                  const std::function<RunObserver&(int index)>& observer_for,
                  const std::function<void(RunRecord& record)>& on_record) const;

 private:
  template <typename S>
  RunRecord run_one(const S& scenario, RunObserver& progress) const;
  template <typename S>
  int repeat(const S& scenario, const RepeatPlan& plan, const std::function<RunObserver&(int index)>& observer_for,
             const std::function<void(RunRecord& record)>& on_record) const;
  RunOptions options_;
};

/// How the ranks of `record` talk: "TCP (Gloo over ADDR)" on the CPU, else NVLink/PCIe from NVML's link count.
std::string describe_interconnect(const RunRecord& record, const std::string& master_addr);

}  // namespace gpubench
