// One variant's decode steps, built from that variant's decode_kernels.h with -Dgpubench=<its namespace> (build.sh),
// so that several versions of the kernels link into one bench. The launch order is decoder.cpp's at one sequence
// on sm_90 with --kernels fused (results/2026-12-03-h200-decode-run-head/head_bench.cu's baseline for TinyLlama).
#include <cstdio>
#include <cstdlib>

#include "ab_common.h"
#include "fused/decode_kernels.h"

namespace {
using namespace gpubench::engine::fused;
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}
}  // namespace

namespace VARIANT {

size_t argmax_scratch() { return decode_argmax_scratch(1); }

void tiny_step(const Tiny& m, cudaStream_t st) {
  using M = Tiny;
  const DType bf = DType::kBFloat16;
  int cs = 0, cper = 0;
  if (!decode_attention_cluster_plan(M::hq, M::hk, M::d, m.window, &cs, &cper)) check(cudaErrorInvalidValue, "plan");
  check(cudaMemcpyAsync(m.h, m.embed + 1234 * M::dim, M::dim * 2, cudaMemcpyDeviceToDevice, st), "embed");
  for (const TinyLayer& l : m.layers) {
    DecodeWeights qkv;
    qkv.w[0] = l.wq; qkv.w[1] = l.wk; qkv.w[2] = l.wv;
    qkv.rows[0] = M::hq * M::d; qkv.rows[1] = M::hk * M::d; qkv.rows[2] = M::hk * M::d; qkv.count = 3;
    DecodeCacheWrite cw;
    cw.cos = m.cos; cw.sin = m.sin; cw.pos = m.pos; cw.q_out = m.q; cw.k_cache = l.kc; cw.v_cache = l.vc;
    cw.positions = m.positions; cw.q_heads = M::hq; cw.kv_heads = M::hk; cw.head_dim = M::d;
    DecodeInputNorm n1;
    n1.weight = l.n1; n1.eps = 1e-5f; n1.rms = true;
    check(launch_decode_stream_qkv_to_cache(m.h, M::dim, qkv, nullptr, cw, bf, 1, M::dim, st, n1), "qkv");
    DecodeAttentionInput in;
    in.q = m.q; in.q_stride = M::hq * M::d; in.k_cache = l.kc; in.v_cache = l.vc;
    check(launch_decode_attention_cluster(in, m.pos, m.attn, bf, 1, m.positions, M::hq, M::hk, M::d, cs, cper, st),
          "attention");
    DecodeWeights wo;
    wo.w[0] = l.wo; wo.rows[0] = M::dim; wo.count = 1;
    // The output product: streamed, as decoder.cpp runs it; AB_O_RUN / AB_O_GEMV (2026-12-03-h200-decode-run-depth's
    // call 2) put it on the run GEMV or the per-warp GEMV instead.
#if defined(AB_O_RUN)
    check(launch_decode_run_gemv(m.attn, M::hq * M::d, wo, nullptr, m.h, m.h2, bf, 1, M::dim, M::hq * M::d,
                                 DecodeActivation::kNone, st), "output");
#elif defined(AB_O_GEMV)
    check(launch_decode_gemv(m.attn, M::hq * M::d, wo, nullptr, m.h, m.h2, bf, 1, M::dim, M::hq * M::d,
                             DecodeActivation::kNone, st), "output");
#else
    check(launch_decode_stream_gemv(m.attn, M::hq * M::d, wo, nullptr, m.h, m.h2, bf, 1, M::dim, M::hq * M::d,
                                    DecodeActivation::kNone, st), "output");
#endif
    DecodeWeights gu;
    gu.w[0] = l.wg; gu.w[1] = l.wu; gu.rows[0] = gu.rows[1] = M::ffn; gu.count = 2;
    DecodeInputNorm n2;
    n2.weight = l.n2; n2.eps = 1e-5f; n2.rms = true;
    check(launch_decode_run_gemv(m.h2, M::dim, gu, nullptr, nullptr, m.mlp, bf, 1, M::ffn, M::dim,
                                 DecodeActivation::kSwiglu, st, n2), "gate/up");
    DecodeWeights wd;
    wd.w[0] = l.wd; wd.rows[0] = M::dim; wd.count = 1;
    check(launch_decode_run_gemv(m.mlp, M::ffn, wd, nullptr, m.h2, m.h, bf, 1, M::dim, M::ffn,
                                 DecodeActivation::kNone, st), "down");
  }
  DecodeWeights lm;
  lm.w[0] = m.lm_head; lm.rows[0] = M::vocab; lm.count = 1;
  DecodeInputNorm nf;
  nf.weight = m.final_norm; nf.eps = 1e-5f; nf.rms = true;
  check(launch_decode_run_gemv(m.h, M::dim, lm, nullptr, nullptr, m.logits, bf, 1, M::vocab, M::dim,
                               DecodeActivation::kNone, st, nf), "lm head");
  check(launch_decode_argmax(m.logits, bf, 1, M::vocab, m.scratch_v, m.scratch_i, m.token, st), "argmax");
}

void gpt2_step(const Gpt2& m, cudaStream_t st) {
  using M = Gpt2;
  const DType bf = DType::kBFloat16;
  int cs = 0, cper = 0;
  if (!decode_attention_cluster_plan(M::heads, M::heads, M::d, m.window, &cs, &cper)) {
    check(cudaErrorInvalidValue, "plan");
  }
  check(cudaMemcpyAsync(m.h, m.wte + 1234 * M::dim, M::dim * 2, cudaMemcpyDeviceToDevice, st), "embed");
  auto one = [](const void* w, int64_t rows) {
    DecodeWeights x;
    x.w[0] = w; x.rows[0] = rows; x.count = 1;
    return x;
  };
  auto layer_norm = [](const void* w, const void* b) {
    DecodeInputNorm n;
    n.weight = w; n.bias = b; n.eps = 1e-5f; n.rms = false;
    return n;
  };
  for (const Gpt2Layer& l : m.layers) {
    check(launch_decode_gemv(m.h, M::dim, one(l.wqkv, 3 * M::dim), l.bqkv, nullptr, m.qkv, bf, 1, 3 * M::dim, M::dim,
                             DecodeActivation::kNone, st, 0, layer_norm(l.ln1w, l.ln1b)), "qkv");
    DecodeAttentionInput in;
    in.q = m.qkv; in.q_stride = 3 * M::dim; in.k_cache = l.kc; in.v_cache = l.vc;
    in.fresh_k = m.qkv + M::dim; in.fresh_v = m.qkv + 2 * M::dim; in.fresh_stride = 3 * M::dim;
    check(launch_decode_attention_cluster(in, m.pos, m.ctx, bf, 1, m.positions, M::heads, M::heads, M::d, cs, cper,
                                          st), "attention");
    check(launch_decode_gemv(m.ctx, M::dim, one(l.wo, M::dim), l.bo, m.h, m.h2, bf, 1, M::dim, M::dim,
                             DecodeActivation::kNone, st), "attn proj");
    check(launch_decode_gemv(m.h2, M::dim, one(l.wfc, M::ffn), l.bfc, nullptr, m.act, bf, 1, M::ffn, M::dim,
                             DecodeActivation::kGeluTanh, st, 0, layer_norm(l.ln2w, l.ln2b)), "fc");
    check(launch_decode_gemv(m.act, M::ffn, one(l.wproj, M::dim), l.bproj, m.h2, m.h, bf, 1, M::dim, M::ffn,
                             DecodeActivation::kNone, st), "mlp proj");
  }
  check(launch_decode_run_gemv(m.h, M::dim, one(m.wte, M::vocab), nullptr, nullptr, m.logits, bf, 1, M::vocab,
                               M::dim, DecodeActivation::kNone, st, layer_norm(m.lnfw, m.lnfb)), "lm head");
  check(launch_decode_argmax(m.logits, bf, 1, M::vocab, m.scratch_v, m.scratch_i, m.token, st), "argmax");
}

}  // namespace VARIANT
