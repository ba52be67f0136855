#include <gtest/gtest.h>

#include "models/registry.h"
#include "models/resnet.h"

namespace gpubench::engine {
namespace {

int64_t numel_of(const torch::nn::Module& m) { return count_parameters(m); }

TEST(ResNet50Test, HasTorchvisionsParameterCountPerStageAndInTotal) {
  models::ResNet net;
  EXPECT_EQ(numel_of(*net), 25'557'032);
  std::map<std::string, int64_t> per_top;
  for (const auto& p : net->named_parameters()) per_top[p.key().substr(0, p.key().find('.'))] += p.value().numel();
  EXPECT_EQ(per_top["conv1"], 9'408);
  EXPECT_EQ(per_top["bn1"], 128);
  EXPECT_EQ(per_top["layer1"], 215'808);
  EXPECT_EQ(per_top["layer2"], 1'219'584);
  EXPECT_EQ(per_top["layer3"], 7'098'368);
  EXPECT_EQ(per_top["layer4"], 14'964'736);
  EXPECT_EQ(per_top["fc"], 2'049'000);
}

TEST(ResNet50Test, Has53ConvolutionsAnd53BatchNormsWithTorchDefaults) {
  models::ResNet net;
  int convs = 0, bns = 0;
  for (const auto& m : net->modules(false)) {
    if (auto* c = m->as<torch::nn::Conv2dImpl>()) {
      ++convs;
      EXPECT_FALSE(c->options.bias());
    }
    if (auto* b = m->as<torch::nn::BatchNorm2dImpl>()) {
      ++bns;
      EXPECT_DOUBLE_EQ(b->options.eps(), 1e-5);
      EXPECT_DOUBLE_EQ(*b->options.momentum(), 0.1);
    }
  }
  EXPECT_EQ(convs, 53);
  EXPECT_EQ(bns, 53);
}

TEST(ResNet50Test, StrideSitsOnTheThreeByThreeConvolution) {
  models::ResNet net;
  const auto params = net->named_modules();
  auto* conv1 = params["layer2.0.conv1"]->as<torch::nn::Conv2dImpl>();
  auto* conv2 = params["layer2.0.conv2"]->as<torch::nn::Conv2dImpl>();
  ASSERT_NE(conv1, nullptr);
  ASSERT_NE(conv2, nullptr);
  EXPECT_EQ(conv1->options.stride()->at(0), 1);
  EXPECT_EQ(conv2->options.stride()->at(0), 2);  // v1.5
}

TEST(ResNet50Test, OutputHasOneLogitPerClass) {
  models::ResNetOptions o;
  o.num_classes = 10;
  models::ResNet net(o);
  net->eval();
  torch::NoGradGuard no_grad;
  const auto y = net->forward(torch::randn({2, 3, 64, 64}));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 10}));
}

TEST(ResNet50Test, ConvolutionsUseKaimingFanOutInitialisation) {
  torch::manual_seed(0);
  models::ResNet net;
  const auto w = net->named_parameters()["layer3.0.conv2.weight"];  // 256x256x3x3: fan_out = 256*9
  EXPECT_NEAR(w.std().item<double>(), std::sqrt(2.0 / (256 * 9)), 0.02 * std::sqrt(2.0 / (256 * 9)));
}

TEST(ResNet50Test, AnalyticFlopsMatchThePublishedCount) {
  EXPECT_EQ(models::resnet_forward_macs({}, 224), 4'089'184'256);
  Scenario s;
  auto w = find_model("resnet50").make(s);
  EXPECT_DOUBLE_EQ(w->train_flops_per_sample(), 3.0 * 2.0 * 4'089'184'256.0);
}

TEST(ModelRegistryTest, UnknownModelListsTheKnownOnes) {
  try {
    find_model("vgg");
    FAIL() << "found a model that does not exist";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("resnet50"), std::string::npos);
  }
}

}  // namespace
}  // namespace gpubench::engine
