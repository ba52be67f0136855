#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unistd.h>

#include <condition_variable>
#include <mutex>

#include "common/temp_dir.h"
#include "gpubench/core/record/telemetry.hpp"
#include "gpubench/telemetry/device_monitor.hpp"
#include "gpubench/telemetry/readers.hpp"

namespace gpubench {
namespace {

namespace fs = std::filesystem;

TelemetrySample at(double t, std::optional<double> power, std::optional<double> energy, uint64_t reasons = 0) {
  TelemetrySample s;
  s.t_s = t;
  s.power_w = power;
  s.energy_j = energy;
  s.sm_clock_mhz = 1980 - t;  // falls 1 MHz per second
  s.temperature_c = 40 + t;
  s.clock_event_reasons = reasons;
  return s;
}

TEST(AggregateEpochTest, KnownAnswersForPowerEnergyClocksAndThrottling) {
  std::vector<TelemetrySample> v;
  for (int i = 0; i <= 10; ++i) v.push_back(at(i, 100.0, 95.0 * i, i < 3 ? 0x4 : 0x0));  // 0x4 = sw_power_cap
  const EpochTelemetry t = aggregate_epoch(v, 0.0, 10.0, /*epoch_samples=*/100);
  EXPECT_EQ(t.samples, 11);
  EXPECT_DOUBLE_EQ(*t.power_avg_w, 100.0);
  EXPECT_DOUBLE_EQ(*t.power_peak_w, 100.0);
  EXPECT_DOUBLE_EQ(*t.energy_integrated_j, 1000.0);
  EXPECT_DOUBLE_EQ(*t.energy_counter_j, 950.0);
  EXPECT_EQ(t.energy_source, "counter");
  EXPECT_DOUBLE_EQ(*t.energy_j, 950.0);
  EXPECT_NEAR(*t.energy_disagreement_pct, 50.0 / 950.0 * 100, 1e-9);
  EXPECT_DOUBLE_EQ(*t.joules_per_sample, 9.5);
  EXPECT_DOUBLE_EQ(*t.sm_clock_avg_mhz, 1975.0);
  EXPECT_DOUBLE_EQ(*t.sm_clock_min_mhz, 1970.0);
  EXPECT_DOUBLE_EQ(*t.temperature_peak_c, 50.0);
  EXPECT_NEAR(t.clock_event_fraction.at("sw_power_cap"), 3.0 / 11.0, 1e-12);
  EXPECT_DOUBLE_EQ(t.clock_event_fraction.at("hw_thermal_slowdown"), 0.0);
  // The samples carry no memory clock or utilisation: counted as missing, everything else was read.
  EXPECT_EQ(t.missing_readings, (std::map<std::string, int64_t>{{"gpu_util_pct", 11}, {"mem_clock_mhz", 11},
                                                                {"mem_util_pct", 11}}));
}

TEST(AggregateEpochTest, IntegratesPowerWhenThereIsNoCounter) {
  std::vector<TelemetrySample> v{at(0, 100, std::nullopt), at(1, 300, std::nullopt), at(2, 300, std::nullopt)};
  const EpochTelemetry t = aggregate_epoch(v, 0.0, 2.0, 10);
  EXPECT_DOUBLE_EQ(*t.power_avg_w, 250.0);  // trapezoid: (200 + 300) / 2
  EXPECT_DOUBLE_EQ(*t.energy_j, 500.0);
  EXPECT_EQ(t.energy_source, "integrated power");
  EXPECT_FALSE(t.energy_disagreement_pct.has_value());
  EXPECT_EQ(t.missing_readings.at("energy_j"), 3);
}

TEST(AggregateEpochTest, CounterResetIsLeftOutAndTheRestScaledToTheEpoch) {
  // 10 J/s, reset to 0 between t=2 and t=3: the three good seconds extrapolate to the 4 s epoch.
  std::vector<TelemetrySample> v{at(0, {}, 100), at(1, {}, 110), at(2, {}, 120), at(3, {}, 0), at(4, {}, 10)};
  const EpochTelemetry t = aggregate_epoch(v, 0.0, 4.0, 1);
  EXPECT_DOUBLE_EQ(*t.energy_counter_j, 40.0);
}

TEST(AggregateEpochTest, OnlyReadingsInsideTheEpochCount) {
  std::vector<TelemetrySample> v{at(0, 500, {}), at(5, 100, {}), at(6, 100, {}), at(20, 500, {})};
  const EpochTelemetry t = aggregate_epoch(v, 4.0, 7.0, 1);
  EXPECT_EQ(t.samples, 2);
  EXPECT_DOUBLE_EQ(*t.power_peak_w, 100.0);
  EXPECT_EQ(aggregate_epoch(v, 30, 40, 1).samples, 0);
}

TEST(TelemetryCsvTest, MissingReadingsAreEmptyCells) {
  TelemetrySample s;
  s.t_s = 1.5;
  s.power_w = 250;
  const std::string csv = samples_to_csv({s});
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "t_s,power_w,power_instant_w,energy_j,sm_clock_mhz,mem_clock_mhz,temperature_c,gpu_util_pct,mem_util_pct,clock_event_reasons");
  EXPECT_NE(csv.find("1.5000,250,,,,,,,,\n"), std::string::npos) << csv;
}

class FakeNvmlTest : public ::testing::Test {
 protected:
  void SetUp() override { setenv("GPUBENCH_NVML_LIBRARY", GPUBENCH_FAKE_NVML, 1); }
  void TearDown() override {
    for (const char* v : {"GPUBENCH_NVML_LIBRARY", "FAKE_NVML_SCRIPT", "FAKE_NVML_PROCESSES", "FAKE_NVML_APP_SM_CLOCK"}) {
      unsetenv(v);
    }
  }
  /// Opens the stand-in with `script` as its readings.
  std::unique_ptr<telemetry::Reader> open_with(const std::string& script) {
    std::ofstream(script_) << script;
    setenv("FAKE_NVML_SCRIPT", script_.c_str(), 1);
    std::string why;
    auto r = telemetry::open_nvml(telemetry::DeviceSelector{"cuda", 0, ""}, &why);
    EXPECT_NE(r, nullptr) << why;
    return r;
  }
  /// `n` readings as a sampler would take them, stamped `dt` seconds apart (no clock, no sleeping).
  static std::vector<TelemetrySample> read_n(telemetry::Reader& r, int n, double dt) {
    std::vector<TelemetrySample> samples;
    for (int i = 0; i < n; ++i) {
      samples.push_back(r.read());
      samples.back().t_s = i * dt;
    }
    return samples;
  }
  testing::TempDir dir_{"fake_nvml"};
  fs::path script_ = dir_ / "script.txt";
};

TEST_F(FakeNvmlTest, ReaderLoadsNvmlByDlopenAndMatchesTheDeviceByBusId) {
  // Each test gets its own process (ctest runs them one by one), so the fake's script is read fresh here.
  std::ofstream(script_) << "350000 1000000 1980 2619 45 97 60 4\n"
                            "360000 1000350 1965 2619 46 98 61 0\n";
  setenv("FAKE_NVML_SCRIPT", script_.c_str(), 1);
  std::string why;
  auto r = telemetry::open_nvml(telemetry::DeviceSelector{"cuda", 3, "00000000:19:00.0"}, &why);
  ASSERT_NE(r, nullptr) << why;
  const TelemetrySample a = r->read();
  EXPECT_DOUBLE_EQ(*a.power_w, 350.0);
  EXPECT_DOUBLE_EQ(*a.energy_j, 1000.0);
  EXPECT_DOUBLE_EQ(*a.sm_clock_mhz, 1980.0);
  EXPECT_DOUBLE_EQ(*a.mem_clock_mhz, 2619.0);
  EXPECT_DOUBLE_EQ(*a.temperature_c, 45.0);
  EXPECT_DOUBLE_EQ(*a.gpu_util_pct, 97.0);
  EXPECT_EQ(*a.clock_event_reasons, 0x4u);
  EXPECT_DOUBLE_EQ(*r->read().power_w, 360.0);
  const TelemetryInfo info = r->info();
  EXPECT_EQ(info.reader, "nvml");
  EXPECT_EQ(info.driver_version, "999.99.1");
  EXPECT_DOUBLE_EQ(*info.power_limit_w, 700.0);
  EXPECT_EQ(info.ecc_enabled, true);
  EXPECT_EQ(info.mig_enabled, false);
  EXPECT_EQ(info.pcie_link_gen, 5);
  EXPECT_EQ(info.pcie_link_width, 16);
}

TEST_F(FakeNvmlTest, UnknownDeviceIsRefusedWithNvmlsReason) {
  std::string why;
  auto r = telemetry::open_nvml(telemetry::DeviceSelector{"cuda", 7, "00000000:aa:00.0"}, &why);
  EXPECT_EQ(r, nullptr);
  EXPECT_NE(why.find("Not Found"), std::string::npos) << why;
}

TEST_F(FakeNvmlTest, ReaderThatStartsFailingMidRunLeavesGapsTheAggregateCounts) {
  auto r = open_with("300000 0 1900 2619 50 90 50 0\n"
                     "300000 30000 1900 2619 50 90 50 0\n"
                     "300000 60000 1900 2619 50 90 50 0\n"
                     "fail\n");
  ASSERT_NE(r, nullptr);
  const EpochTelemetry t = aggregate_epoch(read_n(*r, 6, 1.0), 0.0, 5.0, 1000);
  EXPECT_EQ(t.samples, 6);
  EXPECT_DOUBLE_EQ(*t.power_avg_w, 300.0);  // from the readings that worked
  EXPECT_EQ(t.missing_readings.at("power_w"), 3);
  EXPECT_EQ(t.missing_readings.at("clock_event_reasons"), 3);
}

TEST_F(FakeNvmlTest, PeaksComeFromTheInstantaneousFieldWhereTheDriverHasIt) {
  // Averaged power 300 W throughout; the instantaneous field sees a 650 W spike the average smooths away.
  auto r = open_with("300000 0 1900 2619 50 90 50 0 310000\n"
                     "300000 30000 1900 2619 50 90 50 0 650000\n"
                     "300000 60000 1900 2619 50 90 50 0 290000\n");
  ASSERT_NE(r, nullptr);
  const std::vector<TelemetrySample> samples = read_n(*r, 3, 0.1);
  EXPECT_DOUBLE_EQ(*samples[1].power_instant_w, 650.0);
  const EpochTelemetry t = aggregate_epoch(samples, 0.0, 0.2, 10);
  EXPECT_DOUBLE_EQ(*t.power_avg_w, 300.0);  // the average stays the averaged reading's
  EXPECT_DOUBLE_EQ(*t.power_peak_w, 650.0);
  EXPECT_EQ(t.power_peak_source, "instantaneous");
  const TelemetryInfo info = r->info();
  EXPECT_NE(info.power_instant_source.find("NVML_FI_DEV_POWER_INSTANT"), std::string::npos);
  EXPECT_NE(info.power_average_source.find("average"), std::string::npos);
  EXPECT_EQ(info.energy_counter_source, "nvmlDeviceGetTotalEnergyConsumption");
}

TEST_F(FakeNvmlTest, WithoutTheInstantaneousFieldPeaksAreTheAveragedReadingsAndSaySo) {
  auto r = open_with("300000 0 1900 2619 50 90 50 0\n400000 0 1900 2619 50 90 50 0\n");
  ASSERT_NE(r, nullptr);
  const std::vector<TelemetrySample> samples = read_n(*r, 2, 1.0);
  EXPECT_FALSE(samples[0].power_instant_w.has_value());
  const EpochTelemetry t = aggregate_epoch(samples, 0.0, 1.0, 10);
  EXPECT_DOUBLE_EQ(*t.power_peak_w, 400.0);
  EXPECT_EQ(t.power_peak_source, "averaged");
  EXPECT_TRUE(r->info().power_instant_source.empty());
}

TEST_F(FakeNvmlTest, DeviceIdentityClocksAndOtherProcessesAreRecorded) {
  const std::string self = std::to_string(::getpid());
  setenv("FAKE_NVML_PROCESSES", ("4242:/usr/bin/python3:2147483648," + self + ":gpubench:1024").c_str(), 1);
  std::string why;
  auto r = telemetry::open_nvml(telemetry::DeviceSelector{"cuda", 0, ""}, &why);
  ASSERT_NE(r, nullptr) << why;
  TelemetryInfo info = r->info();
  EXPECT_EQ(info.gpu_uuid, "GPU-fake-0000-1111");
  EXPECT_EQ(info.gpu_serial, "1650000000001");
  EXPECT_EQ(info.vbios_version, "96.00.AB.00.01");
  EXPECT_EQ(info.compute_mode, "default");
  EXPECT_EQ(info.app_sm_clock_mhz, 1980);
  EXPECT_EQ(info.default_app_sm_clock_mhz, 1980);
  EXPECT_EQ(info.max_mem_clock_mhz, 3201);
  EXPECT_EQ(info.clocks_locked, false);
  ASSERT_TRUE(info.other_processes.has_value());
  ASSERT_EQ(info.other_processes->size(), 1u) << "this process itself is not an other process";
  EXPECT_EQ(info.other_processes->front().pid, 4242);
  EXPECT_EQ(info.other_processes->front().name, "/usr/bin/python3");
  EXPECT_EQ(info.other_processes->front().used_memory_bytes, int64_t{2147483648});
  setenv("FAKE_NVML_APP_SM_CLOCK", "1500", 1);  // someone set application clocks
  info = r->info();
  EXPECT_EQ(info.clocks_locked, true);
  EXPECT_NE(info.clocks_locked_evidence.find("application clocks"), std::string::npos);
}

TEST(SamplerTest, SamplesOnAFixedGridWithIncreasingTimes) {
  // The reader signals on every read; nothing depends on how fast this machine is. The 7th read happens after the
  // 6th reading was stored (a reading is stored after its read returns), so waiting for it leaves no race with stop().
  struct Counting : telemetry::Reader {
    std::string name() const override { return "counting"; }
    TelemetrySample read() override {
      TelemetrySample s;
      std::lock_guard<std::mutex> lock(mu);
      s.power_w = ++n;
      cv.notify_all();
      return s;
    }
    TelemetryInfo info() override { return {}; }
    std::mutex mu;
    std::condition_variable cv;
    int n = 0;
  };
  auto reader = std::make_unique<Counting>();
  Counting& counting = *reader;
  const double period = 0.01;
  telemetry::Sampler sampler(std::move(reader), period);
  sampler.start();
  {
    std::unique_lock<std::mutex> lock(counting.mu);
    ASSERT_TRUE(counting.cv.wait_for(lock, std::chrono::seconds(60), [&] { return counting.n >= 7; }));
  }
  sampler.stop();
  const auto s = sampler.samples();
  ASSERT_GE(s.size(), 6u);
  for (size_t i = 1; i < s.size(); ++i) {
    EXPECT_GT(s[i].t_s, s[i - 1].t_s);
    EXPECT_DOUBLE_EQ(*s[i].power_w, *s[i - 1].power_w + 1);  // every reading kept, in order
    // A fixed grid: reading i is never taken before i periods after the first (slow reads do not stretch it,
    // and it never runs early).
    EXPECT_GE(s[i].t_s - s[0].t_s, static_cast<double>(i) * period * 0.999);
  }
}

TEST(CombineDevicesTest, AJobsEnergyAndPowerAreTheSumOfItsGpus) {
  EpochTelemetry a, b;
  a.samples = 10;
  a.power_avg_w = 500;
  a.power_peak_w = 600;
  a.power_peak_source = "instantaneous";
  a.energy_j = 5000;
  a.energy_counter_j = 5000;
  a.energy_integrated_j = 5100;
  a.energy_source = "counter";
  a.sm_clock_avg_mhz = 1900;
  a.sm_clock_min_mhz = 1800;
  a.temperature_peak_c = 60;
  a.clock_event_fraction = {{"sw_power_cap", 0.5}};
  b = a;
  b.power_avg_w = 300;
  b.power_peak_w = 350;
  b.energy_j = b.energy_counter_j = 3000;
  b.energy_integrated_j = 3000;
  b.sm_clock_avg_mhz = 1700;
  b.sm_clock_min_mhz = 1600;
  b.temperature_peak_c = 70;
  b.clock_event_fraction = {{"sw_power_cap", 0.0}};
  const EpochTelemetry job = combine_devices({a, b}, 1000);  // 1000 samples over both ranks
  EXPECT_EQ(job.devices, 2);
  EXPECT_EQ(job.samples, 20);
  EXPECT_DOUBLE_EQ(*job.power_avg_w, 800.0);
  EXPECT_DOUBLE_EQ(*job.power_peak_w, 950.0);
  EXPECT_DOUBLE_EQ(*job.energy_j, 8000.0);
  EXPECT_DOUBLE_EQ(*job.joules_per_sample, 8.0);
  EXPECT_NEAR(*job.energy_disagreement_pct, 100.0 / 8000.0 * 100.0, 1e-9);
  EXPECT_EQ(job.energy_source, "counter");
  EXPECT_DOUBLE_EQ(*job.sm_clock_avg_mhz, 1800.0);
  EXPECT_DOUBLE_EQ(*job.sm_clock_min_mhz, 1600.0);
  EXPECT_DOUBLE_EQ(*job.temperature_peak_c, 70.0);
  EXPECT_DOUBLE_EQ(job.clock_event_fraction.at("sw_power_cap"), 0.25);
  // A GPU without an energy figure leaves the job's total unknown rather than too low.
  b.energy_j.reset();
  EXPECT_FALSE(combine_devices({a, b}, 1000).energy_j.has_value());
  EXPECT_FALSE(combine_devices({a, b}, 1000).joules_per_sample.has_value());
}

TEST(ClocksLockedTest, TheLockedClocksReasonInMostReadingsMeansPinnedClocks) {
  TelemetryInfo info;
  EpochTelemetry e;
  e.clock_event_fraction = {{"applications_clocks", 0.2}};
  infer_clocks_locked(info, {e});
  EXPECT_FALSE(info.clocks_locked.has_value());
  e.clock_event_fraction["applications_clocks"] = 0.9;
  info.clocks_locked = false;  // application clocks at their defaults: `nvidia-smi -lgc` shows only in the reasons
  infer_clocks_locked(info, {e});
  EXPECT_EQ(info.clocks_locked, true);
  EXPECT_NE(info.clocks_locked_evidence.find("90%"), std::string::npos) << info.clocks_locked_evidence;
}

class FakePowercapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* zone : {"intel-rapl:0", "intel-rapl:1", "intel-rapl:0:0"}) {
      fs::create_directories(root_ / zone);
      write(zone, "energy_uj", 1'000'000);
      write(zone, "max_energy_range_uj", 10'000'000);
    }
    setenv("GPUBENCH_POWERCAP_ROOT", root_.c_str(), 1);
  }
  void TearDown() override { unsetenv("GPUBENCH_POWERCAP_ROOT"); }
  void write(const std::string& zone, const std::string& file, uint64_t v) { std::ofstream(root_ / zone / file) << v; }
  testing::TempDir dir_{"fake_powercap"};
  fs::path root_ = dir_.path();
};

TEST_F(FakePowercapTest, SumsPackagesAndUnwrapsTheCounter) {
  std::string why;
  auto r = telemetry::open_rapl(&why);
  ASSERT_NE(r, nullptr) << why;
  EXPECT_DOUBLE_EQ(*r->read().energy_j, 0.0);
  write("intel-rapl:0", "energy_uj", 3'000'000);      // +2 J
  write("intel-rapl:1", "energy_uj", 500'000);        // wrapped: +9.5 J
  write("intel-rapl:0:0", "energy_uj", 9'000'000);    // a sub-zone of package 0: not counted again
  EXPECT_DOUBLE_EQ(*r->read().energy_j, 11.5);
}

TEST_F(FakePowercapTest, UnreadableCounterIsReportedNotGuessed) {
  fs::remove_all(root_);
  std::string why;
  EXPECT_EQ(telemetry::open_rapl(&why), nullptr);
  EXPECT_NE(why.find("no intel-rapl packages"), std::string::npos) << why;
}

TEST(ReaderChoiceTest, MissingLibrariesAndAppleSayWhy) {
  setenv("GPUBENCH_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  std::string why;
  EXPECT_EQ(telemetry::open_reader(telemetry::DeviceSelector{"cuda", 0, ""}, &why), nullptr);
  EXPECT_NE(why.find("not loadable"), std::string::npos) << why;
  unsetenv("GPUBENCH_NVML_LIBRARY");
  EXPECT_EQ(telemetry::open_reader(telemetry::DeviceSelector{"mps", 0, ""}, &why), nullptr);
  EXPECT_NE(why.find("Apple"), std::string::npos) << why;
}

TEST(ReaderChoiceTest, TheReaderCanBeForcedOrSwitchedOffByName) {
  setenv("GPUBENCH_TELEMETRY_READER", "none", 1);
  telemetry::DeviceMonitor off("cuda:0", "", true, 0.1);
  EXPECT_FALSE(off.active());
  EXPECT_NE(off.info().reason.find("GPUBENCH_TELEMETRY_READER=none"), std::string::npos) << off.info().reason;
  setenv("GPUBENCH_TELEMETRY_READER", "nvml", 1);
  setenv("GPUBENCH_NVML_LIBRARY", GPUBENCH_FAKE_NVML, 1);
  telemetry::DeviceMonitor forced("cpu", "", true, 0.1);  // a CPU run read through NVML, as the tests' ranks are
  EXPECT_TRUE(forced.active());
  EXPECT_EQ(forced.info().reader, "nvml");
  setenv("GPUBENCH_TELEMETRY_READER", "bogus", 1);
  telemetry::DeviceMonitor bogus("cuda:0", "", true, 0.1);
  EXPECT_NE(bogus.info().reason.find("not one of"), std::string::npos) << bogus.info().reason;
  unsetenv("GPUBENCH_TELEMETRY_READER");
  unsetenv("GPUBENCH_NVML_LIBRARY");
  telemetry::DeviceMonitor disabled("cuda:0", "", false, 0.1);
  EXPECT_NE(disabled.info().reason.find("switched off"), std::string::npos);
}

}  // namespace
}  // namespace gpubench
