#include "gpubench/runner/runner.hpp"

#include <chrono>
#include <memory>
#include <thread>

#include "gpubench/core/analysis/bottleneck.hpp"
#include "gpubench/telemetry/device_monitor.hpp"

namespace gpubench {

namespace {

/// Passes every event on to the front end's observer, and samples the device between them.
class MonitoringObserver final : public RunObserver {
 public:
  explicit MonitoringObserver(RunObserver& progress) : progress_(progress) {}

  void on_start(const RunRecord& header) override {
    progress_.on_start(header);
    monitor_ = std::make_unique<telemetry::DeviceMonitor>(header.environment.device, header.environment.pci_bus_id,
                                                          header.scenario.telemetry,
                                                          header.scenario.telemetry_interval_s);
    trace_path_ = header.scenario.telemetry_trace;
    progress_.on_telemetry(monitor_->info(), monitor_->active());
  }
  void on_note(const std::string& message) override { progress_.on_note(message); }
  void on_phase(const std::string& phase) override { progress_.on_phase(phase); }
  void on_epoch_begin(int64_t index) override {
    if (monitor_) monitor_->begin_epoch();
    progress_.on_epoch_begin(index);
  }
  void on_step(const StepProgress& p) override { progress_.on_step(p); }
  std::optional<EpochTelemetry> on_epoch_end(int64_t, int64_t samples) override {
    return monitor_ ? monitor_->end_epoch(samples) : std::nullopt;
  }
  void on_epoch(const EpochRecord& epoch) override { progress_.on_epoch(epoch); }

  /// Stops sampling and adds the telemetry block (with locked-clock evidence from the epochs) to `record`; writes
  /// the raw-sample trace when the scenario asks for one.
  void complete(RunRecord& record) {
    if (!monitor_) {  // the run never started (e.g. no device): say so
      record.telemetry = TelemetryInfo{};
      record.telemetry.reader = "none";
      record.telemetry.reason = "the run did not start";
      return;
    }
    std::string error;
    if (!monitor_->finish(trace_path_, &error)) {
      const std::string note = "could not write the telemetry trace: " + error;
      record.notes.push_back(note);
      progress_.on_note(note);
    }
    record.telemetry = monitor_->info();
    std::vector<EpochTelemetry> epochs;
    for (const auto& e : record.epochs) {
      if (e.telemetry) epochs.push_back(*e.telemetry);
    }
    infer_clocks_locked(record.telemetry, epochs);
  }

 private:
  RunObserver& progress_;
  std::unique_ptr<telemetry::DeviceMonitor> monitor_;
  std::string trace_path_;
};

}  // namespace

std::string describe_interconnect(const RunRecord& record, const std::string& master_addr) {
  const auto& links = record.telemetry.nvlink_active_links;
  if (record.environment.device_type == "cpu") return "TCP (Gloo over " + master_addr + ")";
  if (links && *links > 0) return "NVLink (" + std::to_string(*links) + " links active on rank 0's GPU)";
  if (links) return "PCIe (no NVLink active)";
  return "unknown (NVML unavailable)";
}

Runner::Runner(RunOptions options) : options_(std::move(options)) {}

template <typename S>
RunRecord Runner::run_one(const S& scenario, RunObserver& progress) const {
  MonitoringObserver monitoring(progress);
  RunRecord record = run_benchmark(scenario, monitoring, options_);
  monitoring.complete(record);
  // The NVIDIA driver is NVML's to tell; a CI job comparing drivers finds it in environment, beside the CUDA versions.
  if (record.environment.nvidia_driver_version.empty()) {
    record.environment.nvidia_driver_version = record.telemetry.driver_version;
  }
  if (record.distributed) record.distributed->interconnect = describe_interconnect(record, options_.rank.master_addr);
  set_bottleneck(record);  // all the evidence is in: telemetry came last
  return record;  // drift was computed with the summary: the engine puts each epoch's telemetry in as it ends
}

RunRecord Runner::run(const ResolvedScenario& scenario, RunObserver& progress) const {
  return run_one(scenario, progress);
}
RunRecord Runner::run(const Scenario& scenario, RunObserver& progress) const { return run_one(scenario, progress); }

int Runner::run_repeats(const ResolvedScenario& scenario, const RepeatPlan& plan,
                        const std::function<RunObserver&(int index)>& observer_for,
                        const std::function<void(RunRecord& record)>& on_record) const {
  return repeat(scenario, plan, observer_for, on_record);
}
int Runner::run_repeats(const Scenario& scenario, const RepeatPlan& plan,
                        const std::function<RunObserver&(int index)>& observer_for,
                        const std::function<void(RunRecord& record)>& on_record) const {
  return repeat(scenario, plan, observer_for, on_record);
}

template <typename S>
int Runner::repeat(const S& scenario, const RepeatPlan& plan, const std::function<RunObserver&(int index)>& observer_for,
                   const std::function<void(RunRecord& record)>& on_record) const {
  auto stopping = [this] { return options_.stop_requested != nullptr && options_.stop_requested->load(); };
  int done = 0;
  for (int i = 1; i <= plan.count && !stopping(); ++i) {
    RunObserver& observer = observer_for(i);
    RunRecord record = run_one(scenario, observer);
    record.repeat_index = i;
    record.repeat_count = plan.count;
    on_record(record);
    ++done;
    if (i < plan.count && plan.cooldown_s > 0) {
      if (!stopping()) observer.on_phase("cooling down for " + std::to_string(static_cast<int64_t>(plan.cooldown_s)) + " s");
      const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(plan.cooldown_s);
      while (std::chrono::steady_clock::now() < until && !stopping()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  }
  return done;
}

}  // namespace gpubench
