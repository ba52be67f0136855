#include <gtest/gtest.h>

#include "optimizers.h"

namespace gpubench::engine {
namespace {

std::vector<torch::Tensor> make_params(int seed) {
  torch::manual_seed(seed);
  return {torch::randn({8, 4}, torch::requires_grad()), torch::randn({4}, torch::requires_grad()),
          torch::randn({3, 3, 2, 2}, torch::requires_grad())};
}

std::vector<torch::Tensor> clone_params(const std::vector<torch::Tensor>& ps) {
  std::vector<torch::Tensor> out;
  for (const auto& p : ps) out.push_back(p.detach().clone().requires_grad_(true));
  return out;
}

/// Drives ours and torch::optim with identical gradients for `steps` steps; parameters must stay equal.
template <typename Reference>
void expect_same_trajectory(Optimizer& ours, const std::vector<torch::Tensor>& ours_params, Reference& ref,
                            const std::vector<torch::Tensor>& ref_params, int steps) {
  for (int s = 0; s < steps; ++s) {
    torch::manual_seed(100 + s);
    for (size_t i = 0; i < ours_params.size(); ++i) {
      const auto g = torch::randn_like(ours_params[i]);
      ours_params[i].mutable_grad() = g.clone();
      ref_params[i].mutable_grad() = g.clone();
    }
    ours.step();
    ref.step();
  }
  for (size_t i = 0; i < ours_params.size(); ++i) {
    EXPECT_TRUE(torch::allclose(ours_params[i], ref_params[i], 1e-6, 1e-7))
        << "parameter " << i << " differs by " << (ours_params[i] - ref_params[i]).abs().max().item<double>();
  }
}

TEST(ForeachSgdTest, MatchesTorchOptimSgdWithMomentumAndWeightDecay) {
  for (bool nesterov : {false, true}) {
    auto a = make_params(1);
    auto b = clone_params(a);
    ForeachSgd ours(a, SgdOptions{0.05, 0.9, 0.0, 1e-4, nesterov});
    torch::optim::SGD ref(b, torch::optim::SGDOptions(0.05).momentum(0.9).weight_decay(1e-4).nesterov(nesterov));
    expect_same_trajectory(ours, a, ref, b, 6);
  }
}

TEST(ForeachSgdTest, PlainSgdWithoutMomentum) {
  auto a = make_params(2);
  auto b = clone_params(a);
  ForeachSgd ours(a, SgdOptions{0.1, 0.0, 0.0, 0.0, false});
  torch::optim::SGD ref(b, torch::optim::SGDOptions(0.1));
  expect_same_trajectory(ours, a, ref, b, 3);
}

TEST(ForeachAdamWTest, MatchesTorchOptimAdamW) {
  auto a = make_params(3);
  auto b = clone_params(a);
  ForeachAdamW ours(a, AdamWOptions{1e-2, 0.9, 0.98, 1e-6, 0.05});
  torch::optim::AdamW ref(b, torch::optim::AdamWOptions(1e-2).betas({0.9, 0.98}).eps(1e-6).weight_decay(0.05));
  expect_same_trajectory(ours, a, ref, b, 6);
}

TEST(FusedSgdTest, MatchesTorchOptimSgdWithMomentumAndWeightDecay) {
  for (bool nesterov : {false, true}) {
    auto a = make_params(11);
    auto b = clone_params(a);
    FusedSgd ours(a, SgdOptions{0.05, 0.9, 0.0, 1e-4, nesterov});
    torch::optim::SGD ref(b, torch::optim::SGDOptions(0.05).momentum(0.9).weight_decay(1e-4).nesterov(nesterov));
    expect_same_trajectory(ours, a, ref, b, 6);
  }
}

TEST(FusedSgdTest, PlainSgdWithoutMomentum) {
  auto a = make_params(12);
  auto b = clone_params(a);
  FusedSgd ours(a, SgdOptions{0.1, 0.0, 0.0, 0.0, false});
  torch::optim::SGD ref(b, torch::optim::SGDOptions(0.1));
  expect_same_trajectory(ours, a, ref, b, 3);
}

TEST(FusedAdamWTest, MatchesTorchOptimAdamWAndCountsStepsOnTheDevice) {
  auto a = make_params(13);
  auto b = clone_params(a);
  FusedAdamW ours(a, AdamWOptions{1e-2, 0.9, 0.98, 1e-6, 0.05});
  torch::optim::AdamW ref(b, torch::optim::AdamWOptions(1e-2).betas({0.9, 0.98}).eps(1e-6).weight_decay(0.05));
  expect_same_trajectory(ours, a, ref, b, 6);
  EXPECT_EQ(ours.step_count().item<float>(), 6.0f);
  EXPECT_EQ(ours.step_count().device(), a[0].device());
}

/// An fp16 overflow (found_inf = 1) must leave parameters, moments and the step count as they were: afterwards
/// the trajectory equals that of a reference that never saw the skipped step.
template <typename Ours, typename Reference>
void expect_skip_is_invisible(Ours& ours, const std::vector<torch::Tensor>& a, Reference& ref,
                              const std::vector<torch::Tensor>& b) {
  const torch::Tensor inf = torch::ones({1});
  const torch::Tensor clean = torch::zeros({1});
  for (size_t i = 0; i < a.size(); ++i) a[i].mutable_grad() = torch::full_like(a[i], 1e3);
  const auto before = a[0].detach().clone();
  ours.step(inf);  // skipped, on the first step
  EXPECT_TRUE(torch::equal(a[0].detach(), before));
  for (int s = 0; s < 4; ++s) {
    torch::manual_seed(200 + s);
    for (size_t i = 0; i < a.size(); ++i) {
      const auto g = torch::randn_like(a[i]);
      a[i].mutable_grad() = g.clone();
      b[i].mutable_grad() = g.clone();
    }
    ours.step(s == 2 ? inf : clean);
    if (s != 2) ref.step();
  }
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-6, 1e-7)) << "parameter " << i;
  }
}

TEST(FusedAdamWTest, FoundInfSkipsTheUpdateWithoutTouchingState) {
  auto a = make_params(14);
  auto b = clone_params(a);
  FusedAdamW ours(a, AdamWOptions{1e-2, 0.9, 0.999, 1e-8, 0.01});
  torch::optim::AdamW ref(b, torch::optim::AdamWOptions(1e-2).weight_decay(0.01));
  expect_skip_is_invisible(ours, a, ref, b);
  EXPECT_EQ(ours.step_count().item<float>(), 3.0f);  // 6 calls, 3 skipped
  EXPECT_TRUE(ours.skips_on_device());
  EXPECT_TRUE(ours.capturable());
}

TEST(FusedSgdTest, FoundInfSkipsTheUpdateEvenOnTheFirstStep) {
  auto a = make_params(15);
  auto b = clone_params(a);
  FusedSgd ours(a, SgdOptions{0.05, 0.9, 0.0, 1e-4, false});
  torch::optim::SGD ref(b, torch::optim::SGDOptions(0.05).momentum(0.9).weight_decay(1e-4));
  expect_skip_is_invisible(ours, a, ref, b);
}

TEST(ForeachOptimizerTest, FoundInfIsDecidedOnTheHostAndSkipsToo) {
  auto a = make_params(16);
  auto b = clone_params(a);
  ForeachAdamW ours(a, AdamWOptions{1e-2, 0.9, 0.999, 1e-8, 0.01});
  torch::optim::AdamW ref(b, torch::optim::AdamWOptions(1e-2).weight_decay(0.01));
  expect_skip_is_invisible(ours, a, ref, b);
  EXPECT_FALSE(ours.skips_on_device());
  EXPECT_FALSE(ours.capturable());  // its bias corrections come from a host-side step count
}

TEST(OptimizerTest, ParametersWithoutGradientsAreLeftAlone) {
  auto a = make_params(4);
  const auto before = a[1].detach().clone();
  ForeachSgd sgd(a, SgdOptions{});
  a[0].mutable_grad() = torch::ones_like(a[0]);
  sgd.step();
  EXPECT_TRUE(torch::equal(a[1].detach(), before));
  sgd.zero_grad();
  EXPECT_FALSE(a[0].grad().defined());
}

TEST(OptimizerTest, FactoryBuildsTheNamedOptimizer) {
  OptimizerSettings s;
  s.name = "adamw";
  EXPECT_NE(dynamic_cast<ForeachAdamW*>(make_optimizer(s, make_params(5)).get()), nullptr);
  s.implementation = "fused";
  EXPECT_NE(dynamic_cast<FusedAdamW*>(make_optimizer(s, make_params(5)).get()), nullptr);
  s.name = "sgd";
  EXPECT_STREQ(make_optimizer(s, make_params(5))->implementation(), "fused");
  s.implementation = "foreach";
  EXPECT_NE(dynamic_cast<ForeachSgd*>(make_optimizer(s, make_params(5)).get()), nullptr);
  s.name = "lamb";
  EXPECT_THROW(make_optimizer(s, make_params(5)), std::invalid_argument);
}

}  // namespace
}  // namespace gpubench::engine
