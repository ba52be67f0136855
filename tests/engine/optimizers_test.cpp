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
  s.name = "lamb";
  EXPECT_THROW(make_optimizer(s, make_params(5)), std::invalid_argument);
}

}  // namespace
}  // namespace gpubench::engine
