#pragma once
// `kernels: fused` in mode: generate: one decode step's operations, each a kernel of decode_kernels.cu on CUDA in
// bf16/fp16, and the same mathematics with ATen operations elsewhere (the CPU, fp32, shapes the kernels do not
// take). Inference only (no autograd). Tests hold the kernels to the ATen forms (decode_ops_test).

#include <ATen/ATen.h>

#include <vector>

namespace gpubench::engine::fused {

enum class DecodeAct { kNone, kGeluTanh, kSwiglu };

/// Where decode_linear uses one of its sm_90 GEMVs: nowhere, where it measured faster (the default), or on every
/// product it can take: kernel_options.decode_stream and decode_run off / auto / on (the engine sets them for each
/// run; the tests run every setting).
enum class DecodeKernelMode { kOff, kWherePays, kEverywhere };
DecodeKernelMode decode_stream_mode();
void set_decode_stream_mode(DecodeKernelMode mode);
DecodeKernelMode decode_run_mode();
void set_decode_run_mode(DecodeKernelMode mode);

/// Where decode_attention (and decode_qkv_attention) use the cluster form (sm_90): clusters of at most `limit`
/// splits (0: never; 8, the portable cluster size, by default; kernel_options.attention_cluster_splits sets it), for at most `max_batch` sequences (1: on the H200 it made TinyLlama's step 1.09x as fast at one sequence but
/// 0.98x and 0.94x at 4 and 8, f77cd0e:results/2026-12-03-h200-decode-attn-cluster). Elsewhere the form whose last block
/// combines runs. The setter changes both (the tests run every form).
struct DecodeClusterSetting {
  int limit = 8;
  int64_t max_batch = 1;
};
DecodeClusterSetting decode_attention_cluster();
void set_decode_attention_cluster(DecodeClusterSetting setting);

/// A norm of decode_linear's input (RMSNorm when `bias` is undefined and `rms`, else LayerNorm); none when `weight`
/// is undefined. On the kernel path every block of the GEMV computes it (no kernel of its own).
struct DecodeNorm {
  at::Tensor weight, bias;
  double eps = 1e-5;
  bool rms = true;
};

/// act(x @ W^T + bias) + residual for x [m, k]. `weights`: one or more [n_i, k] blocks whose outputs are
/// concatenated (q, k and v as one product), or for kSwiglu two equal blocks (gate, up) giving silu(x @ gate^T) *
/// (x @ up^T). `bias` [n] and `residual` [m, n] may be undefined. On CUDA sm_90 and later, one token: over 8 MiB of
/// weights or more (TinyLlama's output, gate/up and down products, both LM heads) the run GEMV, else over rows of at
/// least 2,048 and 8 MiB or more the streamed GEMV (decode_kernels.h; it also takes TinyLlama's q/k/v product with
/// the cache write, decode_qkv_cache; both round the norm's output to the storage type, as the norm module does;
/// kernel_options.decode_run / decode_stream: on sends them every product they serve); else gpubench's per-warp GEMV (one pass over
/// the weights, the epilogue in registers) where it is the faster on the H200: one token on every product but a large
/// plain one, 2 to 8 tokens over rows of at most 1,024; cuBLAS with ATen's epilogues otherwise.
at::Tensor decode_linear(const at::Tensor& x, const std::vector<at::Tensor>& weights, const at::Tensor& bias,
                         DecodeAct act, const at::Tensor& residual, const DecodeNorm& norm = {});

/// decode_linear of x against the q, k and v weights (with `bias` and `norm`) followed by decode_qkv_to_cache, as one
/// kernel (the streamed GEMV writes q, the rotated k and v straight to their places): q [m, q_heads, head_dim], or
/// undefined where decode_linear would not send the product to that kernel (not CUDA sm_90 bf16/fp16, shapes it
/// does not take or where it is not the faster); the caller takes the two-step path then.
at::Tensor decode_qkv_linear_to_cache(const at::Tensor& x, const std::vector<at::Tensor>& weights,
                                      const at::Tensor& bias, const DecodeNorm& norm, int64_t q_heads,
                                      int64_t kv_heads, const at::Tensor& cos, const at::Tensor& sin,
                                      const at::Tensor& pos, at::Tensor& k_cache, at::Tensor& v_cache,
                                      const at::Tensor& used_k);

/// RMSNorm (`bias` undefined, `rms`) or LayerNorm of x [m, dim] with `weight` (and `bias`), eps.
at::Tensor decode_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps, bool rms);

/// The decode step's input rows: the embeddings `table` [vocab, dim] of ids [m, 1] (int64), plus pos_table's row at
/// `pos` when pos_table is defined (GPT-2's learned positions) -> [m, dim], as table.index_select(0, ids) + that row.
/// One kernel on CUDA bf16/fp16 (launched programmatically, so the first product's weights stream in during it; an
/// id outside the table gives a zero row there), ATen's operations elsewhere or with kernel_options.decode_embed
/// false (the setter changes it).
at::Tensor decode_embed(const at::Tensor& ids, const at::Tensor& table, const at::Tensor& pos_table,
                        const at::Tensor& pos);
bool decode_embed_kernel_enabled();
void set_decode_embed_kernel(bool on);

/// Greedy decoding: the index of each row's largest logit (the first of equal ones), logits [m, vocab] -> int64
/// [m, 1], as logits.argmax(-1, keepdim=true).
at::Tensor decode_argmax(const at::Tensor& logits);

/// Where a greedy decode step's token goes (generate's buffers): `token` [m, 1] (the next step's input), `history`
/// [m, fresh] at column *pos - history_offset, and `pos` (one int64, on the device) moved on by one; all int64 on
/// the LM head's device. `scratch`: int64 [m + 1], zero (KvCache holds it; each launch leaves it zero).
struct DecodeGreedy {
  at::Tensor token, history, pos, scratch;
  int64_t history_offset = 0;
};

/// Whether decode_lm_head_greedy may run its kernel: on unless kernel_options.decode_greedy_tail is false (for
/// measuring what it buys); the setter changes it (the tests run both).
bool decode_greedy_tail_enabled();
void set_decode_greedy_tail(bool on);

/// The end of a greedy decode step in one launch where the run GEMV takes the LM head (CUDA sm_90, bf16/fp16, one
/// token per sequence, the sizes decode_linear sends it): x [m, k] (after `norm`) against `weight` [vocab, k], each
/// row's argmax (the first largest logit, as decode_argmax) written to g.token and g.history, and g.pos moved on, in
/// the GEMV's last block. False, with nothing run, elsewhere: the caller takes decode_linear and decode_argmax.
bool decode_lm_head_greedy(const at::Tensor& x, const at::Tensor& weight, const DecodeNorm& norm,
                           const DecodeGreedy& g);

/// The least positions a split of decode_attention covers: kernel_options.attention_min_split (64 by default;
/// another count measures the rule). The setter changes it.
int64_t decode_attention_min_split();
void set_decode_attention_min_split(int64_t positions);

/// Decode attention of q [batch, q_heads, head_dim] over the first pos + 1 positions (at most `window`) of the
/// caches [batch, positions, kv_heads, head_dim] by gpubench's split kernel: on sm_90 its cluster form (the splits
/// combined in distributed shared memory), else the form whose last block combines, with `counters` (int32 [batch x
/// kv_heads], zero; KvCache holds them). Undefined where the kernel does not serve (not CUDA bf16/fp16, head_dim not
/// 64 or 128, a cache of another dtype, more than 8 sequences): the caller attends by its own path then.
at::Tensor decode_attention(const at::Tensor& q, const at::Tensor& k_cache, const at::Tensor& v_cache,
                            const at::Tensor& pos, int64_t window, const at::Tensor& counters);

/// decode_qkv_to_cache then decode_attention in one launch, for a q/k/v product without rotary embeddings (GPT-2):
/// the cluster form reads q and the new k and v straight from qkv [batch, (q_heads + 2 kv_heads) head_dim], writes
/// k and v into the caches at `pos` (and used_k, when defined, to pos + 1) and returns the attention's output [batch,
/// q_heads, head_dim]. Undefined where it does not serve (no cluster form here, other dtypes or layouts): nothing
/// is written then, and the caller takes decode_qkv_to_cache and decode_attention.
at::Tensor decode_qkv_attention(const at::Tensor& qkv, int64_t q_heads, int64_t kv_heads, const at::Tensor& pos,
                                int64_t window, at::Tensor& k_cache, at::Tensor& v_cache, const at::Tensor& used_k);

/// One token per sequence: qkv [batch, (q_heads + 2 kv_heads) head_dim] split into q, k, v; rotary embeddings on q
/// and k at position `pos` (a one-element int64 device tensor) when `cos`, `sin` ([positions, head_dim]) are
/// defined; k and v written into `k_cache`, `v_cache` [batch, positions, kv_heads, head_dim] at pos, and, when
/// `used_k` (int32 [batch]) is defined, used_k = pos + 1. Returns q [batch, q_heads, head_dim].
at::Tensor decode_qkv_to_cache(const at::Tensor& qkv, int64_t q_heads, int64_t kv_heads, const at::Tensor& cos,
                               const at::Tensor& sin, const at::Tensor& pos, at::Tensor& k_cache, at::Tensor& v_cache,
                               const at::Tensor& used_k);

}  // namespace gpubench::engine::fused
