#include <gtest/gtest.h>

#include "gpubench/core/reference/device_table.hpp"
#include "gpubench/core/record/run_record.hpp"

namespace gpubench {
namespace {

TEST(DeviceTableTest, CompiledInTableHasTheSeedsAndDataCentreDevicesEachWithASource) {
  for (const char* name : {"NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA GeForce RTX 4090",
                           "NVIDIA GeForce RTX 4070 Ti", "NVIDIA GeForce RTX 4070", "NVIDIA GeForce RTX 3080 Ti",
                           "AMD Radeon RX 7900 XTX", "Apple M2 Ultra", "Intel Arc A770"}) {
    const DeviceSpec* d = find_device_spec(name);
    ASSERT_NE(d, nullptr) << name;
    EXPECT_FALSE(d->source.empty()) << name;
    EXPECT_TRUE(d->bf16_tflops || d->fp16_tflops) << name;
    EXPECT_TRUE(d->bandwidth_gbs.has_value()) << name;
  }
  EXPECT_EQ(find_device_spec("nvidia h200"), find_device_spec("NVIDIA H200"));  // case-insensitive
  EXPECT_EQ(find_device_spec("NVIDIA H200 NVL"), nullptr);  // a different part: no silent prefix match
  EXPECT_EQ(find_device_spec(""), nullptr);
  EXPECT_DOUBLE_EQ(*find_device_spec("NVIDIA H200")->peak_tflops("bf16"), 989.4);
  EXPECT_DOUBLE_EQ(*find_device_spec("NVIDIA H200")->peak_tflops("fp32"), 67.0);
  EXPECT_FALSE(find_device_spec("AMD Radeon RX 7900 XTX")->peak_tflops("tf32").has_value());
}

TEST(DeviceTableTest, ParseErrorsNameTheFileLineAndKey) {
  try {
    parse_device_table("devices:\n  - name: X\n    bf16_tflops: fast\n    source: s\n", "mine.yaml");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("mine.yaml:3: key 'bf16_tflops'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_device_table("devices:\n  - name: X\n", "mine.yaml"), std::runtime_error);  // no source
  EXPECT_THROW(parse_device_table("gpus: []\n", "mine.yaml"), std::runtime_error);
}

TEST(DeviceTableTest, MeasuredCeilingsAreReadWithTheirSourceAndNeverWithout) {
  const DeviceSpec* h200 = find_device_spec("NVIDIA H200");
  EXPECT_DOUBLE_EQ(*h200->measured_peak_tflops("bf16"), 776.6);  // info --measure-peak on the H200
  EXPECT_FALSE(h200->measured_peak_tflops("fp8").has_value());
  EXPECT_NE(h200->measured_source.find("--measure-peak"), std::string::npos);
  EXPECT_FALSE(find_device_spec("NVIDIA H100 80GB HBM3")->measured_peak_tflops("bf16").has_value());
  const auto t = parse_device_table("devices:\n  - name: X\n    source: s\n    measured_bf16_tflops: 700\n"
                                    "    measured_source: mine\n",
                                    "mine.yaml");
  EXPECT_DOUBLE_EQ(*t.at(0).measured_peak_tflops("bf16"), 700.0);
  try {
    parse_device_table("devices:\n  - name: X\n    source: s\n    measured_bf16_tflops: 700\n", "mine.yaml");
    FAIL() << "a measured ceiling without its source was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("measured_source"), std::string::npos) << e.what();
  }
}

TEST(ModelFlopUtilisationTest, IsAchievedOverTheDevicePeakForThePrecisionInUse) {
  RunRecord r;
  r.environment.device_name = "NVIDIA H200";
  r.precision.resolved = "bf16";
  r.model.train_flops_per_sample = 24.6e9;  // ResNet-50 at 224 px, 3 x forward
  EpochRecord e;
  e.steps = 100;
  e.samples = 25'600;
  e.seconds = 5.0;
  r.epochs.push_back(e);
  summarize_run(r, {});
  // 5120 img/s x 24.6 GFLOP = 125.952 TFLOP/s; over 989.4 dense bf16.
  EXPECT_NEAR(r.summary.achieved_tflops, 125.952, 1e-9);
  ASSERT_TRUE(r.summary.peak_tflops.has_value());
  EXPECT_DOUBLE_EQ(*r.summary.peak_tflops, 989.4);
  ASSERT_TRUE(r.summary.mfu.has_value());
  EXPECT_NEAR(*r.summary.mfu, 125.952 / 989.4, 1e-12);
  EXPECT_NE(r.summary.peak_source.find("NVIDIA H200 SXM bf16"), std::string::npos) << r.summary.peak_source;

  r.precision.resolved = "fp32";  // the CUDA-core rate, not the tensor-core one
  summarize_run(r, {});
  EXPECT_NEAR(*r.summary.mfu, 125.952 / 67.0, 1e-12);

  r.distributed = DistributedRecord{};
  r.distributed->world_size = 2;  // aggregate throughput of two GPUs against two GPUs' peak
  summarize_run(r, {});
  EXPECT_NEAR(*r.summary.mfu, 125.952 / 67.0 / 2, 1e-12);
  r.distributed.reset();

  r.environment.device_name = "Some Future GPU";  // not in the table: no guess
  summarize_run(r, {});
  EXPECT_FALSE(r.summary.mfu.has_value());
  EXPECT_FALSE(r.summary.peak_tflops.has_value());
}

}  // namespace
}  // namespace gpubench
