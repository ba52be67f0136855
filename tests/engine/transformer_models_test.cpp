// BERT-base and the SD v1.5 UNet: sizes against MODELS.md, attention forms, training and gradient accumulation.

#include <gtest/gtest.h>
#include <torch/cuda.h>

#include "gpubench/engine/engine.hpp"
#include "models/layers.h"
#include "models/bert.h"
#include "models/registry.h"
#include "models/unet.h"

namespace gpubench::engine {
namespace {

int64_t numel(const torch::nn::Module& m) { return count_parameters(m); }

TEST(BertTest, FullSizeHasTransformersParameterCountAndParts) {
  models::BertForSequenceClassification bert;
  EXPECT_EQ(numel(*bert), 109'483'778);
  std::map<std::string, int64_t> parts;
  for (const auto& p : bert->named_parameters()) {
    const std::string& k = p.key();
    std::string part = k.rfind("bert.embeddings.", 0) == 0   ? "embeddings"
                       : k.rfind("bert.encoder.layer.0.", 0) == 0 ? "layer0"
                       : k.rfind("bert.pooler.", 0) == 0     ? "pooler"
                       : k.rfind("classifier.", 0) == 0      ? "classifier"
                                                             : "other";
    parts[part] += p.value().numel();
  }
  EXPECT_EQ(parts["embeddings"], 23'837'184);
  EXPECT_EQ(parts["layer0"], 7'087'872);
  EXPECT_EQ(parts["pooler"], 590'592);
  EXPECT_EQ(parts["classifier"], 1'538);
}

TEST(BertTest, TrainingFlopsMatchTheReferenceFormula) {
  EXPECT_DOUBLE_EQ(models::bert_train_flops_per_sequence({}, 128), 67'041'755'136.0);  // (6N + 12 L s d) x 128
  // Its attention term, 12 L s d per token (MODELS.md): QK^T and AV, the part attention kernels run.
  EXPECT_DOUBLE_EQ(models::bert_attention_train_flops_per_sequence({}, 128), 12.0 * 12 * 128 * 768 * 128);
}

TEST(BertTest, LogitsHaveOneColumnPerLabelAndPaddingIsMasked) {
  models::BertOptions o;
  o.layers = 2;
  o.hidden = 64;
  o.heads = 4;
  o.intermediate = 256;
  o.num_labels = 3;
  models::BertForSequenceClassification bert(o);
  bert->eval();
  torch::NoGradGuard no_grad;
  auto ids = torch::randint(1, 1000, {2, 16}, torch::kLong);
  EXPECT_EQ(bert->forward(ids).sizes(), (std::vector<int64_t>{2, 3}));
  // With the last 6 tokens masked, changing them must not change the logits.
  auto mask = torch::ones({2, 16}, torch::kLong);
  mask.narrow(1, 10, 6).zero_();
  auto other = ids.clone();
  other.narrow(1, 10, 6).fill_(7);
  EXPECT_TRUE(torch::allclose(bert->forward(ids, mask), bert->forward(other, mask), 1e-5, 1e-6));
}

TEST(AttentionTest, MathFormAgreesWithSdpaWithAndWithoutMask) {
  torch::manual_seed(1);
  auto q = torch::randn({2, 4, 10, 16}), k = torch::randn({2, 4, 12, 16}), v = torch::randn({2, 4, 12, 16});
  auto mask = torch::ones({2, 1, 1, 12}, torch::kBool);
  mask.narrow(3, 9, 3).fill_(false);
  for (const auto& m : {torch::Tensor(), mask}) {
    const auto fused = models::attention(q, k, v, m, 0.0, false);
    const auto math = models::attention(q, k, v, m, 0.0, true);
    EXPECT_TRUE(torch::allclose(fused, math, 1e-5, 1e-6)) << (fused - math).abs().max().item<double>();
  }
}

TEST(UNetTest, FullSizeHasDiffusersParameterCountPerBlock) {
  models::UNet2DCondition unet;
  EXPECT_EQ(numel(*unet), 859'520'964);
  const std::map<std::string, int64_t> expected{
      {"conv_in", 11'840},           {"time_embedding", 2'050'560},   {"down_blocks.0", 10'524'480},
      {"down_blocks.1", 36'818'560}, {"down_blocks.2", 139'992'320}, {"down_blocks.3", 62'277'120},
      {"mid_block", 97'038'080},     {"up_blocks.0", 162'241'280},   {"up_blocks.1", 258'330'880},
      {"up_blocks.2", 71'413'120},   {"up_blocks.3", 18'810'560},    {"conv_norm_out", 640},
      {"conv_out", 11'524}};
  std::map<std::string, int64_t> got;
  for (const auto& [name, n] : unet->part_parameter_counts()) got[name] = n;
  EXPECT_EQ(got, expected);
  int transformers = 0, resnets = 0;
  for (const auto& m : unet->modules(false)) {
    transformers += m->as<models::Transformer2DImpl>() != nullptr;
    resnets += m->as<models::ResnetBlock2DImpl>() != nullptr;
  }
  EXPECT_EQ(transformers, 16);
  EXPECT_EQ(resnets, 22);
}

TEST(UNetTest, AnalyticMacsMatchTheReference) {
  const models::UNetMacs m = models::unet_forward_macs({}, 64);
  EXPECT_NEAR(m.conv / 1e9, 222.0, 0.05);
  EXPECT_NEAR(m.linear / 1e9, 116.6, 0.05);
  EXPECT_NEAR(m.attention / 1e9, 63.0, 0.05);
  EXPECT_NEAR(m.total() / 1e9, 401.6, 0.05);
}

models::UNetOptions tiny_unet() {
  models::UNetOptions o;
  o.channels = {32, 64, 128, 128};
  o.layers_per_block = 1;
  o.heads = 2;
  return o;
}

TEST(UNetTest, PredictsNoiseOfTheLatentsShape) {
  models::UNet2DCondition unet(tiny_unet());
  torch::NoGradGuard no_grad;
  const auto y = unet->forward(torch::randn({2, 4, 16, 16}), torch::tensor({3, 900}), torch::randn({2, 77, 768}));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 4, 16, 16}));
}

TEST(UNetTest, MathAttentionGivesTheSameOutput) {
  torch::manual_seed(3);
  auto o = tiny_unet();
  models::UNet2DCondition a(o);
  o.math_attention = true;
  models::UNet2DCondition b(o);
  torch::NoGradGuard no_grad;
  auto pb = b->parameters();
  auto pa = a->parameters();
  for (size_t i = 0; i < pa.size(); ++i) pb[i].copy_(pa[i]);
  const auto x = torch::randn({1, 4, 16, 16}), t = torch::tensor({500}), c = torch::randn({1, 77, 768});
  EXPECT_TRUE(torch::allclose(a->forward(x, t, c), b->forward(x, t, c), 1e-4, 1e-5));
}

Scenario reduced(const std::string& model) {
  Scenario s;
  s.model = model;
  s.device = "cpu";
  s.seed = 5;
  s.epochs = 2;
  s.warmup_steps = 0;
  s.time_budget_s = 600;
  s.model_options["layers"] = model == "bert-base" ? 2 : 1;
  s.model_options["width"] = model == "bert-base" ? 64 : 32;
  s.model_options["heads"] = model == "bert-base" ? 4 : 2;
  if (model == "bert-base") s.model_options["seq_len"] = 32;
  if (model == "sd-unet") s.model_options["latent_size"] = 16;
  s.batch_size = 4;
  s.dataset_size = 32;
  s.optimizer.name = "adamw";
  s.optimizer.lr = 1e-3;
  return s;
}

TEST(TransformerTrainingTest, ReducedBertAndUNetLowerTheirLoss) {
  for (const std::string model : {"bert-base", "sd-unet"}) {
    RunObserver quiet;
    const RunRecord r = run_benchmark(reduced(model), quiet, {});
    ASSERT_EQ(r.status, RunStatus::kOk) << model << ": " << r.reason;
    EXPECT_LT(r.epochs.back().loss_last, r.epochs.front().loss_first) << model;
    EXPECT_GT(r.model.train_flops_per_sample, 0) << model;
  }
}

TEST(TransformerTrainingTest, TokensPerSecondFollowFromSequencesPerSecond) {
  RunObserver quiet;
  const RunRecord r = run_benchmark(reduced("bert-base"), quiet, {});
  ASSERT_EQ(r.status, RunStatus::kOk) << r.reason;
  EXPECT_EQ(r.model.tokens_per_sample, 32);
  EXPECT_DOUBLE_EQ(r.summary.tokens_per_s, r.summary.samples_per_s * 32);
  EXPECT_DOUBLE_EQ(r.summary.steps_per_s, r.summary.steps / r.summary.seconds);
}

/// Gradients of `w` for `batch`, either in one pass or as the mean over `k` micro-batches (dropout off).
std::vector<torch::Tensor> gradients(Workload& w, const Batch& batch, int64_t k) {
  auto params = w.module()->parameters();
  for (auto& p : params) p.mutable_grad().reset();
  const int64_t micro = batch.target.size(0) / k;
  for (int64_t m = 0; m < k; ++m) (w.loss(slice_batch(batch, m * micro, micro)) / static_cast<double>(k)).backward();
  std::vector<torch::Tensor> g;
  for (auto& p : params) g.push_back(p.grad().clone());
  return g;
}

TEST(GradientAccumulationTest, FourMicroBatchesGiveTheGradientOfOneBatchFourTimesLarger) {
  for (const std::string model : {"bert-base", "sd-unet"}) {
    Scenario s = reduced(model);
    s.model_options["dropout"] = 0.0;
    torch::manual_seed(7);
    auto w = find_model(model).make(s);
    auto gen = at::globalContext().defaultGenerator(c10::Device(c10::kCPU));
    const Batch batch = w->make_batch(8, torch::TensorOptions(), gen);
    const auto whole = gradients(*w, batch, 1);
    const auto accumulated = gradients(*w, batch, 4);
    for (size_t i = 0; i < whole.size(); ++i) {
      EXPECT_TRUE(torch::allclose(whole[i], accumulated[i], 1e-4, 1e-6))
          << model << " parameter " << i << ": " << (whole[i] - accumulated[i]).abs().max().item<double>();
    }
  }
}

TEST(GradientCheckpointingTest, GivesTheSameGradientsAsKeepingActivations) {
  // BERT with its 0.1 dropout: the rerun must replay the same dropout masks.
  for (const std::string model : {"bert-base", "sd-unet"}) {
    std::vector<std::vector<torch::Tensor>> grads;
    for (bool ckpt : {false, true}) {
      Scenario s = reduced(model);
      s.model_options["gradient_checkpointing"] = ckpt;
      torch::manual_seed(11);
      auto w = find_model(model).make(s);
      auto gen = at::globalContext().defaultGenerator(c10::Device(c10::kCPU));
      const Batch batch = w->make_batch(4, torch::TensorOptions(), gen);
      torch::manual_seed(12);  // the same dropout draws in both runs
      grads.push_back(gradients(*w, batch, 1));
    }
    ASSERT_EQ(grads[0].size(), grads[1].size());
    for (size_t i = 0; i < grads[0].size(); ++i) {
      EXPECT_TRUE(torch::allclose(grads[0][i], grads[1][i], 1e-5, 1e-7))
          << model << " parameter " << i << ": " << (grads[0][i] - grads[1][i]).abs().max().item<double>();
    }
  }
}

TEST(GradientAccumulationTest, AStepTrainsBatchTimesKSamples) {
  Scenario s = reduced("bert-base");
  s.grad_accumulation = 2;
  s.dataset_size = 64;
  RunObserver quiet;
  const RunRecord r = run_benchmark(s, quiet, {});
  ASSERT_EQ(r.status, RunStatus::kOk) << r.reason;
  EXPECT_EQ(r.epochs[0].steps, 8);  // 64 samples / (4 x 2)
  EXPECT_EQ(r.epochs[0].samples, 64);
}

TEST(TransformerTrainingTest, BertAndUNetTrainOnTheGpuInBf16_CUDA) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  for (const std::string model : {"bert-base", "sd-unet"}) {
    Scenario s = reduced(model);
    s.device = "cuda";
    s.precision = "bf16";
    RunObserver quiet;
    const RunRecord r = run_benchmark(s, quiet, {});
    ASSERT_EQ(r.status, RunStatus::kOk) << model << ": " << r.reason;
    EXPECT_LT(r.epochs.back().loss_last, r.epochs.front().loss_first) << model;
  }
}

TEST(GradientCheckpointingTest, LowersPeakMemoryOnTheGpu_CUDA) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  std::vector<int64_t> peaks;
  for (bool ckpt : {false, true}) {
    Scenario s = reduced("sd-unet");
    s.device = "cuda";
    s.model_options["width"] = 64;
    s.model_options["latent_size"] = 32;
    s.batch_size = 8;
    s.model_options["gradient_checkpointing"] = ckpt;
    RunObserver quiet;
    const RunRecord r = run_benchmark(s, quiet, {});
    ASSERT_EQ(r.status, RunStatus::kOk) << r.reason;
    peaks.push_back(*r.summary.peak_allocated_bytes);
  }
  EXPECT_LT(peaks[1], peaks[0]) << "checkpointing " << peaks[1] << " B vs " << peaks[0] << " B";
}

}  // namespace
}  // namespace gpubench::engine
