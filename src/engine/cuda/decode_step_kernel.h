#pragma once
// The whole decode step of one sequence as one kernel (mode: generate, `kernels: fused`, batch 1): every layer's
// q/k/v product with its norm, rotary embedding and cache write, the attention over the cache, the output product,
// the MLP, then the final norm, the LM head and the greedy choice, in one persistent launch of one block per SM.
// The layers' operations follow one another through a grid-wide arrival counter instead of kernel boundaries, and each
// block requests its weights for the next operation (its first loads into registers, more as L2 prefetches) before
// it waits for the previous one, so the memory system streams weights without the ramp and tail every kernel of a
// multi-kernel step pays (decode_kernels.h). Torch-free like decode_kernels.h; the same arithmetic as those kernels
// (fp32 over bf16/fp16 storage, the norms' outputs rounded as their modules return them).

#include <cstdint>

#include <cuda_runtime_api.h>

#include "cuda/fused_kernels.h"

namespace gpubench::engine::fused {

/// One layer's weights (device pointers; every matrix [outputs, inputs] row-major, contiguous, 16-byte aligned)
/// and its caches.
struct DecodeStepLayer {
  const void* attn_norm_w = nullptr;  ///< the attention's input norm
  const void* attn_norm_b = nullptr;  ///< its bias (LayerNorm only)
  const void* wq = nullptr;           ///< [q_heads head_dim, dim]
  const void* wk = nullptr;           ///< [kv_heads head_dim, dim]
  const void* wv = nullptr;           ///< [kv_heads head_dim, dim]
  const void* bq = nullptr;           ///< biases of q, k, v (null: none; all three or none)
  const void* bk = nullptr;
  const void* bv = nullptr;
  const void* wo = nullptr;  ///< [dim, q_heads head_dim]
  const void* bo = nullptr;
  const void* mlp_norm_w = nullptr;
  const void* mlp_norm_b = nullptr;
  const void* w_gate = nullptr;  ///< SwiGLU's gate [ffn, dim]; null: a GELU (tanh) MLP
  const void* w_up = nullptr;    ///< SwiGLU's up, or the GELU MLP's first product [ffn, dim]
  const void* b_up = nullptr;
  const void* w_down = nullptr;  ///< [dim, ffn]
  const void* b_down = nullptr;
  void* k_cache = nullptr;  ///< [positions, kv_heads, head_dim]
  void* v_cache = nullptr;
};

/// The model: sizes, the norms' kind, the tables and the layers (a device array of `layers` DecodeStepLayer).
struct DecodeStepModel {
  int64_t layers = 0, dim = 0, ffn = 0, q_heads = 0, kv_heads = 0, head_dim = 0, vocab = 0, positions = 0;
  bool rms = true;  ///< RMSNorm (no norm biases) or LayerNorm
  float eps = 1e-5f;
  const void* embed = nullptr;      ///< [vocab, dim]
  const void* pos_embed = nullptr;  ///< learned positions [positions, dim], added to the token's row; or null
  const void* rope_cos = nullptr;   ///< rotary tables [positions, head_dim] (rotate_half form); or null
  const void* rope_sin = nullptr;
  const void* final_norm_w = nullptr;
  const void* final_norm_b = nullptr;
  const void* lm_head = nullptr;  ///< [vocab, dim]
  const DecodeStepLayer* layer = nullptr;
};

/// One step's inputs, outputs and scratch (device pointers). token_in may be token_out (read before it is written).
struct DecodeStepState {
  const int64_t* token_in = nullptr;  ///< the token to decode
  const int64_t* pos = nullptr;       ///< its position (< window)
  int64_t* token_out = nullptr;       ///< the greedy next token
  void* logits = nullptr;             ///< [vocab], or null
  void* hidden = nullptr;             ///< [dim]: the residual stream
  void* q = nullptr;                  ///< [q_heads head_dim]
  void* attn = nullptr;               ///< [q_heads head_dim]
  void* mlp = nullptr;                ///< [ffn]
  float* part = nullptr;              ///< decode_step_part_floats(model, window) floats
  /// decode_step_sync_words(model) words, zero before the first launch (each launch leaves them zero).
  unsigned* sync = nullptr;
  int64_t window = 0;        ///< the positions the attention may cover (pos < window <= positions)
  /// For measuring (null in use): per phase and block, when its input was seen ready and when the block arrived,
  /// globaltimer nanoseconds, [2 (5 layers + 1), grid] (decode_step_kernel.cu's Sync).
  unsigned long long* trace = nullptr;
};

/// Whether the kernel can run on the current device: sm_90 and later (where it was measured).
bool decode_step_available();
/// Whether the kernel takes this model: head_dim 64 or 128, q_heads a multiple of kv_heads, dim, ffn and q_heads
/// head_dim multiples of 256 (a 512-byte step of a weight row never straddles two rows), a vocabulary below 2^32.
bool decode_step_serves(const DecodeStepModel& model);
int64_t decode_step_part_floats(const DecodeStepModel& model, int64_t window);
int64_t decode_step_sync_words(const DecodeStepModel& model);

/// How the step kernel runs, for measuring: the least positions an attention split covers (0: the default, 32; at
/// most 64, and more where the window needs it; decode_step_part_floats assumes the default or more).
struct DecodeStepTuning {
  int min_split = 0;
};

/// One decode step (see above) on `stream`; bf16 or fp16.
cudaError_t launch_decode_step(const DecodeStepModel& model, const DecodeStepState& state, DType dtype,
                               cudaStream_t stream, const DecodeStepTuning& tuning = DecodeStepTuning{});

}  // namespace gpubench::engine::fused
