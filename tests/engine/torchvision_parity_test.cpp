// Our ResNet-50 against torchvision's own (exported by tests/reference/export_torchvision_resnet50.py):
// same parameters and buffers in the same order with the same shapes, the same logits with its weights, and the
// same initialisation statistics.

#include <gtest/gtest.h>
#include "models/resnet.h"
#include "reference_file.h"

namespace gpubench::engine {
namespace {

class TorchvisionParityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { reference_ = load_reference("resnet50_torchvision.pt"); }
  static void TearDownTestSuite() { reference_.reset(); }
  static c10::IValue get(const std::string& key) { return reference_->at(key); }
  static std::vector<std::string> names(const std::string& key) { return reference_names(*reference_, key); }
  static std::vector<std::vector<int64_t>> shapes(const std::string& key) { return reference_shapes(*reference_, key); }
  static std::optional<c10::Dict<c10::IValue, c10::IValue>> reference_;
};
std::optional<c10::Dict<c10::IValue, c10::IValue>> TorchvisionParityTest::reference_;

TEST_F(TorchvisionParityTest, ParametersAndBuffersEnumerateInTheSameOrderWithTheSameShapes) {
  models::ResNet net;
  std::vector<std::string> our_names;
  std::vector<std::vector<int64_t>> our_shapes;
  for (const auto& p : net->named_parameters()) {
    our_names.push_back(p.key());
    our_shapes.push_back(p.value().sizes().vec());
  }
  EXPECT_EQ(our_names, names("param_names"));
  EXPECT_EQ(our_shapes, shapes("param_shapes"));
  our_names.clear();
  our_shapes.clear();
  for (const auto& b : net->named_buffers()) {
    our_names.push_back(b.key());
    our_shapes.push_back(b.value().sizes().vec());
  }
  EXPECT_EQ(our_names, names("buffer_names"));
  EXPECT_EQ(our_shapes, shapes("buffer_shapes"));
}

TEST_F(TorchvisionParityTest, TorchvisionWeightsGiveTorchvisionsOutputs) {
  models::ResNet net;
  const auto state = get("state").toGenericDict();
  torch::NoGradGuard no_grad;
  int loaded = 0;
  for (auto& p : net->named_parameters()) {
    p.value().copy_(state.at(p.key()).toTensor());
    ++loaded;
  }
  for (auto& b : net->named_buffers()) {
    b.value().copy_(state.at(b.key()).toTensor());
    ++loaded;
  }
  EXPECT_EQ(loaded, static_cast<int>(state.size()));
  net->eval();
  const auto y = net->forward(get("input").toTensor());
  const auto expected = get("output").toTensor();
  ASSERT_EQ(y.sizes(), expected.sizes());
  const double rel = ((y - expected).abs().max() / expected.abs().max()).item<double>();
  EXPECT_LT(rel, 1e-4) << "max relative difference " << rel;
}

TEST_F(TorchvisionParityTest, FreshInitialisationHasTorchvisionsScale) {
  torch::manual_seed(0);
  models::ResNet net;
  const auto fresh_std = get("fresh_std").toGenericDict();
  const auto params = net->named_parameters();
  int checked = 0;
  for (const auto& kv : fresh_std) {
    const std::string name = kv.key().toStringRef();
    const double theirs = kv.value().toDouble();
    const double ours = params[name].std().item<double>();
    EXPECT_NEAR(ours / theirs, 1.0, 0.1) << name;
    ++checked;
  }
  EXPECT_GT(checked, 50);
}

}  // namespace
}  // namespace gpubench::engine
