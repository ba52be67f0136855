#pragma once
// BERT-base with a sequence-classification head, as transformers' BertForSequenceClassification (post-LayerNorm,
// exact GELU, learned positions), with the same module names so its state dict maps onto this one key for key.

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

namespace gpubench::models {

struct BertOptions {
  int64_t vocab_size = 30522, hidden = 768, layers = 12, heads = 12, intermediate = 3072;
  int64_t max_positions = 512, type_vocab = 2, num_labels = 2;
  double dropout = 0.1;            ///< hidden and attention-probability dropout (both 0.1 in BERT)
  double layer_norm_eps = 1e-12;
  bool math_attention = false;     ///< explicit softmax attention instead of SDPA kernels
  /// kernels: fused: each sub-layer's output (linear, dropout, residual add, LayerNorm) and the intermediate linear +
  /// GELU as gpubench's fused operations (fused/fused_ops.h), the residual stream in the compute dtype.
  bool fused = false;
};

class BertEmbeddingsImpl : public torch::nn::Module {
 public:
  explicit BertEmbeddingsImpl(const BertOptions& o);
  torch::Tensor forward(const torch::Tensor& input_ids);
  torch::nn::Embedding word_embeddings{nullptr}, position_embeddings{nullptr}, token_type_embeddings{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(BertEmbeddings);

class BertSelfAttentionImpl : public torch::nn::Module {
 public:
  explicit BertSelfAttentionImpl(const BertOptions& o);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& keep_mask);
  torch::nn::Linear query{nullptr}, key{nullptr}, value{nullptr};

 private:
  int64_t heads_;
  double dropout_;
  bool math_, fused_;
};
TORCH_MODULE(BertSelfAttention);

/// Linear -> dropout -> residual -> LayerNorm (BertSelfOutput and BertOutput share this shape).
class BertResidualOutputImpl : public torch::nn::Module {
 public:
  BertResidualOutputImpl(int64_t in, int64_t out, const BertOptions& o);
  torch::Tensor forward(const torch::Tensor& h, const torch::Tensor& residual);
  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
  torch::nn::Dropout dropout{nullptr};

 private:
  double p_, eps_;
  bool fused_;
};
TORCH_MODULE(BertResidualOutput);

class BertAttentionImpl : public torch::nn::Module {
 public:
  explicit BertAttentionImpl(const BertOptions& o);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& keep_mask);
  BertSelfAttention self{nullptr};
  BertResidualOutput output{nullptr};
};
TORCH_MODULE(BertAttention);

class BertLayerImpl : public torch::nn::Module {
 public:
  explicit BertLayerImpl(const BertOptions& o);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& keep_mask);
  BertAttention attention{nullptr};
  std::shared_ptr<torch::nn::Module> intermediate;  ///< holds `dense` (hidden -> intermediate), GELU applied here
  torch::nn::Linear intermediate_dense{nullptr};
  BertResidualOutput output{nullptr};

 private:
  bool fused_;
};
TORCH_MODULE(BertLayer);

class BertForSequenceClassificationImpl : public torch::nn::Module {
 public:
  explicit BertForSequenceClassificationImpl(const BertOptions& o = {});
  /// Logits [batch, num_labels]. `attention_mask` [batch, seq] (1 = token, 0 = padding) may be undefined (no padding).
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask = {});
  /// Runs `layer` i (used by gradient checkpointing to wrap each layer).
  std::vector<BertLayer> layers;
  std::function<torch::Tensor(size_t, const torch::Tensor&, const torch::Tensor&)> run_layer;

 private:
  std::shared_ptr<torch::nn::Module> bert_, encoder_, pooler_;
  BertEmbeddings embeddings_{nullptr};
  torch::nn::Linear pooler_dense_{nullptr}, classifier_{nullptr};
  torch::nn::Dropout dropout_{nullptr};
  bool fused_;
};
TORCH_MODULE(BertForSequenceClassification);

/// Analytic training FLOPs per sequence: 3 x forward matmul FLOPs of the encoder layers (pooler and head excluded),
/// = (6 N + 12 L s d) per token with N the layers' matmul weights (MODELS.md).
double bert_train_flops_per_sequence(const BertOptions& o, int64_t seq_len);
/// The attention matmuls' share of it: 3 x layers x 4 s^2 d (QK^T and AV, forward, counted as the rest is).
double bert_attention_train_flops_per_sequence(const BertOptions& o, int64_t seq_len);

}  // namespace gpubench::models
