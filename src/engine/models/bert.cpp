#include "models/bert.h"

#include <torch/nn/init.h>

#include "fused/fused_ops.h"
#include "models/layers.h"
#include "precision.h"

namespace gpubench::models {

namespace {
torch::nn::LayerNorm layer_norm(const BertOptions& o) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.hidden}).eps(o.layer_norm_eps));
}
}  // namespace

BertEmbeddingsImpl::BertEmbeddingsImpl(const BertOptions& o) {
  word_embeddings = register_module(
      "word_embeddings", torch::nn::Embedding(torch::nn::EmbeddingOptions(o.vocab_size, o.hidden).padding_idx(0)));
  position_embeddings = register_module("position_embeddings", torch::nn::Embedding(o.max_positions, o.hidden));
  token_type_embeddings = register_module("token_type_embeddings", torch::nn::Embedding(o.type_vocab, o.hidden));
  LayerNorm = register_module("LayerNorm", layer_norm(o));
  dropout = register_module("dropout", torch::nn::Dropout(o.dropout));
}

torch::Tensor BertEmbeddingsImpl::forward(const torch::Tensor& input_ids) {
  const int64_t seq = input_ids.size(1);
  // Positions 0..seq-1 and token type 0 for every token (single-segment inputs), as transformers' defaults.
  torch::Tensor h = word_embeddings(input_ids) + position_embeddings->weight.narrow(0, 0, seq) +
                    token_type_embeddings->weight.select(0, 0);
  return dropout(LayerNorm(h));
}

BertSelfAttentionImpl::BertSelfAttentionImpl(const BertOptions& o)
    : heads_(o.heads), dropout_(o.dropout), math_(o.math_attention), fused_(o.fused) {
  query = register_module("query", torch::nn::Linear(o.hidden, o.hidden));
  key = register_module("key", torch::nn::Linear(o.hidden, o.hidden));
  value = register_module("value", torch::nn::Linear(o.hidden, o.hidden));
}

torch::Tensor BertSelfAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& keep_mask) {
  if (fused_) {
    const auto qkv = engine::fused::linear_qkv(x, query->weight, query->bias, key->weight, key->bias, value->weight,
                                               value->bias);
    return merge_heads(attention(split_heads(qkv[0], heads_), split_heads(qkv[1], heads_), split_heads(qkv[2], heads_),
                                 keep_mask, is_training() ? dropout_ : 0.0, math_));
  }
  const torch::Tensor ctx = attention(split_heads(linear(query, x), heads_), split_heads(linear(key, x), heads_),
                                      split_heads(linear(value, x), heads_), keep_mask, is_training() ? dropout_ : 0.0, math_);
  return merge_heads(ctx);
}

BertResidualOutputImpl::BertResidualOutputImpl(int64_t in, int64_t out, const BertOptions& o)
    : p_(o.dropout), eps_(o.layer_norm_eps), fused_(o.fused) {
  dense = register_module("dense", torch::nn::Linear(in, out));
  LayerNorm = register_module("LayerNorm", layer_norm(o));
  dropout = register_module("dropout", torch::nn::Dropout(o.dropout));
}

torch::Tensor BertResidualOutputImpl::forward(const torch::Tensor& h, const torch::Tensor& residual) {
  if (fused_) {
    return engine::fused::linear_dropout_add_layer_norm(h, dense->weight, dense->bias, residual, LayerNorm->weight,
                                                        LayerNorm->bias, is_training() ? p_ : 0.0, eps_);
  }
  return LayerNorm(dropout(linear(dense, h)) + residual);
}

BertAttentionImpl::BertAttentionImpl(const BertOptions& o) {
  self = register_module("self", BertSelfAttention(o));
  output = register_module("output", BertResidualOutput(o.hidden, o.hidden, o));
}

torch::Tensor BertAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& keep_mask) {
  return output(self(x, keep_mask), x);
}

BertLayerImpl::BertLayerImpl(const BertOptions& o) : fused_(o.fused) {
  attention = register_module("attention", BertAttention(o));
  intermediate = register_module("intermediate", std::make_shared<torch::nn::Module>());
  intermediate_dense = intermediate->register_module("dense", torch::nn::Linear(o.hidden, o.intermediate));
  output = register_module("output", BertResidualOutput(o.intermediate, o.hidden, o));
}

torch::Tensor BertLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& keep_mask) {
  const torch::Tensor a = attention(x, keep_mask);
  if (fused_) {
    return output(engine::fused::linear_gelu(a, intermediate_dense->weight, intermediate_dense->bias, false), a);
  }
  return output(torch::gelu(linear(intermediate_dense, a)), a);  // exact (erf) GELU
}

BertForSequenceClassificationImpl::BertForSequenceClassificationImpl(const BertOptions& o) : fused_(o.fused) {
  bert_ = register_module("bert", std::make_shared<torch::nn::Module>());
  embeddings_ = bert_->register_module("embeddings", BertEmbeddings(o));
  encoder_ = bert_->register_module("encoder", std::make_shared<torch::nn::Module>());
  torch::nn::ModuleList list;
  for (int64_t i = 0; i < o.layers; ++i) {
    layers.push_back(BertLayer(o));
    list->push_back(layers.back());
  }
  encoder_->register_module("layer", list);
  pooler_ = bert_->register_module("pooler", std::make_shared<torch::nn::Module>());
  pooler_dense_ = pooler_->register_module("dense", torch::nn::Linear(o.hidden, o.hidden));
  dropout_ = register_module("dropout", torch::nn::Dropout(o.dropout));
  classifier_ = register_module("classifier", torch::nn::Linear(o.hidden, o.num_labels));
  run_layer = [this](size_t i, const torch::Tensor& x, const torch::Tensor& m) { return layers[i]->forward(x, m); };

  // transformers' _init_weights: N(0, 0.02) for Linear and Embedding weights, zero biases and padding row,
  // LayerNorm weight 1 and bias 0.
  torch::NoGradGuard no_grad;
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* l = m->as<torch::nn::LinearImpl>()) {
      torch::nn::init::normal_(l->weight, 0.0, 0.02);
      torch::nn::init::zeros_(l->bias);
    } else if (auto* e = m->as<torch::nn::EmbeddingImpl>()) {
      torch::nn::init::normal_(e->weight, 0.0, 0.02);
      if (e->options.padding_idx()) e->weight[*e->options.padding_idx()].zero_();
    } else if (auto* n = m->as<torch::nn::LayerNormImpl>()) {
      torch::nn::init::ones_(n->weight);
      torch::nn::init::zeros_(n->bias);
    }
  }
}

torch::Tensor BertForSequenceClassificationImpl::forward(const torch::Tensor& input_ids,
                                                         const torch::Tensor& attention_mask) {
  const torch::Tensor keep =
      attention_mask.defined() ? attention_mask.to(torch::kBool).unsqueeze(1).unsqueeze(1) : torch::Tensor();
  torch::Tensor h = embeddings_(input_ids);
  // The fused path keeps the residual stream in the compute dtype (bf16 under autocast) from here on: one cast,
  // where the ATen path carries LayerNorm's fp32 outputs and casts them before every linear layer.
  if (fused_) h = h.to(engine::compute_dtype(h));
  for (size_t i = 0; i < layers.size(); ++i) h = run_layer(i, h, keep);
  const torch::Tensor pooled = torch::tanh(linear(pooler_dense_, h.select(1, 0)));
  return linear(classifier_, dropout_(pooled));
}

double bert_train_flops_per_sequence(const BertOptions& o, int64_t seq_len) {
  const double d = static_cast<double>(o.hidden), s = static_cast<double>(seq_len);
  const double matmul_weights = 4 * d * d + 2 * d * static_cast<double>(o.intermediate);  // per layer
  const double forward_per_layer = 2 * s * matmul_weights + 4 * s * s * d;                 // + QK^T and AV
  return 3.0 * static_cast<double>(o.layers) * forward_per_layer;
}

double bert_attention_train_flops_per_sequence(const BertOptions& o, int64_t seq_len) {
  const double d = static_cast<double>(o.hidden), s = static_cast<double>(seq_len);
  return 3.0 * static_cast<double>(o.layers) * 4 * s * s * d;
}

}  // namespace gpubench::models
