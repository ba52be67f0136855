// Our BERT-base against transformers' BertForSequenceClassification (exported by
// tests/reference/export_transformers_bert.py): same parameters in the same order, same logits with its weights.

#include <gtest/gtest.h>
#include "models/bert.h"
#include "reference_file.h"

namespace gpubench::engine {
namespace {

c10::Dict<c10::IValue, c10::IValue> load_bert() { return load_reference("bert_transformers.pt"); }

TEST(BertParityTest, ParametersMatchTransformersInNameShapeAndOrder) {
  const auto ref = load_bert();
  models::BertForSequenceClassification bert;
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& p : bert->named_parameters()) {
    names.push_back(p.key());
    shapes.push_back(p.value().sizes().vec());
  }
  EXPECT_EQ(names, reference_names(ref, "param_names"));
  EXPECT_EQ(shapes, reference_shapes(ref, "param_shapes"));
}

TEST(BertParityTest, TransformersWeightsGiveTransformersLogitsWithPadding) {
  const auto ref = load_bert();
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
