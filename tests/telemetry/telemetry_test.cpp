#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "gpubench/core/telemetry.hpp"
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
            "t_s,power_w,energy_j,sm_clock_mhz,mem_clock_mhz,temperature_c,gpu_util_pct,mem_util_pct,clock_event_reasons");
  EXPECT_NE(csv.find("1.5000,250,,,,,,,\n"), std::string::npos) << csv;
}

class FakeNvmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    script_ = fs::temp_directory_path() / "gpubench_fake_nvml_script.txt";
    setenv("GPUBENCH_NVML_LIBRARY", GPUBENCH_FAKE_NVML, 1);
  }
  void TearDown() override {
    unsetenv("GPUBENCH_NVML_LIBRARY");
    unsetenv("FAKE_NVML_SCRIPT");
    fs::remove(script_);
  }
  fs::path script_;
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
  std::ofstream(script_) << "300000 0 1900 2619 50 90 50 0\n"
                            "300000 30000 1900 2619 50 90 50 0\n"
                            "300000 60000 1900 2619 50 90 50 0\n"
                            "fail\n";
  setenv("FAKE_NVML_SCRIPT", script_.c_str(), 1);
  std::string why;
  auto r = telemetry::open_nvml(telemetry::DeviceSelector{"cuda", 0, ""}, &why);
  ASSERT_NE(r, nullptr) << why;
  telemetry::Sampler sampler(std::move(r), 0.01);
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  sampler.stop();
  const auto samples = sampler.samples();
  ASSERT_GE(samples.size(), 5u);
  const EpochTelemetry t = aggregate_epoch(samples, 0.0, samples.back().t_s, 1000);
  EXPECT_DOUBLE_EQ(*t.power_avg_w, 300.0);  // from the readings that worked
  EXPECT_EQ(t.missing_readings.at("power_w"), t.samples - 3);
  EXPECT_EQ(t.missing_readings.at("clock_event_reasons"), t.samples - 3);
}

TEST(SamplerTest, SamplesOnAFixedPeriodWithIncreasingTimes) {
  struct Counting : telemetry::Reader {
    std::string name() const override { return "counting"; }
    TelemetrySample read() override {
      TelemetrySample s;
      s.power_w = ++n;
      return s;
    }
    TelemetryInfo info() override { return {}; }
    int n = 0;
  };
  telemetry::Sampler sampler(std::make_unique<Counting>(), 0.02);
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(210));
  sampler.stop();
  const auto s = sampler.samples();
  EXPECT_GE(s.size(), 8u);
  EXPECT_LE(s.size(), 13u);
  for (size_t i = 1; i < s.size(); ++i) EXPECT_GT(s[i].t_s, s[i - 1].t_s);
}

class FakePowercapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / "gpubench_fake_powercap";
    fs::remove_all(root_);
    for (const char* zone : {"intel-rapl:0", "intel-rapl:1", "intel-rapl:0:0"}) {
      fs::create_directories(root_ / zone);
      write(zone, "energy_uj", 1'000'000);
      write(zone, "max_energy_range_uj", 10'000'000);
    }
    setenv("GPUBENCH_POWERCAP_ROOT", root_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("GPUBENCH_POWERCAP_ROOT");
    fs::remove_all(root_);
  }
  void write(const std::string& zone, const std::string& file, uint64_t v) { std::ofstream(root_ / zone / file) << v; }
  fs::path root_;
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

}  // namespace
}  // namespace gpubench
