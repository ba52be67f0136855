// Our BERT-base against transformers' BertForSequenceClassification (exported by
// tests/reference/export_transformers_bert.py): same parameters in the same order, same logits with its weights.

#include <gtest/gtest.h>
#include <torch/cuda.h>

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

/// transformers' logits from its weights on `device`, with `kernels: fused` or not, to within `tol`.
void expect_transformers_logits(bool fused, const at::Device& device, double tol) {
  const auto ref = load_bert();
  models::BertOptions o;
  o.fused = fused;
  models::BertForSequenceClassification bert(o);
  const auto state = ref.at("state").toGenericDict();
  {
    torch::NoGradGuard no_grad;
    for (auto& p : bert->named_parameters()) p.value().copy_(state.at(p.key()).toTensor());
  }
  bert->to(device);
  bert->eval();
  const auto logits = bert->forward(ref.at("input_ids").toTensor().to(device),
                                    ref.at("attention_mask").toTensor().to(device)).cpu();
  const auto expected = ref.at("logits").toTensor();
  ASSERT_EQ(logits.sizes(), expected.sizes());
  const double diff = (logits - expected).abs().max().item<double>();
  EXPECT_LT(diff, tol) << "fused " << fused << " logits " << logits << " expected " << expected;
}

TEST(BertParityTest, TransformersWeightsGiveTransformersLogitsWithPadding) {
  expect_transformers_logits(false, at::kCPU, 1e-4);
}

TEST(BertParityTest, TheFusedKernelPathGivesTransformersLogitsAtFp32) {
  expect_transformers_logits(true, at::kCPU, 1e-4);
}

TEST(BertParityTest, TheFusedKernelsGiveTransformersLogitsAtFp32_CUDA) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  expect_transformers_logits(true, at::Device(at::kCUDA, 0), 1e-4);
}

}  // namespace
}  // namespace gpubench::engine
