#pragma once
// gpubench's CUDA kernels for one decode step of mode: generate with `kernels: fused` (docs/generate.md), torch-free
// like fused_kernels.h. A decode step reads every weight once for a handful of tokens, so what it costs is memory
// traffic and the number of kernels: these do a layer in six launches (q/k/v GEMV with the input norm, rotary + cache
// write, attention, output GEMV + residual, gate/up GEMV with the norm + SwiGLU, down GEMV + residual) instead of
// ATen's ~45, each launched programmatically on sm_90 and later (it starts, and requests its weights, while the
// kernel before it finishes; kernel_options.decode_pdl: false switches that off).
// All compute in fp32 over bf16 or fp16 storage (DType from fused_kernels.h; fp32 storage is not served here).

#include <cstdint>

#include <cuda_runtime_api.h>

#include "cuda/fused_kernels.h"

namespace gpubench::engine::fused {

/// Whether the decode kernels are launched programmatically on the current device (sm_90 and later, unless
/// kernel_options.decode_pdl is false).
bool decode_programmatic_launch();
/// Whether the streamed and run GEMVs load their weights with L2's evict_first priority (read once a step, they then
/// leave the KV cache, the activations and the small tables in L2): yes unless kernel_options.decode_evict_first is
/// false.
bool decode_weights_evict_first();
/// Sets the two above for the runs that follow (the engine, from the scenario's kernel_options).
void set_decode_launch_options(bool programmatic, bool evict_first);

/// The most rows (tokens) one GEMV launch serves; more go to cuBLAS.
constexpr int64_t kDecodeGemvMaxRows = 8;

/// What a GEMV applies to x W^T (+ bias) before the residual.
enum class DecodeActivation : int { kNone = 0, kGeluTanh = 1, kSwiglu = 2 };

/// Up to three weight blocks, each [rows_i, k] row-major, whose outputs are concatenated (q, k, v); with kSwiglu
/// exactly two of equal rows (gate, up), and output j is silu(x . gate_j) * (x . up_j).
struct DecodeWeights {
  const void* w[3] = {nullptr, nullptr, nullptr};
  int64_t rows[3] = {0, 0, 0};
  int count = 0;
};

/// A norm the GEMV applies to its input rows first (RMSNorm: bias null and `rms`; LayerNorm: mean and variance),
/// with `weight` (and `bias`) of k elements; none when weight is null.
struct DecodeInputNorm {
  const void* weight = nullptr;
  const void* bias = nullptr;
  float eps = 1e-5f;
  bool rms = true;
};

/// out[r, j] = act(norm(x[r]) . W_j + bias[j]) + residual[r, j] for r < m (m <= kDecodeGemvMaxRows). x [m, k] with row
/// stride ldx, out and residual [m, n] contiguous (n the outputs: the blocks' rows summed, or one block's with
/// kSwiglu). bias and residual may be null. Needs k, ldx multiples of 8 and 16-byte aligned x and weights
/// (decode_gemv_fits says whether they are). `split`: warps per output (1, 2, 4 or 8; 0 chooses from n and k).
cudaError_t launch_decode_gemv(const void* x, int64_t ldx, const DecodeWeights& weights, const void* bias,
                               const void* residual, void* out, DType dtype, int64_t m, int64_t n, int64_t k,
                               DecodeActivation act, cudaStream_t stream, int split = 0,
                               const DecodeInputNorm& norm = DecodeInputNorm{});
bool decode_gemv_fits(const void* x, int64_t ldx, const DecodeWeights& weights, int64_t k);

/// The streamed GEMV (sm_90 and later): one block an SM, each streaming its run of weight rows through a ring of
/// shared memory by bulk asynchronous copies, ~100 KB of them requested before the wait for the previous kernel
/// (decode_kernels.cu). The same results as launch_decode_gemv for m <= kDecodeStreamMaxRows, but the input norm's
/// output rounded to the storage type as the norm's module returns it. decode_stream_serves says whether it can run
/// here for m rows of k with one weight row per output (two for SwiGLU's gate and up, or a rotary pair);
/// decode_ops decides which products it takes (decode_stream_mode).
constexpr int64_t kDecodeStreamMaxRows = 4;
bool decode_stream_available();
bool decode_stream_serves(int64_t m, int64_t k, int rows_per_output);
cudaError_t launch_decode_stream_gemv(const void* x, int64_t ldx, const DecodeWeights& weights, const void* bias,
                                      const void* residual, void* out, DType dtype, int64_t m, int64_t n, int64_t k,
                                      DecodeActivation act, cudaStream_t stream,
                                      const DecodeInputNorm& norm = DecodeInputNorm{});

/// The run GEMV (sm_90 and later): two blocks an SM, each warp streaming its own contiguous run of weight
/// rows straight into registers (four 16-byte loads a lane in flight, the next four issued before they are used),
/// x normalized in shared memory as in the streamed GEMV (decode_kernels.cu). The same results as
/// launch_decode_stream_gemv; for the large products of one token, where it reads faster than the streamed GEMV
/// (f77cd0e:results/2026-12-02-h200-decode-gemv-bench). decode_run_serves: m <= kDecodeStreamMaxRows rows of k (m k 16-bit
/// values in shared memory: at most 96 KB), one or two weight rows per output; decode_ops decides (decode_run_mode).
bool decode_run_serves(int64_t m, int64_t k, int rows_per_output);
cudaError_t launch_decode_run_gemv(const void* x, int64_t ldx, const DecodeWeights& weights, const void* bias,
                                   const void* residual, void* out, DType dtype, int64_t m, int64_t n, int64_t k,
                                   DecodeActivation act, cudaStream_t stream,
                                   const DecodeInputNorm& norm = DecodeInputNorm{});

/// Where the q/k/v product of one token per sequence goes: q (rotated when cos and sin, [positions, head_dim]
/// tables, are given) to q_out [m, q_heads, head_dim], k (rotated) and v into the caches [m, positions, kv_heads,
/// head_dim] at *pos (a device int64); used_k (int32 [m]), when given, becomes *pos + 1.
struct DecodeCacheWrite {
  const void* cos = nullptr;
  const void* sin = nullptr;
  const int64_t* pos = nullptr;
  void* q_out = nullptr;
  void* k_cache = nullptr;
  void* v_cache = nullptr;
  int* used_k = nullptr;
  int64_t positions = 0, q_heads = 0, kv_heads = 0, head_dim = 0;
};

/// The streamed GEMV of x against the q, k and v weights ((q_heads + 2 kv_heads) head_dim rows in all, + bias),
/// each rotary pair of rows (e, e + head_dim / 2) of a head in one warp, written by launch_decode_qkv_to_cache's rule
/// without the product ever reaching memory: one launch for both. Needs decode_stream_serves(m, k, 2).
cudaError_t launch_decode_stream_qkv_to_cache(const void* x, int64_t ldx, const DecodeWeights& weights,
                                              const void* bias, const DecodeCacheWrite& cache, DType dtype, int64_t m,
                                              int64_t k, cudaStream_t stream,
                                              const DecodeInputNorm& norm = DecodeInputNorm{});

/// Row norm over `rows` rows of `dim`: RMSNorm (bias null, `rms`) y = x / sqrt(mean(x^2) + eps) * w, or LayerNorm
/// y = (x - mean) / sqrt(var + eps) * w + b. x and y [rows, dim] contiguous.
cudaError_t launch_decode_norm(const void* x, const void* weight, const void* bias, void* y, DType dtype, int64_t rows,
                               int64_t dim, float eps, bool rms, cudaStream_t stream);

/// The decode step's input: out[r] = table[ids[r]] (+ pos_table[*pos], GPT-2's learned positions, when given) for
/// `rows` rows of `dim` (a multiple of 8; table, pos_table and out 16-byte aligned), summed in fp32 and rounded once;
/// an id outside [0, vocab) gives a zero row. One launch, programmatic where the device allows.
cudaError_t launch_decode_embed(const int64_t* ids, const void* table, int64_t vocab, const void* pos_table,
                                const int64_t* pos, void* out, DType dtype, int64_t rows, int64_t dim,
                                cudaStream_t stream);

/// Greedy decoding's choice: out[r] = the first index of the largest of logits[r, 0..n) (NaN largest, as
/// torch.argmax), for `rows` contiguous rows, in two small launches (slices of each row, then the rows); scratch of
/// decode_argmax_scratch(rows) floats and int64s.
int64_t decode_argmax_scratch(int64_t rows);
cudaError_t launch_decode_argmax(const void* logits, DType dtype, int64_t rows, int64_t n, float* scratch_v,
                                 int64_t* scratch_i, int64_t* out, cudaStream_t stream);

/// Greedy decoding's whole tail in the LM head's run GEMV (launch_decode_run_gemv_greedy): besides the logits, the
/// first index of each row's largest logit (as stored, NaN largest: torch.argmax's choice) goes to token[r] and to
/// history[r * history_ld + *pos - history_offset] (when that column is in [0, history_ld)), and *pos moves on by
/// one, so that the step ends with the LM head's launch (no argmax launches, no copies). Each block folds its rows'
/// best into scratch with 64-bit atomics and the last block to finish writes the token; `scratch`
/// (decode_greedy_scratch(m) int64s) must be zero before the first launch, and each launch leaves it zero.
struct DecodeGreedyTail {
  int64_t* token = nullptr;    ///< [m]
  int64_t* history = nullptr;  ///< [m, history_ld]
  int64_t history_ld = 0, history_offset = 0;
  int64_t* pos = nullptr;  ///< one element
  int64_t* scratch = nullptr;
};
int64_t decode_greedy_scratch(int64_t m);
/// launch_decode_run_gemv of a plain product (no bias, no residual, one weight block) with the greedy tail; needs
/// decode_run_serves(m, k, 1). `logits` [m, n] receives the product.
cudaError_t launch_decode_run_gemv_greedy(const void* x, int64_t ldx, const void* weight, void* logits, DType dtype,
                                          int64_t m, int64_t n, int64_t k, const DecodeGreedyTail& tail,
                                          cudaStream_t stream, const DecodeInputNorm& norm = DecodeInputNorm{});

/// Decode attention: q [batch, q_heads, head_dim] (one token per sequence) over the first *pos + 1 positions of the
/// caches [batch, positions, kv_heads, head_dim], softmax(q k^T / sqrt(head_dim)) v to out [batch, q_heads,
/// head_dim], in one launch split over positions (`splits` of `per_split`, from decode_attention_splits for the
/// attention window). part_acc [batch, q_heads, splits, head_dim] and part_ml [batch, q_heads, splits, 2] are fp32
/// scratch; counters [batch x kv_heads] int32 must be zero (each launch leaves them zero).
bool decode_attention_serves(int64_t q_heads, int64_t kv_heads, int64_t head_dim);
/// The most sequences decode_ops sends to it (FlashAttention beyond).
constexpr int64_t kDecodeAttentionMaxBatch = 8;
/// Splits: about 256 blocks in all, each over at least min_per_split positions (kDecodeAttentionMinPerSplit by
/// default: a whole tile at head_dim 64, and fewer splits for the last block to combine) and at most 256, within
/// what the combine holds. 64 against the 16 before: TinyLlama's batch-1 step 1.127 ms against 1.213 and GPT-2's
/// 0.327 against 0.338 on the H200 (f77cd0e:results/2026-12-02-h200-decode-run-gemv).
constexpr int64_t kDecodeAttentionMinPerSplit = 64;
void decode_attention_splits(int64_t batch, int64_t q_heads, int64_t kv_heads, int64_t window, int* splits,
                             int* per_split, int64_t min_per_split = kDecodeAttentionMinPerSplit);
cudaError_t launch_decode_attention(const void* q, const void* k_cache, const void* v_cache, const int64_t* pos,
                                    void* out, float* part_acc, float* part_ml, int* counters, DType dtype,
                                    int64_t batch, int64_t positions, int64_t q_heads, int64_t kv_heads,
                                    int64_t head_dim, int splits, int per_split, cudaStream_t stream);

/// The cluster form of decode attention (sm_90 and later): one thread block cluster of `splits` blocks per (sequence,
/// kv head), a block per split of `per_split` positions held whole in shared memory (copied before the wait for the
/// previous kernel, the new position's row again after it), the splits combined through the cluster's distributed
/// shared memory. No scratch, no counters. Whether it serves (the device, the shapes, `window` positions within the
/// shared memory a block may have), with its splits: about window / min_per_split, at most max_cluster (0: never;
/// 8, the default, is the portable cluster size; up to 16), more only where a split would not fit.
constexpr int kDecodeAttentionMaxCluster = 8;
bool decode_attention_cluster_plan(int64_t q_heads, int64_t kv_heads, int64_t head_dim, int64_t window, int* splits,
                                   int* per_split, int64_t min_per_split = kDecodeAttentionMinPerSplit,
                                   int max_cluster = kDecodeAttentionMaxCluster);
/// What the cluster form reads: q (batch rows q_stride apart, [q_heads, head_dim] each) and the caches; and, where
/// no kernel before it wrote the new token's k and v into the cache, fresh_k / fresh_v (rows fresh_stride apart,
/// [kv_heads, head_dim] each, 16-byte aligned): it then writes them into the caches at *pos itself, and sets used_k
/// (int32 [batch], FlashAttention's keys in use) to *pos + 1 when given.
struct DecodeAttentionInput {
  const void* q = nullptr;
  int64_t q_stride = 0;
  void* k_cache = nullptr;
  void* v_cache = nullptr;
  const void* fresh_k = nullptr;
  const void* fresh_v = nullptr;
  int64_t fresh_stride = 0;
  int* used_k = nullptr;
};
cudaError_t launch_decode_attention_cluster(const DecodeAttentionInput& in, const int64_t* pos, void* out, DType dtype,
                                            int64_t batch, int64_t positions, int64_t q_heads, int64_t kv_heads,
                                            int64_t head_dim, int splits, int per_split, cudaStream_t stream);

/// One token's q, k and v into the cache: qkv [batch, (q_heads + 2 kv_heads) * head_dim] (q, then k, then v);
/// rotary embeddings on q and k at position *pos (a device int64) when cos and sin ([positions, head_dim] tables)
/// are given; q to q_out [batch, q_heads, head_dim], k and v to the caches [batch, positions, kv_heads, head_dim] at
/// *pos. When used_k is given (int32 [batch]), it becomes *pos + 1 (FlashAttention's keys in use).
cudaError_t launch_decode_qkv_to_cache(const void* qkv, const void* cos, const void* sin, const int64_t* pos,
                                       void* q_out, void* k_cache, void* v_cache, int* used_k, DType dtype,
                                       int64_t batch, int64_t positions, int64_t q_heads, int64_t kv_heads,
                                       int64_t head_dim, cudaStream_t stream);

}  // namespace gpubench::engine::fused
