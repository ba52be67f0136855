// The Runner hands any caller the complete record, not only the CLI: telemetry per epoch, the telemetry block and
// drift, with an observer that does nothing but listen.

#include "gpubench/runner/runner.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "common/temp_dir.h"
#include "gpubench/core/scenario/scenario_loader.hpp"

namespace gpubench {
namespace {

struct Listening : RunObserver {
  void on_telemetry(const TelemetryInfo& info, bool active) override {
    reader = info.reader;
    telemetry_active = active;
  }
  void on_epoch(const EpochRecord& e) override { epochs_seen += e.telemetry.has_value() ? 1 : 0; }
  std::string reader;
  bool telemetry_active = false;
  int epochs_seen = 0;
};

TEST(RunnerTest, AnyCallerGetsTelemetryInEveryEpochAndTheTelemetryBlock) {
  testing::TempDir dir("runner");
  std::ofstream(dir / "nvml.txt") << "250000 0 1900 2619 50 90 50 0 300000\n";
  setenv("GPUBENCH_TELEMETRY_READER", "nvml", 1);  // the CPU run is read through the scripted NVML stand-in
  setenv("GPUBENCH_NVML_LIBRARY", GPUBENCH_FAKE_NVML, 1);
  setenv("FAKE_NVML_SCRIPT", (dir / "nvml.txt").c_str(), 1);
  Scenario s;
  ScenarioLoader loader(model_options());
  loader.load_file(std::string(GPUBENCH_TEST_DATA) + "/tiny_resnet.yaml", s);
  loader.apply_override("epochs", "2", "test", s);
  loader.apply_override("dataset_size", "8", "test", s);
  loader.apply_override("telemetry_interval_s", "10ms", "test", s);
  Listening listening;
  const RunRecord r = Runner(RunOptions{}).run(s, listening);
  unsetenv("GPUBENCH_TELEMETRY_READER");
  unsetenv("GPUBENCH_NVML_LIBRARY");
  unsetenv("FAKE_NVML_SCRIPT");
  ASSERT_EQ(r.status, RunStatus::kOk) << r.reason;
  EXPECT_EQ(listening.reader, "nvml");
  EXPECT_TRUE(listening.telemetry_active);
  EXPECT_EQ(listening.epochs_seen, 2) << "the observer sees each epoch with its telemetry already in it";
  EXPECT_EQ(r.telemetry.reader, "nvml");
  EXPECT_EQ(r.telemetry.gpu_uuid, "GPU-fake-0000-1111");
  EXPECT_EQ(r.environment.nvidia_driver_version, "999.99.1");  // NVML's driver, where a CI job looks first
  ASSERT_EQ(r.epochs.size(), 2u);
  for (const auto& e : r.epochs) {
    ASSERT_TRUE(e.telemetry.has_value());
    EXPECT_NEAR(*e.telemetry->power_avg_w, 250.0, 1e-9);  // a time-weighted mean: rounding, not an exact 250
    EXPECT_DOUBLE_EQ(*e.telemetry->power_peak_w, 300.0);
    EXPECT_EQ(e.telemetry->power_peak_source, "instantaneous");
  }
  EXPECT_TRUE(r.summary.energy_j.has_value());
  EXPECT_TRUE(r.summary.sm_clock_drift_pct.has_value());  // two complete epochs with clocks: drift is there
  EXPECT_FALSE(r.distributed.has_value());
}

TEST(RunnerTest, InterconnectIsDescribedFromTheDeviceAndNvml) {
  RunRecord r;
  r.environment.device_type = "cpu";
  EXPECT_EQ(describe_interconnect(r, "10.0.0.1"), "TCP (Gloo over 10.0.0.1)");
  r.environment.device_type = "cuda";
  EXPECT_EQ(describe_interconnect(r, "x"), "unknown (NVML unavailable)");
  r.telemetry.nvlink_active_links = 18;
  EXPECT_EQ(describe_interconnect(r, "x"), "NVLink (18 links active on rank 0's GPU)");
  r.telemetry.nvlink_active_links = 0;
  EXPECT_EQ(describe_interconnect(r, "x"), "PCIe (no NVLink active)");
}

}  // namespace
}  // namespace gpubench
