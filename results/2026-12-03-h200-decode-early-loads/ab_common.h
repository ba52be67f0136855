// What ab_main.cu allocates and every variant's ab_step.cu reads: plain device pointers, no gpubench types (each
// variant's kernels live in a namespace of their own, see build.sh).
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

using bf16 = __nv_bfloat16;

struct TinyLayer {
  bf16 *n1, *wq, *wk, *wv, *wo, *n2, *wg, *wu, *wd, *kc, *vc;
};
/// TinyLlama-1.1B's shapes: the decode step at one sequence as decoder.cpp runs it with --kernels fused on sm_90.
struct Tiny {
  static constexpr int64_t dim = 2048, ffn = 5632, hq = 32, hk = 4, d = 64, vocab = 32000;
  int64_t positions = 0, window = 0;
  std::vector<TinyLayer> layers;
  bf16 *embed, *final_norm, *lm_head, *cos, *sin;
  bf16 *h, *h2, *q, *attn, *mlp, *logits;
  int64_t *token, *pos;
  float* scratch_v;
  int64_t* scratch_i;
};

struct Gpt2Layer {
  bf16 *ln1w, *ln1b, *wqkv, *bqkv, *wo, *bo, *ln2w, *ln2b, *wfc, *bfc, *wproj, *bproj, *kc, *vc;
};
/// GPT-2 (124M)'s shapes, as decoder.cpp runs them (Conv1D weights transposed: [out, in] rows).
struct Gpt2 {
  static constexpr int64_t dim = 768, ffn = 3072, heads = 12, d = 64, vocab = 50257;
  int64_t positions = 0, window = 0;
  std::vector<Gpt2Layer> layers;
  bf16 *wte, *lnfw, *lnfb;
  bf16 *h, *h2, *qkv, *ctx, *act, *logits;
  int64_t *token, *pos;
  float* scratch_v;
  int64_t* scratch_i;
};

/// Each variant's steps (ab_step.cu, compiled once per variant into namespace VARIANT).
#define AB_DECLARE(NS)                                        \
  namespace NS {                                              \
  size_t argmax_scratch();                                    \
  void tiny_step(const Tiny& m, cudaStream_t st);             \
  void gpt2_step(const Gpt2& m, cudaStream_t st);             \
  }
