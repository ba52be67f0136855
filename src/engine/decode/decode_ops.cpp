#include "decode/decode_ops.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "cuda/kernel_calls.h"
#include "fused/fused_ops.h"
#include "gpubench/core/scenario/kernel_options.hpp"

namespace gpubench::engine::fused {

namespace {

/// The choices' slots: the defaults until the engine sets a run's kernel_options (kernel_options.cpp), the tests'
/// setters otherwise.
std::atomic<int>& stream_mode_slot() {
  static std::atomic<int> mode{static_cast<int>(DecodeKernelMode::kWherePays)};
  return mode;
}
std::atomic<int>& run_mode_slot() {
  static std::atomic<int> mode{static_cast<int>(DecodeKernelMode::kWherePays)};
  return mode;
}

std::atomic<bool>& greedy_tail_slot() {
  static std::atomic<bool> on{true};
  return on;
}
std::atomic<bool>& embed_slot() {
  static std::atomic<bool> on{true};
  return on;
}

std::atomic<int>& cluster_limit_slot() {
  static std::atomic<int> limit{DecodeClusterSetting{}.limit};
  return limit;
}
std::atomic<int64_t>& min_split_slot() {
  static std::atomic<int64_t> least{KernelOptions{}.attention_min_split};
  return least;
}
std::atomic<int64_t>& cluster_batch_slot() {
  static std::atomic<int64_t> batch{DecodeClusterSetting{}.max_batch};
  return batch;
}

/// decode_linear with ATen operations.
at::Tensor linear_aten(const at::Tensor& x, const std::vector<at::Tensor>& weights, const at::Tensor& bias,
                       DecodeAct act, const at::Tensor& residual) {
  if (act == DecodeAct::kSwiglu) {
    const at::Tensor y = swiglu(at::linear(x, weights[0]), at::linear(x, weights[1]));  // one kernel on CUDA
    return residual.defined() ? y + residual : y;
  }
  if (weights.size() == 1 && act == DecodeAct::kNone && residual.defined() && !bias.defined() && x.dim() == 2) {
    return at::addmm(residual.view({x.size(0), -1}), x, weights[0].t());  // the residual as the GEMM's C
  }
  std::vector<at::Tensor> parts;
  for (const auto& w : weights) parts.push_back(at::linear(x, w));
  at::Tensor y = parts.size() == 1 ? parts[0] : at::cat(parts, -1);
  if (bias.defined()) y = y + bias;
  if (act == DecodeAct::kGeluTanh) y = at::gelu(y, "tanh");
  return residual.defined() ? y + residual : y;
}

}  // namespace

DecodeKernelMode decode_stream_mode() { return static_cast<DecodeKernelMode>(stream_mode_slot().load()); }

void set_decode_stream_mode(DecodeKernelMode mode) { stream_mode_slot().store(static_cast<int>(mode)); }

DecodeKernelMode decode_run_mode() { return static_cast<DecodeKernelMode>(run_mode_slot().load()); }

void set_decode_run_mode(DecodeKernelMode mode) { run_mode_slot().store(static_cast<int>(mode)); }

bool decode_greedy_tail_enabled() { return greedy_tail_slot().load(); }

void set_decode_greedy_tail(bool on) { greedy_tail_slot().store(on); }

bool decode_embed_kernel_enabled() { return embed_slot().load(); }

void set_decode_embed_kernel(bool on) { embed_slot().store(on); }

DecodeClusterSetting decode_attention_cluster() { return {cluster_limit_slot().load(), cluster_batch_slot().load()}; }

void set_decode_attention_cluster(DecodeClusterSetting setting) {
  cluster_limit_slot().store(std::max(0, std::min(setting.limit, 16)));
  cluster_batch_slot().store(std::max<int64_t>(0, setting.max_batch));
}

at::Tensor decode_linear(const at::Tensor& x, const std::vector<at::Tensor>& weights, const at::Tensor& bias,
                         DecodeAct act, const at::Tensor& residual, const DecodeNorm& norm) {
  if (weights.empty() || weights.size() > 3 || (act == DecodeAct::kSwiglu && weights.size() != 2)) {
    throw std::invalid_argument("decode_linear: one to three weight blocks, or two (gate, up) for SwiGLU");
  }
  if (act == DecodeAct::kSwiglu && bias.defined()) throw std::invalid_argument("decode_linear: SwiGLU takes no bias");
  if (at::Tensor y = cuda_ops::try_decode_linear(x, weights, bias, act, residual, norm); y.defined()) return y;
  if (norm.weight.defined()) {
    return linear_aten(decode_norm(x, norm.weight, norm.bias, norm.eps, norm.rms && !norm.bias.defined()), weights,
                       bias, act, residual);
  }
  return linear_aten(x, weights, bias, act, residual);
}

bool decode_lm_head_greedy(const at::Tensor& x, const at::Tensor& weight, const DecodeNorm& norm,
                           const DecodeGreedy& g) {
  return cuda_ops::try_decode_lm_head_greedy(x, weight, norm, g);
}

at::Tensor decode_qkv_linear_to_cache(const at::Tensor& x, const std::vector<at::Tensor>& weights,
                                      const at::Tensor& bias, const DecodeNorm& norm, int64_t q_heads,
                                      int64_t kv_heads, const at::Tensor& cos, const at::Tensor& sin,
                                      const at::Tensor& pos, at::Tensor& k_cache, at::Tensor& v_cache,
                                      const at::Tensor& used_k) {
  return cuda_ops::try_decode_qkv_linear_to_cache(x, weights, bias, norm, q_heads, kv_heads, cos, sin, pos, k_cache,
                                                 v_cache, used_k);
}

at::Tensor decode_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps, bool rms) {
  const int64_t dim = x.size(-1);
  if (at::Tensor y = cuda_ops::try_decode_norm(x, weight, bias, eps, rms); y.defined()) return y;
  if (rms) return at::rms_norm(x, {dim}, weight, eps);
  return at::layer_norm(x, {dim}, weight, bias, eps);
}

at::Tensor decode_embed(const at::Tensor& ids, const at::Tensor& table, const at::Tensor& pos_table,
                        const at::Tensor& pos) {
  const int64_t m = ids.numel();
  if (at::Tensor y = cuda_ops::try_decode_embed(ids, table, pos_table, pos); y.defined()) return y;
  at::Tensor h = table.index_select(0, ids.reshape({m}));
  return pos_table.defined() ? h + pos_table.index_select(0, pos.reshape({1})) : h;
}

at::Tensor decode_argmax(const at::Tensor& logits) {
  if (at::Tensor y = cuda_ops::try_decode_argmax(logits); y.defined()) return y;
  return logits.argmax(-1, /*keepdim=*/true);
}

int64_t decode_attention_min_split() { return min_split_slot().load(); }

void set_decode_attention_min_split(int64_t positions) { min_split_slot().store(std::max<int64_t>(1, positions)); }

at::Tensor decode_attention(const at::Tensor& q, const at::Tensor& k_cache, const at::Tensor& v_cache,
                            const at::Tensor& pos, int64_t window, const at::Tensor& counters) {
  return cuda_ops::try_decode_attention(q, k_cache, v_cache, pos, window, counters);
}

at::Tensor decode_qkv_attention(const at::Tensor& qkv, int64_t q_heads, int64_t kv_heads, const at::Tensor& pos,
                                int64_t window, at::Tensor& k_cache, at::Tensor& v_cache, const at::Tensor& used_k) {
  return cuda_ops::try_decode_qkv_attention(qkv, q_heads, kv_heads, pos, window, k_cache, v_cache, used_k);
}

at::Tensor decode_qkv_to_cache(const at::Tensor& qkv, int64_t q_heads, int64_t kv_heads, const at::Tensor& cos,
                               const at::Tensor& sin, const at::Tensor& pos, at::Tensor& k_cache, at::Tensor& v_cache,
                               const at::Tensor& used_k) {
  const int64_t b = qkv.size(0), d = k_cache.size(3);
  if (qkv.dim() != 2 || qkv.size(1) != (q_heads + 2 * kv_heads) * d || k_cache.size(2) != kv_heads || d % 2 != 0) {
    throw std::invalid_argument("decode_qkv_to_cache: qkv must be [batch, (q_heads + 2 kv_heads) x head_dim] over a "
                                "cache [batch, positions, kv_heads, even head_dim]");
  }
  if (at::Tensor q = cuda_ops::try_decode_qkv_to_cache(qkv, q_heads, kv_heads, cos, sin, pos, k_cache, v_cache, used_k);
      q.defined()) {
    return q;
  }
  at::Tensor q = qkv.narrow(1, 0, q_heads * d).view({b, q_heads, d});
  at::Tensor k = qkv.narrow(1, q_heads * d, kv_heads * d).view({b, kv_heads, d});
  const at::Tensor v = qkv.narrow(1, (q_heads + kv_heads) * d, kv_heads * d).view({b, kv_heads, d});
  if (cos.defined()) {  // the training path's rotary (fused_ops.h) on one position: [batch, 1, heads, d]
    auto [qr, kr] = rotary(q.unsqueeze(1), k.unsqueeze(1), cos.index_select(0, pos),
                           sin.index_select(0, pos));
    q = qr.squeeze(1);
    k = kr.squeeze(1);
  }
  k_cache.index_copy_(1, pos, k.unsqueeze(1).to(k_cache.scalar_type()));
  v_cache.index_copy_(1, pos, v.unsqueeze(1).to(v_cache.scalar_type()));
  if (used_k.defined()) used_k.copy_(pos.add(1).expand_as(used_k));
  return q.contiguous();
}

}  // namespace gpubench::engine::fused
