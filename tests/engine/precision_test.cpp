#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <limits>

#include "precision.h"

namespace gpubench::engine {
namespace {

ResolvedDevice cpu() { return ResolvedDevice{c10::Device(c10::kCPU), "cpu", "cpu"}; }

TEST(PrecisionPlanTest, EachNameMeansWhatItSays) {
  EXPECT_FALSE(resolve_precision("fp32", cpu()).autocast.has_value());
  EXPECT_FALSE(resolve_precision("fp32", cpu()).tf32);
  EXPECT_TRUE(resolve_precision("tf32", cpu()).tf32);
  EXPECT_EQ(resolve_precision("bf16", cpu()).autocast, at::kBFloat16);
  const PrecisionPlan fp16 = resolve_precision("fp16", cpu());
  EXPECT_EQ(fp16.autocast, at::kHalf);
  EXPECT_TRUE(fp16.loss_scaling);
}

TEST(PrecisionPlanTest, AmpOnTheCpuIsBf16AndSaysSo) {
  const PrecisionPlan p = resolve_precision("amp", cpu());
  EXPECT_EQ(p.resolved, "bf16");
  EXPECT_FALSE(p.note.empty());
  EXPECT_EQ(to_record(p, "contiguous").autocast_dtype, "bfloat16");
}

TEST(PrecisionPlanTest, AmpOnGpusIsFp16WithLossScalingAsInPyTorch) {
  // torch.autocast("cuda") defaults to float16 and torch.cuda.amp pairs it with a GradScaler, on every compute
  // capability (Hopper included); ROCm presents as CUDA; MPS autocast is float16 too.
  for (const auto& [type, index] : std::vector<std::pair<std::string, int>>{{"cuda", 0}, {"rocm", 1}}) {
    const PrecisionPlan p = resolve_precision("amp", ResolvedDevice{c10::Device(c10::kCUDA, index), type + ":0", type});
    EXPECT_EQ(p.resolved, "fp16") << type;
    EXPECT_EQ(p.autocast, at::kHalf) << type;
    EXPECT_TRUE(p.loss_scaling) << type;
    const PrecisionRecord r = to_record(p, "channels_last");
    EXPECT_EQ(r.requested, "amp");
    EXPECT_EQ(r.autocast_dtype, "float16");
    EXPECT_NE(r.resolution.find("loss scaling"), std::string::npos) << r.resolution;
  }
  EXPECT_EQ(resolve_precision("amp", ResolvedDevice{c10::Device(c10::kMPS), "mps", "mps"}).resolved, "fp16");
  // An explicit bf16 stays bf16 and needs no explanation.
  const PrecisionPlan bf16 = resolve_precision("bf16", ResolvedDevice{c10::Device(c10::kCUDA, 0), "cuda:0", "cuda"});
  EXPECT_EQ(bf16.resolved, "bf16");
  EXPECT_FALSE(bf16.loss_scaling);
  EXPECT_TRUE(to_record(bf16, "contiguous").resolution.empty());
}

TEST(AutocastScopeTest, EnablesInsideAndRestoresOutside) {
  ASSERT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
  {
    AutocastScope scope(at::kCPU, at::kBFloat16);
    EXPECT_TRUE(at::autocast::is_autocast_enabled(at::kCPU));
    const auto y = torch::mm(torch::randn({4, 4}), torch::randn({4, 4}));
    EXPECT_EQ(y.scalar_type(), at::kBFloat16);
  }
  EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
  EXPECT_EQ(torch::mm(torch::randn({4, 4}), torch::randn({4, 4})).scalar_type(), at::kFloat);
}

TEST(LossScalerTest, InfGradientIsDetectedAndTheScaleBacksOff) {
  LossScaler scaler(c10::Device(c10::kCPU));
  auto p = torch::zeros({3}, torch::requires_grad());
  p.mutable_grad() = torch::tensor({1.0f, std::numeric_limits<float>::infinity(), 2.0f});
  const auto found_inf = scaler.unscale({p});
  EXPECT_EQ(found_inf.item<float>(), 1.0f);
  scaler.update(found_inf);
  EXPECT_DOUBLE_EQ(scaler.current_scale(), 32768.0);
}

TEST(LossScalerTest, CleanGradientsAreUnscaled) {
  LossScaler scaler(c10::Device(c10::kCPU), 1024.0);
  auto p = torch::zeros({2}, torch::requires_grad());
  p.mutable_grad() = torch::tensor({1024.0f, 2048.0f});
  const auto found_inf = scaler.unscale({p});
  EXPECT_EQ(found_inf.item<float>(), 0.0f);
  EXPECT_TRUE(torch::allclose(p.grad(), torch::tensor({1.0f, 2.0f})));
  scaler.update(found_inf);
  EXPECT_DOUBLE_EQ(scaler.current_scale(), 1024.0);  // grows only after `interval` clean steps
}

TEST(LossScalerTest, ScaleGrowsAfterTheIntervalOfCleanSteps) {
  LossScaler scaler(c10::Device(c10::kCPU), 8.0, 2.0, 0.5, /*interval=*/3);
  auto p = torch::zeros({1}, torch::requires_grad());
  for (int i = 0; i < 3; ++i) {
    p.mutable_grad() = torch::ones({1});
    scaler.update(scaler.unscale({p}));
  }
  EXPECT_DOUBLE_EQ(scaler.current_scale(), 16.0);
}

TEST(LossScalerTest, UnscalesOnTheGpu_CUDA) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  LossScaler scaler(c10::Device(c10::kCUDA, 0), 4.0);
  auto p = torch::zeros({2}, torch::TensorOptions().device(torch::kCUDA).requires_grad(true));
  p.mutable_grad() = torch::full({2}, 8.0f, torch::TensorOptions().device(torch::kCUDA));
  const auto found_inf = scaler.unscale({p});
  EXPECT_EQ(found_inf.item<float>(), 0.0f);
  EXPECT_TRUE(torch::allclose(p.grad().cpu(), torch::full({2}, 2.0f)));
}

}  // namespace
}  // namespace gpubench::engine
