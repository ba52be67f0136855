#pragma once
// Decoder-only language models, exact to transformers: GPT-2 (GPT2LMHeadModel) and Llama (LlamaForCausalLM), with
// the same module names, so transformers' named_parameters map onto these key for key, in the same order.

#include <torch/nn/module.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace gpubench::engine::fused {
class DecodeStep;
}

namespace gpubench::models {

/// mode: generate's static KV cache, allocated once: each layer's keys and values [batch, positions, kv_heads,
/// head_dim] (FlashAttention's layout). A step writes its tokens' keys and values at their positions and attends over
/// a window of the first positions (the rest are masked, or not read at all by the flash kernel).
struct KvCache {
  std::vector<at::Tensor> k, v;
  /// Decode attention by FlashAttention's variable-length kernel with `used_k` keys per sequence (CUDA, fp16/bf16,
  /// where LibTorch has it; checked once when the cache is made), else SDPA with a mask built on the device.
  bool flash = false;
  at::Tensor cu_q, cu_k, used_k;  ///< int32: query and key offsets per sequence [batch + 1], keys in use [batch]
  at::Tensor attn_counters;       ///< int32 [batch x kv_heads], zero: fused::decode_attention's (CUDA only)
  at::Tensor greedy_scratch;      ///< int64 [batch + 1], zero: fused::decode_lm_head_greedy's (CUDA only)
  int64_t bytes() const;
  int64_t positions() const { return k.empty() ? 0 : k.front().size(1); }
  /// Before a decode step at device position `pos`: the keys in use become pos + 1 (one small kernel per step).
  void begin_step(const at::Tensor& pos);
  /// kernels: fused, one sequence, when asked for: the whole greedy step as one kernel (decode/decode_step_ops.h), made
  /// at the first step (null where it is off or does not serve: `step_kernel_why` says why it does not serve).
  std::shared_ptr<engine::fused::DecodeStep> step_kernel;
  bool step_kernel_checked = false;
  std::string step_kernel_why;
};

/// A greedy decode step's buffers (mode: generate): `token` [batch, 1] goes in and is replaced by the next token,
/// which also goes to `history` [batch, new tokens] at column pos - history_offset; `pos` (one int64 on the device,
/// so that a captured step replays for the next position) moves on by one.
struct GreedyStep {
  at::Tensor token, pos, history;
  int64_t history_offset = 0;
};

/// Whether caches made from now on may use FlashAttention's KV-cache kernel for a token's attention
/// (kernel_options.flash_decode; on by default; false keeps the masked SDPA path, to compare the two on one device).
void set_flash_decode_allowed(bool allowed);

/// A cache of `layers` layers for `batch` sequences of `positions` tokens with `kv_heads` heads of `head_dim`.
KvCache make_kv_cache(size_t layers, int64_t batch, int64_t positions, int64_t kv_heads, int64_t head_dim,
                      const at::TensorOptions& options);

/// Attention of `q` [batch, heads, t, d] over layer `layer` of `cache` after writing `k_new`, `v_new` [batch, kv_heads,
/// t, d] into it. `pos` undefined: a prefill of positions 0..t-1 (causal, no mask). `pos` a one-element int64 device
/// tensor: one token (t = 1) at that position, attending to cache positions [0, window) that are <= pos (on the
/// device, so a CUDA graph can replay the step with the next position).
at::Tensor cached_attention(const at::Tensor& q, const at::Tensor& k_new, const at::Tensor& v_new, KvCache& cache,
                            size_t layer, const at::Tensor& pos, int64_t window, bool math);

/// The decode half of cached_attention, the cache already written: one query per sequence, q [batch, heads, d] ->
/// [batch, heads, d], over the cache's first `window` positions that are <= pos.
at::Tensor attend_cached(const at::Tensor& q, const KvCache& cache, size_t layer, const at::Tensor& pos, int64_t window,
                         bool math);

/// GPT-2 small by default (transformers' GPT2Config()): 124,439,808 parameters.
struct Gpt2Options {
  int64_t vocab_size = 50257, positions = 1024, hidden = 768, layers = 12, heads = 12;
  double dropout = 0.1;          ///< embedding, attention-probability and residual dropout (all 0.1 in GPT-2)
  double layer_norm_eps = 1e-5;
  bool math_attention = false;
  /// kernels: fused: the blocks' sub-layers as fused operations (fused/fused_ops.h), and generation's decode step by
  /// gpubench's kernels (decode/decode_ops.h)
  bool fused = false;
  int64_t intermediate() const { return 4 * hidden; }
};

/// transformers' Conv1D: y = x W + b with W stored [in, out] (the transpose of nn.Linear's), one addmm.
class Conv1DImpl : public torch::nn::Module {
 public:
  Conv1DImpl(int64_t in, int64_t out);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight, bias;
};
TORCH_MODULE(Conv1D);

class Gpt2BlockImpl : public torch::nn::Module {
 public:
  explicit Gpt2BlockImpl(const Gpt2Options& o);
  torch::Tensor forward(const torch::Tensor& x);
  /// kernels: fused (training and inference): the block over the residual stream `s` and its ln_1 output `a`
  /// (computed by the block before), returning {next stream, next_ln(next stream)}: the attention's output projection
  /// with dropout, the residual add and ln_2 as one operation, and the MLP with dropout, the residual add and
  /// `next_ln` (the next block's ln_1, or ln_f) as another (fused/fused_ops.h). The stream is in the compute dtype.
  std::pair<torch::Tensor, torch::Tensor> forward_fused(const torch::Tensor& s, const torch::Tensor& a,
                                                        const torch::nn::LayerNorm& next_ln);
  /// The block in eval mode over layer `layer` of a KV cache (cached_attention's `pos` and `window`).
  torch::Tensor forward_cached(const torch::Tensor& x, const at::Tensor& pos, int64_t window, KvCache& cache,
                               size_t layer);
  /// One decode step of the block by the decode operations (kernels: fused): x [batch, hidden] at `pos`; the
  /// Conv1D weights stored transposed (Gpt2LMHeadModelImpl::make_cache lays them out so).
  torch::Tensor forward_decode(const torch::Tensor& x, const at::Tensor& pos, int64_t window, KvCache& cache,
                               size_t layer);
  int64_t heads() const { return heads_; }
  torch::nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  Conv1D c_attn{nullptr}, attn_proj{nullptr}, c_fc{nullptr}, mlp_proj{nullptr};  ///< attn.c_attn, attn.c_proj, mlp.*

 private:
  /// The causal self-attention of the normalised input `a` (c_attn, attention with dropout `p`), heads merged:
  /// what attn.c_proj reads.
  torch::Tensor attend(const torch::Tensor& a, double p);

  int64_t heads_;
  double dropout_;
  bool math_, fused_;
};
TORCH_MODULE(Gpt2Block);

class Gpt2LMHeadModelImpl : public torch::nn::Module {
 public:
  explicit Gpt2LMHeadModelImpl(const Gpt2Options& o = {});
  /// Logits [batch, tokens, vocab] for input ids [batch, tokens] (causal; tokens <= positions).
  torch::Tensor forward(const torch::Tensor& input_ids);
  /// What the LM head reads: the final LayerNorm's output [batch, tokens, hidden].
  torch::Tensor hidden(const torch::Tensor& input_ids);
  /// The LM head's weight [vocab, hidden] (tied: wte's).
  const torch::Tensor& head_weight() const { return wte->weight; }
  /// mode: generate: a cache for `batch` sequences of `positions` tokens, and the last token's logits [batch, vocab]
  /// of `ids` [batch, t] over it (a prefill when `pos` is undefined; one token at `pos` otherwise: cached_attention).
  /// With `fused`, also stores the Conv1D weights transposed in memory (the same values and shapes, strides [1, in]),
  /// so the decode GEMVs read each output's weights contiguously.
  KvCache make_cache(int64_t batch, int64_t positions, const at::TensorOptions& options);
  torch::Tensor logits_cached(const torch::Tensor& ids, const at::Tensor& pos, int64_t window, KvCache& cache);
  /// With `fused`: one greedy decode step (GreedyStep) by the decode operations, ending, where the run GEMV takes the
  /// LM head, with its launch (fused::decode_lm_head_greedy: no argmax launches, no copies); for one sequence with
  /// the step kernel asked for (fused::decode_step_enabled), the whole step one kernel (KvCache::step_kernel). False
  /// (nothing run) without `fused`.
  bool decode_greedy(const GreedyStep& step, int64_t window, KvCache& cache);
  std::vector<Gpt2Block> blocks;
  /// Runs block i (gradient checkpointing wraps it).
  std::function<torch::Tensor(size_t, const torch::Tensor&)> run_layer;
  /// kernels: fused: the blocks hand each other the stream and its normalised input (Gpt2BlockImpl::forward_fused),
  /// so every LayerNorm runs inside the operation before it. Gradient checkpointing, which reruns one block at a time
  /// through run_layer, turns this off (each block then runs forward() with the MLP's linear + GELU fused).
  bool fuse_across_blocks = true;
  torch::nn::Embedding wte{nullptr}, wpe{nullptr};  ///< lm_head is tied to wte (no parameter of its own)

 private:
  /// The fused decode step's hidden state [batch, hidden] before the final norm, for `ids` [batch, 1] at `pos`.
  torch::Tensor decode_hidden(const torch::Tensor& ids, const at::Tensor& pos, int64_t window, KvCache& cache);
  std::shared_ptr<torch::nn::Module> transformer_;
  torch::nn::LayerNorm ln_f_{nullptr};
  torch::nn::Dropout drop_{nullptr};
  bool fused_ = false;
};
TORCH_MODULE(Gpt2LMHeadModel);

/// TinyLlama-1.1B by default (22 layers, hidden 2048, intermediate 5632, 32 heads, 4 KV heads, vocab 32000, RMSNorm
/// eps 1e-5, rope theta 10000, untied head): 1,100,048,384 parameters.
struct LlamaOptions {
  int64_t vocab_size = 32000, hidden = 2048, layers = 22, heads = 32, kv_heads = 4, intermediate = 5632;
  double rms_norm_eps = 1e-5, rope_theta = 10000.0;
  bool math_attention = false;
  /// kernels: fused: rotary embeddings, SwiGLU and the residual adds with their RMSNorms by gpubench's kernels
  /// (fused/fused_ops.h), and generation's decode step (decode/decode_ops.h)
  bool fused = false;
  int64_t head_dim() const { return hidden / heads; }
};

/// transformers' LlamaRMSNorm: x / sqrt(mean(x^2) + eps) in fp32, times `weight` (ATen's fused rms_norm).
class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(int64_t dim, double eps);
  torch::Tensor forward(const torch::Tensor& x);
  double eps() const { return eps_; }
  torch::Tensor weight;

 private:
  int64_t dim_;
  double eps_;
};
TORCH_MODULE(RMSNorm);

class LlamaDecoderLayerImpl : public torch::nn::Module {
 public:
  explicit LlamaDecoderLayerImpl(const LlamaOptions& o);
  /// `cos`, `sin`: [tokens, head_dim] rotary tables in the attention's dtype.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);
  /// kernels: fused (training and inference): the layer over the residual stream `x` and its input_layernorm output
  /// `n` (computed by the layer before), returning {next stream, next_norm(next stream)}: each sub-layer's residual
  /// add with the RMSNorm after it in one operation (fused/fused_ops.h), rotary and SwiGLU as in forward().
  std::pair<torch::Tensor, torch::Tensor> forward_fused(const torch::Tensor& x, const torch::Tensor& n,
                                                        const torch::Tensor& cos, const torch::Tensor& sin,
                                                        const RMSNorm& next_norm);
  /// The layer over layer `layer` of a KV cache (cached_attention's `pos` and `window`); `cos`, `sin` for the
  /// tokens' positions.
  torch::Tensor forward_cached(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                               const at::Tensor& pos, int64_t window, KvCache& cache, size_t layer);
  /// One decode step of the layer by the decode operations (kernels: fused): x [batch, hidden] at `pos`, with the
  /// rotary tables of every cache position.
  torch::Tensor forward_decode(const torch::Tensor& x, const torch::Tensor& cos_all, const torch::Tensor& sin_all,
                               const at::Tensor& pos, int64_t window, KvCache& cache, size_t layer);
  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};  ///< self_attn.*
  torch::nn::Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};            ///< mlp.*
  RMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};

 private:
  /// With kernels: fused, the causal self-attention of the normalised input `n` (q and k rotated in one kernel),
  /// heads merged: what o_proj reads.
  torch::Tensor attend_fused(const torch::Tensor& n, const torch::Tensor& cos, const torch::Tensor& sin);
  /// down_proj(silu(gate_proj(m)) * up_proj(m)), SwiGLU in one kernel with kernels: fused.
  torch::Tensor mlp(const torch::Tensor& m);

  int64_t heads_, kv_heads_, head_dim_;
  bool math_, fused_;
};
TORCH_MODULE(LlamaDecoderLayer);

class LlamaForCausalLMImpl : public torch::nn::Module {
 public:
  explicit LlamaForCausalLMImpl(const LlamaOptions& o = {});
  /// Logits [batch, tokens, vocab] for input ids [batch, tokens] (causal, positions 0..tokens-1).
  torch::Tensor forward(const torch::Tensor& input_ids);
  /// What the LM head reads: the final RMSNorm's output [batch, tokens, hidden].
  torch::Tensor hidden(const torch::Tensor& input_ids);
  const torch::Tensor& head_weight() const { return lm_head_->weight; }
  /// mode: generate, as Gpt2LMHeadModelImpl's.
  KvCache make_cache(int64_t batch, int64_t positions, const at::TensorOptions& options) const;
  torch::Tensor logits_cached(const torch::Tensor& ids, const at::Tensor& pos, int64_t window, KvCache& cache);
  /// As Gpt2LMHeadModelImpl's.
  bool decode_greedy(const GreedyStep& step, int64_t window, KvCache& cache);
  std::vector<LlamaDecoderLayer> layers;
  std::function<torch::Tensor(size_t, const torch::Tensor&, const torch::Tensor&, const torch::Tensor&)> run_layer;
  /// kernels: fused: the layers hand each other the stream and its normalised input (forward_fused); gradient
  /// checkpointing (one layer at a time through run_layer) turns this off.
  bool fuse_across_layers = true;

 private:
  /// As Gpt2LMHeadModelImpl's.
  torch::Tensor decode_hidden(const torch::Tensor& ids, const at::Tensor& pos, int64_t window, KvCache& cache);
  /// cos and sin of the rotary angles for `tokens` positions, [tokens, head_dim], computed in fp32 as transformers'
  /// LlamaRotaryEmbedding does, then held in `dtype` (cached per length, device and dtype).
  std::pair<torch::Tensor, torch::Tensor> rotary(int64_t tokens, const torch::Device& device, at::ScalarType dtype);

  LlamaOptions options_;
  std::shared_ptr<torch::nn::Module> model_;
  torch::nn::Embedding embed_tokens_{nullptr};
  RMSNorm norm_{nullptr};
  torch::nn::Linear lm_head_{nullptr};
  torch::Tensor cos_, sin_;
};
TORCH_MODULE(LlamaForCausalLM);

/// Analytic training FLOPs per sequence of `seq_len` tokens: 3 x the forward's matmul FLOPs, i.e. per token
/// 6 x (the blocks' matmul weights + the LM head's vocab x hidden) + 12 x layers x seq_len x hidden for attention's
/// QK^T and AV over the full seq_len x seq_len (the convention of PaLM's and Megatron's MFU; a causal kernel
/// skips about half of that, so this counts what the model needs, not what a kernel chooses to do).
double gpt2_train_flops_per_sequence(const Gpt2Options& o, int64_t seq_len);
double llama_train_flops_per_sequence(const LlamaOptions& o, int64_t seq_len);
/// The attention term alone: 3 x layers x 4 x seq_len^2 x hidden.
double decoder_attention_train_flops_per_sequence(int64_t layers, int64_t hidden, int64_t seq_len);

}  // namespace gpubench::models
