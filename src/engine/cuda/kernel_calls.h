#pragma once
// The CUDA module's kernels as operations on tensors: what the engine's torch-side operations (fused/fused_ops.cpp,
// fused/batch_norm_ops.cpp, decode/decode_ops.cpp, fp8.cpp, fused/fusion_catalog.cpp) call where launch::on_kernels
// holds, beside their ATen forms. ATen types only: no CUDA header reaches a caller. Defined by the module
// (cuda/fused_calls.cpp, cuda/decode_calls.cpp) and by cuda/without_cuda.cpp, where the operations that
// launch::on_kernels never lets run throw and the ones that may decline ("try_") decline.

#include <ATen/ATen.h>

#include <string>
#include <utility>
#include <vector>

#include "decode/decode_ops.h"
#include "gpubench/core/record/run_record.hpp"

namespace gpubench::engine::fused::cuda_ops {

// ---- training's fused operations (fused_ops.cpp); each needs launch::on_kernels of its first tensor -------------

/// The loss rows of one chunk of tokens into `loss_rows` and the gradient of its logits (hr [rows, hidden] against
/// the padded weight w), in hr's dtype.
at::Tensor softmax_cross_entropy_grad(const at::Tensor& hr, const at::Tensor& w, const at::Tensor& targets,
                                      int64_t vocab, int64_t ignore_index, const at::Tensor& inv_count,
                                      const at::Tensor& loss_rows);
/// silu(gate) * up; `fp8_amax`: its amax noted for the FP8 layer that reads it.
at::Tensor swiglu_forward(const at::Tensor& gate, const at::Tensor& up, bool fp8_amax);
/// SwiGLU's gradients {d_gate, d_up}.
std::pair<at::Tensor, at::Tensor> swiglu_backward(const at::Tensor& gate, const at::Tensor& up, const at::Tensor& d,
                                                  bool fp8_amax);
/// Rotary embeddings on q and k (or their transpose), tables [seq, head_dim].
std::pair<at::Tensor, at::Tensor> rotary(const at::Tensor& q, const at::Tensor& k, const at::Tensor& cos,
                                         const at::Tensor& sin, bool inverse, bool fp8_amax);
/// Whether the LayerNorm / RMSNorm row kernels take rows of n (false without the module).
bool layer_norm_rows(int64_t n, bool aligned);
bool rms_norm_rows(int64_t n, bool aligned);
/// The column sums of g [rows, n] in fp32.
at::Tensor column_sum(const at::Tensor& g);

/// dropout(y) + r and LayerNorm over rows of n (g, b fp32): the stream, its norm, dropout's mask, the row statistics.
struct AddNormTensors {
  at::Tensor s, out, keep, mean, rstd;
};
AddNormTensors dropout_add_layer_norm(const at::Tensor& y, const at::Tensor& r, const at::Tensor& g,
                                      const at::Tensor& b, double p, double eps);
/// Its backward pass: the stream's, y's (after dropout's mask), gamma's, beta's gradients and y's column sums.
struct AddNormGradTensors {
  at::Tensor d_s, d_y, d_gamma, d_beta, d_bias;
};
AddNormGradTensors dropout_add_layer_norm_backward(const at::Tensor& d_out, const at::Tensor& d_extra,
                                                   const at::Tensor& s, const at::Tensor& mean, const at::Tensor& rstd,
                                                   const at::Tensor& keep, const at::Tensor& g, double p);
/// GELU's gradient d_act * gelu'(pre) and its column sums (fp32), in one pass.
std::pair<at::Tensor, at::Tensor> gelu_backward_bias(const at::Tensor& d_act, const at::Tensor& pre, bool tanh_approx);
/// s = y + r and RMSNorm(s) * g with its row statistics.
struct RmsNormTensors {
  at::Tensor s, out, rstd;
};
RmsNormTensors add_rms_norm(const at::Tensor& y, const at::Tensor& r, const at::Tensor& g, double eps, bool fp8_amax);
/// Its backward pass: {d_s, d_gamma}.
std::pair<at::Tensor, at::Tensor> add_rms_norm_backward(const at::Tensor& d_out, const at::Tensor& d_extra,
                                                        const at::Tensor& s, const at::Tensor& g,
                                                        const at::Tensor& rstd, bool fp8_amax);
/// x[..., :m] * gelu(x[..., m:]) and its gradient.
at::Tensor geglu(const at::Tensor& x);
at::Tensor geglu_backward(const at::Tensor& x, const at::Tensor& d);
/// cuBLASLt's GEMM with bias + GELU in its epilogue (act, and the pre-activation kept): false where it declines.
bool try_gemm_gelu_aux_bias(const at::Tensor& a, const at::Tensor& w, const at::Tensor& bias, at::Tensor& act,
                            at::Tensor& pre);
/// cuBLASLt's GEMM dy w with GELU's derivative at `pre` and the bias gradient in its epilogue: false where it declines.
bool try_gemm_dgelu_bgrad(const at::Tensor& dy, const at::Tensor& w, const at::Tensor& pre, at::Tensor& d_pre,
                          at::Tensor& d_bias);
/// A new run of the module's kernels: cuBLASLt forgets what it declined.
void begin_run();
/// What the module's kernels did in the run, added to its `fusions`' notes; the record's note ("" if none).
std::string describe_after_run(std::vector<FusionRecord>& fusions);
/// What only this process can tell about decode operation `name` ("" without the module).
std::string decode_choices_this_run(const std::string& name);

// ---- ResNet's (batch_norm_ops.cpp): undefined, with why (empty without the module), where the kernels decline ----

at::Tensor try_batch_norm_act(const at::Tensor& x, const at::Tensor& z, const at::Tensor& weight,
                              const at::Tensor& bias, const at::Tensor& running_mean, const at::Tensor& running_var,
                              bool training, double momentum, double eps, bool relu, std::string& why);
at::Tensor try_max_pool2d(const at::Tensor& x, int64_t kernel, int64_t stride, int64_t padding, std::string& why);

// ---- FP8 (fp8.cpp) -------------------------------------------------------------------------------------------------

/// Whether t's device's current stream is capturing a CUDA graph (false without the module).
bool stream_capturing(const at::Tensor& t);
/// max |x| of a contiguous x into `out` (one fp32 element, zeroed).
void fp8_amax(const at::Tensor& x, const at::Tensor& out);
/// The scaled saturating cast of a contiguous 2-D x by its amax into `data` and/or `data_t` (either undefined), the
/// inverse scale into `inv_scale`.
void fp8_cast(const at::Tensor& x, bool e5m2, const at::Tensor& amax, const at::Tensor& data, const at::Tensor& data_t,
              const at::Tensor& inv_scale);
/// Whether the cast kernel takes x (rows of blocks per 64 rows: at most 65,535 of them).
bool fp8_cast_takes(const at::Tensor& x);
/// One weight of the many-tensor amax-and-cast: its row-major source, amax slot, both layouts' outputs (e4m3) and
/// inverse scale.
struct Fp8CastTarget {
  at::Tensor source, amax, rows_major, cols_major, inv_scale;
};
/// The kernels' job table on the device for `targets` (kept by the caller with its buffers) and its sizes.
struct Fp8CastTable {
  at::Tensor table;
  int64_t jobs = 0, amax_blocks = 0, tiles = 0;
};
Fp8CastTable fp8_cast_table(const std::vector<Fp8CastTarget>& targets);
/// Every job's amax and cast, in two launches; `like` one of the sources (dtype, device).
void fp8_amax_cast_many(const Fp8CastTable& table, const at::Tensor& like);

// ---- generation's decode step (decode_ops.cpp): undefined / false where the kernels decline -----------------------

at::Tensor try_decode_linear(const at::Tensor& x, const std::vector<at::Tensor>& weights, const at::Tensor& bias,
                             DecodeAct act, const at::Tensor& residual, const DecodeNorm& norm);
bool try_decode_lm_head_greedy(const at::Tensor& x, const at::Tensor& weight, const DecodeNorm& norm,
                               const DecodeGreedy& g);
at::Tensor try_decode_qkv_linear_to_cache(const at::Tensor& x, const std::vector<at::Tensor>& weights,
                                          const at::Tensor& bias, const DecodeNorm& norm, int64_t q_heads,
                                          int64_t kv_heads, const at::Tensor& cos, const at::Tensor& sin,
                                          const at::Tensor& pos, at::Tensor& k_cache, at::Tensor& v_cache,
                                          const at::Tensor& used_k);
at::Tensor try_decode_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps, bool rms);
at::Tensor try_decode_embed(const at::Tensor& ids, const at::Tensor& table, const at::Tensor& pos_table,
                            const at::Tensor& pos);
at::Tensor try_decode_argmax(const at::Tensor& logits);
at::Tensor try_decode_attention(const at::Tensor& q, const at::Tensor& k_cache, const at::Tensor& v_cache,
                                const at::Tensor& pos, int64_t window, const at::Tensor& counters);
at::Tensor try_decode_qkv_attention(const at::Tensor& qkv, int64_t q_heads, int64_t kv_heads, const at::Tensor& pos,
                                    int64_t window, at::Tensor& k_cache, at::Tensor& v_cache, const at::Tensor& used_k);
at::Tensor try_decode_qkv_to_cache(const at::Tensor& qkv, int64_t q_heads, int64_t kv_heads, const at::Tensor& cos,
                                   const at::Tensor& sin, const at::Tensor& pos, at::Tensor& k_cache,
                                   at::Tensor& v_cache, const at::Tensor& used_k);

}  // namespace gpubench::engine::fused::cuda_ops
