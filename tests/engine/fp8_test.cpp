// FP8 training's building blocks (engine/fp8.h) on the CPU (ATen's CPU _scaled_mm runs the same products): scales
// from amax, saturation, the casts' round-trip error, delayed scaling's history, the layer-selection rule, the device
// refusal, and the FP8 linear layer's output and gradients against the bf16/fp32 one.

#include <gtest/gtest.h>

#include <torch/cuda.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <iostream>

#include "checkpoint.h"
#include "cuda_graph.h"
#include "device.h"
#include "fp8.h"
#ifdef GPUBENCH_WITH_CUDA
#include <c10/cuda/CUDAStream.h>

#include "cuda/fused_kernels.h"
#endif
#include "gpubench/engine/engine.hpp"
#include "models/decoder.h"
#include "models/layers.h"
#include "models/registry.h"
#include "optimizers.h"
#include "precision.h"

namespace gpubench::engine {
namespace {

using fp8::Format;

TEST(Fp8Test, ScalesMapTheAmaxOntoTheFormatsLargestValueAndNeverInf) {
  const at::Tensor s = fp8::scale_from_amax(torch::tensor({2.0f}), Format::kE4M3);
  EXPECT_FLOAT_EQ(s.item<float>(), 224.0f);  // 448 / 2
  EXPECT_FLOAT_EQ(fp8::scale_from_amax(torch::tensor(4.0f), Format::kE5M2).item<float>(), 14336.0f);
  // an all-zero tensor, and a non-finite amax: scale 1, not inf or NaN
  EXPECT_FLOAT_EQ(fp8::scale_from_amax(torch::tensor(0.0f), Format::kE4M3).item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(fp8::scale_from_amax(torch::tensor(INFINITY), Format::kE4M3).item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(fp8::scale_from_amax(torch::tensor(NAN), Format::kE4M3).item<float>(), 1.0f);
  // amax per tensor and per row
  const at::Tensor x = torch::tensor({{1.0f, -3.0f}, {0.5f, 2.0f}});
  EXPECT_FLOAT_EQ(fp8::amax(x, false).item<float>(), 3.0f);
  EXPECT_TRUE(at::equal(fp8::amax(x, true), torch::tensor({{3.0f}, {2.0f}})));
}

TEST(Fp8Test, CastsSaturateAtTheFormatsMaximumAndRoundTripWithinItsPrecision) {
  // A plain cast of 1000 to e4m3 is NaN up to LibTorch 2.14 (the format has no inf); 2.15's CPU cast saturates.
  // quantize clamps to +-448 first, so every version gives the same bytes.
  const at::Tensor big = torch::tensor({1000.0f, -1000.0f, 3.0f});
  const at::Tensor plain = big.to(at::kFloat8_e4m3fn).to(at::kFloat);
  EXPECT_TRUE(at::isnan(plain[0]).item<bool>() || plain[0].item<float>() == 448.0f) << plain;
  const fp8::Quantized q = fp8::quantize(big, Format::kE4M3, torch::tensor(1.0f));
  const at::Tensor back = q.data.to(at::kFloat);
  EXPECT_FALSE(at::isnan(back).any().item<bool>());
  EXPECT_FLOAT_EQ(back[0].item<float>(), 448.0f);
  EXPECT_FLOAT_EQ(back[1].item<float>(), -448.0f);
  const fp8::Quantized q5 = fp8::quantize(torch::tensor({1e6f}), Format::kE5M2, torch::tensor(1.0f));
  EXPECT_FLOAT_EQ(q5.data.to(at::kFloat).item<float>(), 57344.0f);
  // Round trip at the amax scale: relative error within half an ulp of the format (3 mantissa bits: 2^-4; e5m2's 2:
  // 2^-3), for values in the normal range.
  torch::manual_seed(1);
  const at::Tensor x = torch::randn({4096}) * 3.0;
  for (const Format f : {Format::kE4M3, Format::kE5M2}) {
    const at::Tensor scale = fp8::scale_from_amax(fp8::amax(x, false), f);
    const fp8::Quantized qx = fp8::quantize(x, f, scale);
    const at::Tensor rt = qx.data.to(at::kFloat) * qx.inv_scale;
    const at::Tensor normal = x.abs() * scale > (f == Format::kE4M3 ? 0.016 : 6.2e-5);
    const double rel = ((rt - x).abs() / x.abs()).masked_select(normal).max().item<double>();
    EXPECT_LE(rel, f == Format::kE4M3 ? 0.0625 + 1e-6 : 0.125 + 1e-6) << fp8::name(f);
    EXPECT_LE(rt.abs().max().item<double>(), x.abs().max().item<double>() * (1 + 1e-6)) << "the amax maps to max";
  }
}

TEST(Fp8Test, DelayedScalingTakesTheLargestAmaxOfItsHistory) {
  fp8::AmaxHistory h(3);
  EXPECT_FLOAT_EQ(h.push_and_scale(torch::tensor(2.0f), Format::kE4M3).item<float>(), 224.0f);
  EXPECT_FLOAT_EQ(h.push_and_scale(torch::tensor(1.0f), Format::kE4M3).item<float>(), 224.0f) << "2 is still in it";
  EXPECT_FLOAT_EQ(h.push_and_scale(torch::tensor(0.5f), Format::kE4M3).item<float>(), 224.0f);
  EXPECT_FLOAT_EQ(h.push_and_scale(torch::tensor(1.0f), Format::kE4M3).item<float>(), 448.0f) << "2 has left it";
  EXPECT_EQ(h.values().numel(), 3);
  EXPECT_THROW(fp8::AmaxHistory(0), std::invalid_argument);
}

TEST(Fp8Test, TheLayerRuleConvertsMultiplesOfSixteenAndLeavesTheHeads) {
  const std::vector<fp8::LinearLayer> layers{{"layers.0.q_proj", 2048, 2048}, {"layers.0.odd", 2048, 100},
                                             {"lm_head", 2048, 32000}, {"classifier", 768, 2}};
  fp8::Recipe r;
  const fp8::Selection s = fp8::select(layers, r);
  EXPECT_EQ(s.converted, std::vector<std::string>{"layers.0.q_proj"});
  ASSERT_EQ(s.kept.size(), 3u);
  EXPECT_NE(s.kept[0].find("not multiples of 16"), std::string::npos) << s.kept[0];
  EXPECT_NE(s.kept[1].find("fp8_lm_head"), std::string::npos) << s.kept[1];
  r.include_lm_head = true;
  EXPECT_EQ(fp8::select(layers, r).converted, (std::vector<std::string>{"layers.0.q_proj", "lm_head"}));
  r.include_classifier = true;  // 768 x 2 is still not eligible
  EXPECT_EQ(fp8::select(layers, r).converted.size(), 2u);
}

TEST(Fp8Test, DevicesWithoutFp8TensorCoresAreNamedWithTheirCapability) {
  EXPECT_FALSE(fp8::unsupported("cuda", "NVIDIA H200", 90).has_value());
  EXPECT_FALSE(fp8::unsupported("cuda", "NVIDIA GeForce RTX 4090", 89).has_value());
  const auto a100 = fp8::unsupported("cuda", "NVIDIA A100-SXM4-80GB", 80);
  ASSERT_TRUE(a100.has_value());
  EXPECT_NE(a100->find("NVIDIA A100-SXM4-80GB is compute capability 8.0"), std::string::npos) << *a100;
  const auto cpu = fp8::unsupported("cpu", "", 0);
  ASSERT_TRUE(cpu.has_value());
  EXPECT_NE(cpu->find("the CPU has none"), std::string::npos) << *cpu;
  EXPECT_TRUE(fp8::unsupported("mps", "Apple M2", 0).has_value());
  EXPECT_EQ(fp8::parse_format("e5m2"), Format::kE5M2);
  EXPECT_FALSE(fp8::parse_format("e3m4").has_value());
  EXPECT_EQ(fp8::parse_scaling("delayed"), fp8::Scaling::kDelayed);
}

double rel_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kFloat) - b.to(at::kFloat)).norm().item<double>() / (b.to(at::kFloat).norm().item<double>() + 1e-12);
}

/// The FP8 layer against the same layer in fp32: output and the three gradients within FP8's error (relative
/// Frobenius norm), for each scaling; `tokens` 24 is not a multiple of 16 (the weight gradient's fallback).
void check_linear(fp8::Scaling scaling, Format grad, int64_t tokens, std::optional<at::ScalarType> autocast,
                  const at::Device& device = at::kCPU) {
  torch::manual_seed(3);
  const auto f = torch::TensorOptions().device(device);
  const at::Tensor x0 = torch::randn({2, tokens, 64}, f), w0 = torch::randn({48, 64}, f) * 0.1,
                   b0 = torch::randn({48}, f);
  at::Tensor x1 = x0.clone().requires_grad_(true), w1 = w0.clone().requires_grad_(true),
             b1 = b0.clone().requires_grad_(true);
  at::Tensor x2 = x0.clone().requires_grad_(true), w2 = w0.clone().requires_grad_(true),
             b2 = b0.clone().requires_grad_(true);
  fp8::Recipe r;
  r.scaling = scaling;
  r.grad_format = grad;
  fp8::LinearState state(4);
  at::Tensor y;
  {
    AutocastScope scope(device.type(), autocast);
    y = fp8::linear(x1, w1, b1, r, &state);
  }
  const at::Tensor ref = at::linear(x2, w2, b2);
  ASSERT_EQ(y.sizes(), ref.sizes());
  EXPECT_EQ(y.scalar_type(), autocast.value_or(at::kFloat));
  const std::string what = fp8::name(scaling) + " " + fp8::name(grad) + " tokens " + std::to_string(tokens);
  EXPECT_LT(rel_diff(y, ref), 0.05) << what;
  const at::Tensor d = torch::randn(ref.sizes(), f);
  (y.to(at::kFloat) * d).sum().backward();
  (ref * d).sum().backward();
  const double tol = grad == Format::kE5M2 ? 0.12 : 0.06;
  EXPECT_LT(rel_diff(x1.grad(), x2.grad()), tol) << what;
  EXPECT_LT(rel_diff(w1.grad(), w2.grad()), tol) << what;
  // The bias gradient is the incoming gradient's sum: exact in fp32, within bf16's rounding of it under autocast.
  EXPECT_LT(rel_diff(b1.grad(), b2.grad()), autocast ? 1e-2 : 1e-5) << what;
  EXPECT_EQ(w1.grad().scalar_type(), at::kFloat);
  EXPECT_TRUE(at::isfinite(x1.grad()).all().item<bool>());
}

TEST(Fp8Test, TheFp8LinearLayerMatchesTheFullPrecisionOneWithinFp8Error) {
  for (const auto scaling : {fp8::Scaling::kTensor, fp8::Scaling::kRowwise, fp8::Scaling::kDelayed}) {
    for (const Format g : {Format::kE5M2, Format::kE4M3}) check_linear(scaling, g, 32, std::nullopt);
  }
  check_linear(fp8::Scaling::kTensor, Format::kE5M2, 32, at::kBFloat16);  // under autocast: bf16 out
  check_linear(fp8::Scaling::kTensor, Format::kE5M2, 12, std::nullopt);   // 24 tokens: dW from dequantised operands
  fp8::Recipe r;
  EXPECT_THROW(fp8::linear(torch::randn({4, 60}), torch::randn({48, 60}), {}, r), std::invalid_argument);
  r.scaling = fp8::Scaling::kDelayed;
  EXPECT_THROW(fp8::linear(torch::randn({4, 64}), torch::randn({48, 64}), {}, r), std::invalid_argument)
      << "delayed scaling without its history";
}

TEST(Fp8Test, LayersReadingOneInputShareItsQuantisationAndAWeightIsQuantisedOncePerUpdate) {
  torch::manual_seed(5);
  at::Tensor x = torch::randn({32, 64});
  const at::Tensor w1 = torch::randn({48, 64}) * 0.1, w2 = torch::randn({64, 64}) * 0.1;
  const fp8::Recipe r;
  fp8::InputMemo memo;
  fp8::LinearState s1(4), s2(4);
  const at::Tensor y1 = fp8::linear(x, w1, {}, r, &s1, &memo);
  ASSERT_TRUE(memo.q.data.defined());
  const void* shared = memo.q.data.data_ptr();
  const at::Tensor y2 = fp8::linear(x, w2, {}, r, &s2, &memo);  // q, k and v read one normalised input
  EXPECT_EQ(memo.q.data.data_ptr(), shared) << "the second layer reused the first one's FP8 input";
  EXPECT_TRUE(at::equal(y2, fp8::linear(x, w2, {}, r))) << "sharing changes no value";
  {
    const at::NoGradGuard no_grad;
    x.add_(1.0);  // the same tensor, new values: its version moves on
  }
  const at::Tensor y3 = fp8::linear(x, w2, {}, r, &s2, &memo);
  EXPECT_NE(memo.q.data.data_ptr(), shared);
  EXPECT_TRUE(at::equal(y3, fp8::linear(x, w2, {}, r))) << "a changed input is quantised again";
  // The weight: kept while unchanged, quantised again after every optimizer update, for each optimizer gpubench has.
  const void* cached = s1.weight.q.data.data_ptr();
  fp8::linear(x, w1, {}, r, &s1);
  EXPECT_EQ(s1.weight.q.data.data_ptr(), cached) << "an unchanged weight is not quantised again";
  for (const std::string kind : {"foreach-sgd", "fused-sgd", "foreach-adamw", "fused-adamw"}) {
    at::Tensor w = (torch::randn({48, 64}) * 0.1).requires_grad_(true);
    fp8::LinearState state(4);
    std::unique_ptr<Optimizer> opt;
    if (kind == "foreach-sgd") opt = std::make_unique<ForeachSgd>(std::vector<at::Tensor>{w}, SgdOptions{});
    if (kind == "fused-sgd") opt = std::make_unique<FusedSgd>(std::vector<at::Tensor>{w}, SgdOptions{});
    if (kind == "foreach-adamw") opt = std::make_unique<ForeachAdamW>(std::vector<at::Tensor>{w}, AdamWOptions{});
    if (kind == "fused-adamw") opt = std::make_unique<FusedAdamW>(std::vector<at::Tensor>{w}, AdamWOptions{});
    for (int step = 0; step < 3; ++step) {
      opt->zero_grad();
      const at::Tensor y = fp8::linear(x, w, {}, r, &state);
      EXPECT_TRUE(at::equal(y, fp8::linear(x, w.detach().clone(), {}, r)))
          << kind << " step " << step << ": the FP8 weight is this step's";
      y.square().mean().backward();
      opt->step();
    }
  }
}

/// A reduced decoder trained `steps` SGD steps on one batch under bf16 autocast, its eligible layers in FP8 where
/// `plan_on` (through a Plan over models::fp8_candidates), on `device`; the losses, and the plan's selection.
TEST(Fp8Test, AnAmaxNotedByTheKernelThatWroteATensorIsTakenOnceForThatTensorOnly) {
  const at::Tensor act = torch::randn({2, 3, 16}), amax = torch::tensor(7.0f);
  fp8::note_amax(act, amax);
  EXPECT_FALSE(fp8::take_amax(torch::randn({6, 16})).defined()) << "another tensor";
  EXPECT_FALSE(fp8::take_amax(act.reshape({6, 16}).t()).defined()) << "a transposed view is not what was noted";
  const at::Tensor taken = fp8::take_amax(act.reshape({6, 16}));  // as the FP8 layer asks: [rows, in]
  ASSERT_TRUE(taken.defined());
  EXPECT_EQ(taken.item<float>(), 7.0f);
  EXPECT_FALSE(fp8::take_amax(act.reshape({6, 16})).defined()) << "taken once";
  fp8::note_amax(act, amax);
  {
    const at::NoGradGuard no_grad;
    act.mul_(2);  // written since: the noted amax no longer describes it
  }
  EXPECT_FALSE(fp8::take_amax(act.reshape({6, 16})).defined());
}

TEST(Fp8Test, ACheckpointedBlockRerunsItsLayersInFp8) {
  torch::manual_seed(4);
  torch::nn::Linear l(torch::nn::LinearOptions(64, 48));
  const fp8::Plan plan({{"l", l.get(), 64, 48, l->weight}}, fp8::Recipe{});
  const at::Tensor x = torch::randn({32, 64});
  auto weight_grad = [&](bool checkpointed) {
    l->zero_grad();
    const at::Tensor xi = x.clone().requires_grad_(true);  // checkpoint needs an input that wants a gradient
    at::Tensor y;
    {
      const fp8::PlanScope scope(&plan);
      const BlockFn block = [&](const std::vector<at::Tensor>& in) { return models::linear(l, in[0]); };
      y = checkpointed ? checkpoint(block, {xi}) : block({xi});
    }
    y.square().sum().backward();  // outside the scope, as the trainer's backward runs on autograd's threads
    return l->weight.grad().clone();
  };
  const at::Tensor plain = weight_grad(false), rerun = weight_grad(true);
  EXPECT_TRUE(at::equal(plain, rerun)) << "the rerun's product is the forward's FP8 one";
  l->zero_grad();
  at::linear(x, l->weight, l->bias).square().sum().backward();
  EXPECT_FALSE(at::equal(l->weight.grad(), rerun)) << "and not the full-precision one";
}

/// `lr`: 0.05 descends within the CPU test's 150 steps; the GPU test's 300 steps take 0.02, a descent over the whole
/// run rather than a cliff in its first 30 steps, where a shift of one step between two curves reads as several
/// per cent (the curves themselves agree: at 0.05 the largest difference is at step 14, and it is under 0.1 % by
/// the end).
std::vector<double> train_reduced(const std::string& model, bool plan_on, int steps, const at::Device& device,
                                  fp8::Selection* selection = nullptr, double lr = 0.05,
                                  const std::string& kernels = "aten") {
  Scenario s;
  s.model = model;
  s.kernels = kernels;
  s.model_options = model == "llama"
                        ? std::map<std::string, nlohmann::json>{{"layers", 2}, {"hidden", 32}, {"heads", 2},
                                                                {"kv_heads", 1}, {"intermediate", 64}, {"vocab", 101},
                                                                {"seq_len", 16}}
                        : std::map<std::string, nlohmann::json>{{"layers", 2}, {"width", 32}, {"heads", 2},
                                                                {"vocab", 101}, {"seq_len", 16}, {"dropout", 0.0}};
  torch::manual_seed(7);
  auto w = find_model(model).make(s);
  w->module()->to(device);
  torch::Generator gen = at::detail::createCPUGenerator(11);
  Batch b = w->make_batch(2, torch::TensorOptions(), gen);  // 32 tokens: every FP8 product on its kernel
  for (auto& x : b.inputs) x = x.to(device);
  b.target = b.target.to(device);
  const fp8::Plan plan(models::fp8_candidates(*w->module()), fp8::Recipe{});
  if (selection != nullptr) *selection = plan.selection();
  torch::optim::SGD opt(w->module()->parameters(), torch::optim::SGDOptions(lr));
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) {
    opt.zero_grad();
    at::Tensor loss;
    {
      AutocastScope autocast(device.type(), at::kBFloat16);
      fp8::PlanScope scope(plan_on ? &plan : nullptr);
      loss = w->loss(b);
    }
    loss.backward();
    opt.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

void expect_fp8_curve(const std::string& model, const at::Device& device, double tol, int steps = 150,
                      double lr = 0.05, const std::string& kernels = "aten") {
  fp8::Selection sel;
  const auto fp8_losses = train_reduced(model, true, steps, device, &sel, lr, kernels);
  const auto bf16_losses = train_reduced(model, false, steps, device, nullptr, lr, kernels);
  ASSERT_FALSE(sel.converted.empty()) << model;
  double worst = 0.0;
  for (size_t i = 0; i < fp8_losses.size(); ++i) {
    ASSERT_TRUE(std::isfinite(fp8_losses[i])) << model << " step " << i;
    if (i < 10) continue;  // after warm-up, as the issue states the bound
    const double rel = std::abs(fp8_losses[i] - bf16_losses[i]) / std::abs(bf16_losses[i]);
    worst = std::max(worst, rel);
    EXPECT_LT(rel, tol) << model << " step " << i << ": fp8 " << fp8_losses[i] << " bf16 " << bf16_losses[i];
  }
  std::cout << model << " (kernels " << kernels << "): largest relative difference of the FP8 and bf16 loss curves after step 10: " << worst
            << "\n";
  EXPECT_LT(fp8_losses.back(), 0.5 * fp8_losses.front()) << model << ": the loss goes down in FP8";
}

TEST(Fp8Test, APlanConvertsTheEligibleLayersAndReducedDecodersTrainLikeBf16) {
  fp8::Selection llama, gpt2;
  train_reduced("llama", true, 1, at::kCPU, &llama);
  train_reduced("gpt2", true, 1, at::kCPU, &gpt2);
  EXPECT_NE(std::find(llama.converted.begin(), llama.converted.end(), "model.layers.0.self_attn.q_proj"),
            llama.converted.end());
  EXPECT_NE(std::find(llama.converted.begin(), llama.converted.end(), "model.layers.1.mlp.down_proj"),
            llama.converted.end());
  ASSERT_FALSE(llama.kept.empty());
  EXPECT_NE(llama.kept[0].find("lm_head (the LM head"), std::string::npos) << llama.kept[0];
  EXPECT_EQ(gpt2.converted.size(), 8u) << "c_attn, c_proj, c_fc and mlp's c_proj of two blocks (Conv1D)";
  expect_fp8_curve("llama", at::kCPU, 0.05);
  expect_fp8_curve("gpt2", at::kCPU, 0.05);
}

TEST(Fp8Test, TheFp8LinearLayerMatchesTheFullPrecisionOneOnTheGpu_CUDA) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const auto [gpu, capability] = name_and_capability(resolve_device("cuda:0"));
  if (fp8::unsupported("cuda", gpu, capability)) GTEST_SKIP() << "no FP8 tensor cores";
  const at::Device dev(at::kCUDA, 0);
  for (const auto scaling : {fp8::Scaling::kTensor, fp8::Scaling::kRowwise, fp8::Scaling::kDelayed}) {
    for (const Format g : {Format::kE5M2, Format::kE4M3}) check_linear(scaling, g, 32, at::kBFloat16, dev);
  }
  check_linear(fp8::Scaling::kTensor, Format::kE5M2, 32, std::nullopt, dev);  // fp32 in and out
  check_linear(fp8::Scaling::kTensor, Format::kE5M2, 12, at::kBFloat16, dev);  // 24 tokens: dW dequantised
  // reduced decoders in FP8 against bf16 on the GPU, 300 steps (the bound: 2 % after warm-up)
  expect_fp8_curve("llama", dev, 0.02, 300, 0.02);
  expect_fp8_curve("gpt2", dev, 0.02, 300, 0.02);
  // kernels: fused: SwiGLU's kernels hand their amaxes to down_proj (forward) and gate/up_proj (backward)
  expect_fp8_curve("llama", dev, 0.02, 300, 0.02, "fused");
}

TEST(Fp8Test, TheCastKernelsWriteTheBytesOfTheAtenCastAndItsTranspose_CUDA) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(9);
  const auto cuda = torch::TensorOptions().device(at::kCUDA);
  struct Case {
    int64_t rows, cols;
    at::ScalarType dtype;
  };
  // odd shapes (chunks cut by the edges, rows and columns not multiples of 4), tiles in full, every storage type;
  // multiples of 8 take the wide kernel (64 x 128 tiles), here also with tiles cut by both edges; a negative row count
  // puts x at an odd address (the narrow kernel again)
  for (const Case c : {Case{37, 50, at::kBFloat16}, Case{130, 2048, at::kHalf}, Case{64, 96, at::kFloat},
                       Case{1, 16, at::kBFloat16}, Case{8192, 256, at::kBFloat16}, Case{203, 13, at::kFloat},
                       Case{136, 200, at::kBFloat16}, Case{72, 2056, at::kFloat}, Case{8, 8, at::kHalf},
                       Case{256, 384, at::kBFloat16}, Case{-64, 128, at::kBFloat16}}) {
    const bool odd_address = c.rows < 0;
    const int64_t rows = std::abs(c.rows);
    const at::Tensor flat = (torch::randn({rows * c.cols + 1}, cuda) * 3.0).to(c.dtype);
    const at::Tensor x = flat.narrow(0, odd_address ? 1 : 0, rows * c.cols).view({rows, c.cols});
    const std::string what = std::to_string(rows) + " x " + std::to_string(c.cols) + " " + c10::toString(c.dtype) +
                             (odd_address ? " at an odd address" : "");
    const at::Tensor a = fp8::amax(x, false);
    EXPECT_EQ(a.item<float>(), x.abs().amax().to(at::kFloat).item<float>()) << what;
    for (const Format f : {Format::kE4M3, Format::kE5M2}) {
      // the true amax, then one a tenth of it: most values beyond the format's range, which must saturate
      for (const at::Tensor& am : {a, a / 10}) {
        const fp8::Quantized k = fp8::quantize_from_amax(x, f, am, true, true);
        const fp8::Quantized ref = fp8::quantize(x, f, fp8::scale_from_amax(am, f));
        EXPECT_TRUE(at::equal(k.data.view(at::kByte), ref.data.view(at::kByte))) << what << " " << fp8::name(f);
        EXPECT_TRUE(at::equal(k.data_t.view(at::kByte), ref.data.t().contiguous().view(at::kByte)))
            << what << " " << fp8::name(f) << ": the transpose";
        EXPECT_EQ(k.inv_scale.item<float>(), ref.inv_scale.item<float>()) << what;
        EXPECT_TRUE(at::isfinite(k.data.to(at::kFloat)).all().item<bool>()) << what << ": saturated, not inf";
      }
    }
    const fp8::Quantized only_t = fp8::quantize_from_amax(x, Format::kE4M3, a, false, true);
    EXPECT_FALSE(only_t.data.defined());
    EXPECT_EQ(only_t.data_t.sizes(), (std::vector<int64_t>{c.cols, rows}));
    EXPECT_TRUE(at::equal(only_t.data_t.view(at::kByte),
                          fp8::quantize_from_amax(x, Format::kE4M3, a, true, true).data_t.view(at::kByte)))
        << what << ": the transpose alone";
  }
  // NaN reaches the amax (and so the run's non-finite check), an all-zero tensor scales by 1
  at::Tensor bad = torch::ones({64, 64}, cuda).to(at::kBFloat16);
  bad[3][5] = NAN;
  EXPECT_TRUE(std::isnan(fp8::amax(bad, false).item<float>()));
  const fp8::Quantized zero = fp8::quantize_from_amax(torch::zeros({16, 16}, cuda), Format::kE4M3,
                                                      fp8::amax(torch::zeros({16, 16}, cuda), false), true, false);
  EXPECT_EQ(zero.inv_scale.item<float>(), 1.0f);
}

#ifdef GPUBENCH_WITH_CUDA
/// The kernels' name for an ATen storage type.
fused::DType kernel_dtype(at::ScalarType dt) {
  if (dt == at::kBFloat16) return fused::DType::kBFloat16;
  return dt == at::kHalf ? fused::DType::kFloat16 : fused::DType::kFloat32;
}

/// A kernel-written tensor's amax as ATen computes it, for comparing with what the kernel gave.
float aten_amax(const at::Tensor& t) { return t.abs().amax().to(at::kFloat).item<float>(); }

TEST(Fp8Test, SwiGluKernelsGiveTheAmaxOfWhatTheyWroteInTheSamePass_CUDA) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(8);
  const auto cuda = torch::TensorOptions().device(at::kCUDA);
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  // 16-byte aligned (eight elements an access), an odd count (the tail), and one element in (the scalar path)
  for (const int64_t n : {int64_t{64 * 512}, int64_t{3 * 37}, int64_t{8 * 1000 + 1}}) {
    for (const bool offset : {false, true}) {
      for (const at::ScalarType dt : {at::kBFloat16, at::kHalf, at::kFloat}) {
        const int64_t o = offset ? 1 : 0;
        const at::Tensor g = (torch::randn({n + o}, cuda) * 4).to(dt), u = (torch::randn({n + o}, cuda) * 4).to(dt),
                         d = torch::randn({n + o}, cuda).to(dt);
        at::Tensor out = at::empty({n + o}, cuda.dtype(dt)), dg = at::empty_like(out), du = at::empty_like(out);
        at::Tensor ref_out = at::empty_like(out), ref_dg = at::empty_like(out), ref_du = at::empty_like(out);
        const at::Tensor amax = at::zeros({3}, cuda.dtype(at::kFloat));
        const fused::DType dtype = kernel_dtype(dt);
        auto ptr = [&](const at::Tensor& t) { return static_cast<char*>(t.data_ptr()) + o * t.element_size(); };
        ASSERT_EQ(fused::launch_swiglu_forward(ptr(g), ptr(u), ptr(out), dtype, n, stream, amax.data_ptr<float>()),
                  cudaSuccess);
        ASSERT_EQ(fused::launch_swiglu_forward(ptr(g), ptr(u), ptr(ref_out), dtype, n, stream), cudaSuccess);
        ASSERT_EQ(fused::launch_swiglu_backward(ptr(g), ptr(u), ptr(d), ptr(dg), ptr(du), dtype, n, stream,
                                                amax.data_ptr<float>() + 1, amax.data_ptr<float>() + 2),
                  cudaSuccess);
        ASSERT_EQ(fused::launch_swiglu_backward(ptr(g), ptr(u), ptr(d), ptr(ref_dg), ptr(ref_du), dtype, n, stream),
                  cudaSuccess);
        const std::string what = std::to_string(n) + (offset ? " offset " : " ") + c10::toString(dt);
        auto amax_of = [&](const at::Tensor& t) { return aten_amax(t.narrow(0, o, n)); };
        EXPECT_EQ(amax[0].item<float>(), amax_of(out)) << what;
        EXPECT_EQ(amax[1].item<float>(), amax_of(dg)) << what;
        EXPECT_EQ(amax[2].item<float>(), amax_of(du)) << what;
        EXPECT_TRUE(at::equal(out.narrow(0, o, n), ref_out.narrow(0, o, n))) << what << ": asking for the amax";
        EXPECT_TRUE(at::equal(dg.narrow(0, o, n), ref_dg.narrow(0, o, n))) << what;
        // the values against ATen's formula, within the storage type's rounding
        const at::Tensor gf = g.narrow(0, o, n).to(at::kFloat), uf = u.narrow(0, o, n).to(at::kFloat);
        EXPECT_LT(rel_diff(out.narrow(0, o, n), at::silu(gf) * uf), 1e-2) << what;
      }
    }
  }
}

TEST(Fp8Test, RmsNormAndRotaryKernelsGiveTheAmaxOfWhatTheyWroteInTheSamePass_CUDA) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(10);
  const auto cuda = torch::TensorOptions().device(at::kCUDA);
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  for (const at::ScalarType dt : {at::kBFloat16, at::kHalf, at::kFloat}) {
    // RMSNorm: TinyLlama's width (eight a load) and an odd one (one a load), many rows and one
    for (const auto& [rows, n] : std::vector<std::pair<int64_t, int64_t>>{{3000, 2048}, {1, 2048}, {77, 100}}) {
      const std::string what = std::to_string(rows) + " x " + std::to_string(n) + " " + c10::toString(dt);
      const at::Tensor y = (torch::randn({rows, n}, cuda) * 2).to(dt), r = torch::randn({rows, n}, cuda).to(dt);
      const at::Tensor gamma = torch::rand({n}, cuda) + 0.5;
      at::Tensor sum = at::empty_like(y), out = at::empty_like(y), ref = at::empty_like(y);
      const at::Tensor rstd = at::empty({rows}, cuda.dtype(at::kFloat)), amax = at::zeros({2}, cuda.dtype(at::kFloat));
      for (at::Tensor* dst : {&out, &ref}) {
        ASSERT_EQ(fused::launch_add_rms_norm(y.data_ptr(), r.data_ptr(), gamma.data_ptr<float>(), sum.data_ptr(),
                                             dst->data_ptr(), rstd.data_ptr<float>(), kernel_dtype(dt), rows, n, 1e-5f,
                                             stream, dst == &out ? amax.data_ptr<float>() : nullptr),
                  cudaSuccess);
      }
      EXPECT_EQ(amax[0].item<float>(), aten_amax(out)) << what;
      EXPECT_TRUE(at::equal(out, ref)) << what << ": asking for the amax";
      const at::Tensor d_out = torch::randn({rows, n}, cuda).to(dt), d_extra = torch::randn({rows, n}, cuda).to(dt);
      at::Tensor d_sum = at::empty_like(y), d_ref = at::empty_like(y);
      const at::Tensor scratch = at::empty({fused::rms_norm_backward_scratch_floats(rows, n)}, cuda.dtype(at::kFloat));
      const at::Tensor d_gamma = at::empty({n}, cuda.dtype(at::kFloat));
      for (at::Tensor* dst : {&d_sum, &d_ref}) {
        ASSERT_EQ(fused::launch_add_rms_norm_backward(d_out.data_ptr(), d_extra.data_ptr(), sum.data_ptr(),
                                                      gamma.data_ptr<float>(), rstd.data_ptr<float>(), dst->data_ptr(),
                                                      scratch.data_ptr<float>(), d_gamma.data_ptr<float>(),
                                                      kernel_dtype(dt), rows, n, stream,
                                                      dst == &d_sum ? amax.data_ptr<float>() + 1 : nullptr),
                  cudaSuccess);
      }
      EXPECT_EQ(amax[1].item<float>(), aten_amax(d_sum)) << what << ": the gradient";
      EXPECT_TRUE(at::equal(d_sum, d_ref)) << what;
    }
    // rotary: Llama's head_dim 64 (eight a load) and 12 (one a load), both ways
    for (const int64_t hd : {int64_t{64}, int64_t{12}}) {
      const int64_t b = 2, t = 33, hq = 8, hk = 2;
      const at::Tensor freqs = at::outer(at::arange(t, torch::kFloat), at::rand({hd / 2}));
      const at::Tensor emb = at::cat({freqs, freqs}, -1).to(at::kCUDA);
      const at::Tensor cos = emb.cos().to(dt), sin = emb.sin().to(dt);
      const at::Tensor q = (torch::randn({b, t, hq, hd}, cuda) * 3).to(dt);
      const at::Tensor k = torch::randn({b, t, hk, hd}, cuda).to(dt);
      for (const bool inverse : {false, true}) {
        const std::string what =
            "rotary head_dim " + std::to_string(hd) + (inverse ? " backward " : " ") + c10::toString(dt);
        at::Tensor qo = at::empty_like(q), ko = at::empty_like(k);
        const at::Tensor amax = at::zeros({2}, cuda.dtype(at::kFloat));
        ASSERT_EQ(fused::launch_rotary(q.data_ptr(), k.data_ptr(), qo.data_ptr(), ko.data_ptr(), cos.data_ptr(),
                                       sin.data_ptr(), kernel_dtype(dt), b * t, t, hq, hk, hd, inverse, stream,
                                       amax.data_ptr<float>(), amax.data_ptr<float>() + 1),
                  cudaSuccess);
        EXPECT_EQ(amax[0].item<float>(), aten_amax(qo)) << what;
        EXPECT_EQ(amax[1].item<float>(), aten_amax(ko)) << what;
        // against ATen's formula: x cos + rotate_half(x) sin, or its transpose, x cos + rotate_half^T(x sin)
        const at::Tensor cb = cos.to(at::kFloat).unsqueeze(1), sb = sin.to(at::kFloat).unsqueeze(1);
        auto expected = [&](const at::Tensor& x) {
          const at::Tensor xf = x.to(at::kFloat);
          const at::Tensor rot = inverse ? xf * sb : xf;
          const at::Tensor lo = rot.narrow(-1, 0, hd / 2), hi = rot.narrow(-1, hd / 2, hd / 2);
          return inverse ? xf * cb + at::cat({hi, -lo}, -1) : xf * cb + at::cat({-hi, lo}, -1) * sb;
        };
        EXPECT_LT(rel_diff(qo, expected(q)), 1e-2) << what;
        EXPECT_LT(rel_diff(ko, expected(k)), 1e-2) << what;
      }
    }
  }
}
#endif

/// A captured FP8 layer recomputes its amaxes and scales on every replay: the slots a graph's kernels max into are
/// zeroed by the graph itself, not once at capture. The input shrunk 10^4-fold between replays would, with the
/// captured amax kept, be cast at a scale 10^4 too small (mostly e4m3 subnormals and zeros): the replay must give
/// what an eager call on the new values gives. The weight changed in place is quantised again too.
TEST(Fp8Test, ACapturedFp8LayerScalesEachReplayByItsOwnAmax_CUDA) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const auto [gpu, capability] = name_and_capability(resolve_device("cuda:0"));
  if (fp8::unsupported("cuda", gpu, capability)) GTEST_SKIP() << "no FP8 tensor cores";
  if (!cuda_graphs_compiled()) GTEST_SKIP() << "this build cannot capture CUDA graphs";
  torch::manual_seed(9);
  const auto cuda = torch::TensorOptions().device(at::kCUDA);
  at::Tensor x = torch::randn({256, 128}, cuda).to(at::kBFloat16);
  at::Tensor w = (torch::randn({96, 128}, cuda) * 0.1).requires_grad_(true);
  const at::Tensor d = torch::randn({256, 96}, cuda);
  const fp8::Recipe r;
  fp8::LinearState state(4);
  at::Tensor y;
  const auto graph = capture_step(
      [&] {
        w.mutable_grad() = at::Tensor();
        y = fp8::linear(x, w, {}, r, &state);
        at::Tensor loss = (y.to(at::kFloat) * d).sum();
        loss.backward();
        return loss;
      },
      2);
  auto eager = [&](const std::string& what) {
    at::Tensor w2 = w.detach().clone().requires_grad_(true);
    const at::Tensor y2 = fp8::linear(x, w2, {}, r);
    (y2.to(at::kFloat) * d).sum().backward();
    graph->replay();
    EXPECT_LT(rel_diff(y, y2), 1e-3) << what;
    EXPECT_LT(rel_diff(w.grad(), w2.grad()), 1e-3) << what;
    EXPECT_LT(rel_diff(y, at::linear(x.to(at::kFloat), w.detach())), 0.05) << what << ": within FP8's error";
  };
  eager("as captured");
  {
    const at::NoGradGuard no_grad;
    x.mul_(1e-4);
  }
  eager("the input 10^4 times smaller");
  {
    const at::NoGradGuard no_grad;
    w.mul_(30.0);
  }
  eager("the weight 30 times larger");
}

/// A plan's step-start quantisation of all its weights (two launches) writes the bytes each layer's own cast writes:
/// a Linear's [out, in] weight, GPT-2's Conv1D weight stored [in, out], shapes cut by the kernels' 64 x 128 tiles and
/// by their amax blocks. The layers then use those weights in their forward passes and keep them through backward.
TEST(Fp8Test, APlanQuantisesItsWeightsTogetherToTheBytesOfEachLayersOwnCast_CUDA) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(12);
  torch::nn::Linear a(torch::nn::LinearOptions(128, 96)), b(torch::nn::LinearOptions(2048, 4112));
  models::Conv1D c(64, 48);
  a->to(at::kCUDA);
  b->to(at::kCUDA);
  c->to(at::kCUDA);
  {
    const at::NoGradGuard no_grad;
    b->weight.mul_(40.0);  // amaxes far apart: each tensor its own scale
    c->weight.mul_(1e-3);
  }
  const fp8::Plan plan({{"a", a.get(), 128, 96, a->weight}, {"b", b.get(), 2048, 4112, b->weight},
                        {"c", c.get(), 64, 48, c->weight.t()}},
                       fp8::Recipe{});
  auto expect_prepared = [&](const std::string& when) {
    ASSERT_EQ(plan.quantize_weights(), 3) << when;
    const std::vector<std::pair<const void*, at::Tensor>> layers = {
        {a.get(), a->weight}, {b.get(), b->weight}, {c.get(), c->weight.t()}};
    for (const auto& [module, weight] : layers) {
      const fp8::LinearState* st = plan.find(module);
      ASSERT_NE(st, nullptr);
      ASSERT_TRUE(st->weight.prepared) << when;
      const at::Tensor w = weight.detach().contiguous();
      const fp8::Quantized ref = fp8::quantize_from_amax(w, Format::kE4M3, fp8::amax(w, false), true, true);
      const fp8::Quantized& got = st->weight.q;
      ASSERT_EQ(got.data.sizes(), ref.data.sizes()) << when;
      EXPECT_TRUE(at::equal(got.data.view(at::kByte), ref.data.view(at::kByte))) << when << " " << w.sizes();
      EXPECT_TRUE(at::equal(got.data_t.view(at::kByte), ref.data_t.view(at::kByte))) << when << " " << w.sizes();
      EXPECT_EQ(got.inv_scale.item<float>(), ref.inv_scale.item<float>()) << when << " " << w.sizes();
    }
  };
  expect_prepared("first step");
  // A forward pass takes the prepared weight (its bytes, no cast of its own) and the backward pass keeps it.
  fp8::LinearState* sa = plan.find(a.get());
  const void* prepared = sa->weight.q.data.data_ptr();
  const at::Tensor x = torch::randn({64, 128}, torch::TensorOptions().device(at::kCUDA)).to(at::kBFloat16);
  const at::Tensor y = fp8::linear(x, a->weight, a->bias, plan.recipe(), sa);
  EXPECT_TRUE(at::equal(y, fp8::linear(x, a->weight, a->bias, plan.recipe())));
  y.to(at::kFloat).sum().backward();
  EXPECT_EQ(sa->weight.q.data.data_ptr(), prepared) << "kept through backward for the step's other micro-batches";
  {
    const at::NoGradGuard no_grad;
    a->weight.mul_(-3.0);  // an optimizer step
    b->weight.add_(1.0);
  }
  expect_prepared("after the weights changed");
}

/// `gpubench run` of a reduced decoder with precision: fp8 on this GPU: its record.
RunRecord run_fp8(const std::string& model, const std::string& kernels, const std::string& scaling,
                  bool graph = false) {
  Scenario s;
  s.graph = graph;
  s.model = model;
  s.device = "cuda";
  s.precision = "fp8";
  s.fp8_scaling = scaling;
  s.kernels = kernels;
  s.model_options = model == "llama"
                        ? std::map<std::string, nlohmann::json>{{"layers", 2}, {"hidden", 64}, {"heads", 4},
                                                                {"kv_heads", 2}, {"intermediate", 128}, {"vocab", 512},
                                                                {"seq_len", 64}}
                        : std::map<std::string, nlohmann::json>{{"layers", 2}, {"width", 64}, {"heads", 4},
                                                                {"vocab", 512}, {"seq_len", 64}};
  s.batch_size = 4;
  s.dataset_size = 160;
  s.warmup_steps = 3;
  s.telemetry = false;
  RunObserver quiet;
  return run_benchmark(s, quiet, RunOptions{});
}

TEST(Fp8Test, Fp8RunsRecordTheRecipeTheLayersThatRanInFp8AndMfuAgainstBothPeaks_CUDA) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const auto [gpu, capability] = name_and_capability(resolve_device("cuda:0"));
  if (fp8::unsupported("cuda", gpu, capability)) GTEST_SKIP() << "no FP8 tensor cores";
  const RunRecord llama = run_fp8("llama", "aten", "tensor");
  ASSERT_EQ(llama.status, RunStatus::kOk) << llama.reason;
  EXPECT_EQ(llama.precision.resolved, "fp8");
  EXPECT_EQ(llama.precision.autocast_dtype, "bfloat16");
  ASSERT_TRUE(llama.precision.fp8.has_value());
  const Fp8Record& f = *llama.precision.fp8;
  EXPECT_EQ(f.grad_format, "e5m2");
  EXPECT_EQ(f.scaling, "tensor");
  EXPECT_EQ(f.converted.size(), 14u) << "seven projections in each of two layers";
  ASSERT_FALSE(f.kept.empty());
  EXPECT_NE(f.kept.back().find("lm_head (the LM head"), std::string::npos) << f.kept.back();
  for (const auto& e : llama.epochs) {
    EXPECT_TRUE(std::isfinite(e.loss_last)) << "epoch " << e.index;
  }
  if (f.fp8_peak_tflops > 0) {  // a device in the table (the H200 is)
    EXPECT_NEAR(f.mfu_fp8_peak * f.fp8_peak_tflops, f.mfu_bf16_peak * f.bf16_peak_tflops, 1e-9);
    EXPECT_NEAR(llama.summary.mfu.value_or(0), f.mfu_fp8_peak, 1e-12) << "the summary's MFU is against the FP8 peak";
  }
  // With kernels: fused, GPT-2's products inside its fused operations stay bf16, and the record says which.
  const RunRecord gpt2 = run_fp8("gpt2", "fused", "rowwise");
  ASSERT_EQ(gpt2.status, RunStatus::kOk) << gpt2.reason;
  ASSERT_TRUE(gpt2.precision.fp8.has_value());
  EXPECT_EQ(gpt2.precision.fp8->converted,
            (std::vector<std::string>{"transformer.h.0.attn.c_attn", "transformer.h.1.attn.c_attn"}));
  bool fused_kept = false;
  for (const auto& k : gpt2.precision.fp8->kept) {
    fused_kept = fused_kept || k.find("transformer.h.0.mlp.c_fc (eligible, but its product ran inside a fused") == 0;
  }
  EXPECT_TRUE(fused_kept);
  // The whole fused FP8 step as a CUDA graph trains as the eager one does (the same batches, the same kernels).
  const RunRecord eager = run_fp8("llama", "fused", "tensor");
  const RunRecord graph = run_fp8("llama", "fused", "tensor", true);
  ASSERT_EQ(graph.status, RunStatus::kOk) << graph.reason;
  EXPECT_EQ(graph.execution.mode, "cuda_graph") << graph.execution.graph_fallback;
  ASSERT_TRUE(graph.precision.fp8.has_value());
  EXPECT_EQ(graph.precision.fp8->converted, eager.precision.fp8->converted);
  ASSERT_EQ(graph.epochs.size(), eager.epochs.size());
  for (size_t i = 0; i < graph.epochs.size(); ++i) {
    EXPECT_TRUE(std::isfinite(graph.epochs[i].loss_last)) << "epoch " << i;
    EXPECT_NEAR(graph.epochs[i].loss_last, eager.epochs[i].loss_last, 0.02 * eager.epochs[i].loss_last)
        << "epoch " << i;
  }
  // A run that fails (an injected OOM, after the plan exists) still records the recipe, and no layer as run.
  setenv("GPUBENCH_FAULT_INJECT", "oom-above-batch:1", 1);
  const RunRecord failed = run_fp8("llama", "fused", "tensor");
  unsetenv("GPUBENCH_FAULT_INJECT");
  EXPECT_NE(failed.status, RunStatus::kOk);
  ASSERT_TRUE(failed.precision.fp8.has_value());
  EXPECT_EQ(failed.precision.fp8->grad_format, "e5m2");
  EXPECT_EQ(failed.precision.fp8->scaling, "tensor");
  EXPECT_TRUE(failed.precision.fp8->converted.empty());
  EXPECT_FALSE(failed.precision.fp8->kept.empty());
  // Delayed scaling runs too.
  const RunRecord delayed = run_fp8("llama", "fused", "delayed");
  ASSERT_EQ(delayed.status, RunStatus::kOk) << delayed.reason;
  EXPECT_EQ(delayed.precision.fp8->amax_history, 16);
}

}  // namespace
}  // namespace gpubench::engine
