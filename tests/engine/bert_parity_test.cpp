// Our BERT-base against transformers' BertForSequenceClassification (exported by
// tests/reference/export_transformers_bert.py): same parameters in the same order, same logits with its weights.

#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <fstream>

#include "models/bert.h"

namespace gpubench::engine {
namespace {

c10::Dict<c10::IValue, c10::IValue> load_reference() {
  const std::string path = std::string(GPUBENCH_REFERENCE_DIR) + "/bert_transformers.pt";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("missing " + path + " (made by the transformers_reference_export test)");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  return torch::jit::pickle_load(bytes).toGenericDict();
}

TEST(BertParityTest, ParametersMatchTransformersInNameShapeAndOrder) {
  const auto ref = load_reference();
  models::BertForSequenceClassification bert;
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& p : bert->named_parameters()) {
    names.push_back(p.key());
    shapes.push_back(p.value().sizes().vec());
  }
  std::vector<std::string> ref_names;
  for (const auto& v : ref.at("param_names").toListRef()) ref_names.push_back(v.toStringRef());
  std::vector<std::vector<int64_t>> ref_shapes;
  for (const auto& v : ref.at("param_shapes").toListRef()) {
    std::vector<int64_t> s;
    for (const auto& d : v.toListRef()) s.push_back(d.toInt());
    ref_shapes.push_back(s);
  }
  EXPECT_EQ(names, ref_names);
  EXPECT_EQ(shapes, ref_shapes);
}

TEST(BertParityTest, TransformersWeightsGiveTransformersLogitsWithPadding) {
  const auto ref = load_reference();
  models::BertForSequenceClassification bert;
  const auto state = ref.at("state").toGenericDict();
  torch::NoGradGuard no_grad;
  for (auto& p : bert->named_parameters()) p.value().copy_(state.at(p.key()).toTensor());
  bert->eval();
  const auto logits = bert->forward(ref.at("input_ids").toTensor(), ref.at("attention_mask").toTensor());
  const auto expected = ref.at("logits").toTensor();
  ASSERT_EQ(logits.sizes(), expected.sizes());
  const double diff = (logits - expected).abs().max().item<double>();
  EXPECT_LT(diff, 1e-4) << "logits " << logits << " expected " << expected;
}

}  // namespace
}  // namespace gpubench::engine
