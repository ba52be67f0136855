// The CUDA module's decode kernels as operations on tensors (kernel_calls.h): each takes a call where its kernel
// serves it and pays, else declines (undefined / false) and decode_ops.cpp runs the ATen form.

#include <cstdint>
#include <string>
#include <vector>

#include "cuda/decode_kernels.h"
#include "cuda/kernel_calls.h"
#include "cuda/launch.h"
#include "decode/decode_ops.h"
#include "fused/kernel_launch.h"

namespace gpubench::engine::fused::cuda_ops {

namespace {

/// Served by the decode kernels: CUDA bf16/fp16 (the kernels have no fp32 form).
bool on_decode_kernels(const at::Tensor& t) { return launch::on_kernels(t, /*allow_fp32=*/false); }

/// Whether gpubench's GEMV beats cuBLAS on this product (H200, f77cd0e:results/2026-12-01-h200-fused-decode/gemv_bench.txt):
/// for one token everywhere but on a large plain product (the LM head: 131 MB, cuBLAS 3.7 TB/s against 2.6); for 2 to
/// 8 tokens only over short rows (GPT-2's k = 768), where cuBLAS's kernels for narrow products are slow.
bool gemv_pays(int64_t m, int64_t n, int64_t k, bool plain) {
  if (m == 1) return !(plain && n * k * 2 >= (int64_t{64} << 20));
  return k <= 1024;
}

/// Whether the streamed GEMV takes this product (m rows of k against `rows` weight rows of k per output, n outputs):
/// where it serves and the mode allows; with kWherePays, for one token over rows of at least 2,048 and 8 MiB of
/// weights or more. On the H200 (f77cd0e:results/2026-12-02-h200-decode-stream) it made TinyLlama's batch-1 step 11.8 %
/// faster, but GPT-2's (rows of 768, products of at most 4.7 MB but the LM head) 12 % slower and TinyLlama's at
/// batch 4 12 % slower: its fixed cost per launch (the ring's set-up, x and its norm through shared memory) is paid
/// back only on long rows and large products.
bool stream_pays(int64_t m, int64_t n, int64_t k, int rows) {
  const DecodeKernelMode mode = decode_stream_mode();
  if (mode == DecodeKernelMode::kOff || !decode_stream_serves(m, k, rows)) return false;
  return mode == DecodeKernelMode::kEverywhere || (m == 1 && k >= 2048 && n * k * rows * 2 >= (int64_t{8} << 20));
}

/// Whether the run GEMV takes this product, before the streamed GEMV is asked: where it serves and the mode allows;
/// with kWherePays, one token over 8 MiB of weights or more. Alone on the H200 (f77cd0e:results/2026-12-02-h200-decode-gemv-
/// bench) it read TinyLlama's gate/up in 13.6-14.2 us against the streamed GEMV's 18.4, its down product in 8.4
/// against 9.3, its LM head in 34.7 against 48.9 and GPT-2's in 21.2 against cuBLAS's 30.7. TinyLlama's output
/// product (8 MiB) was as fast streamed alone, but in the whole step on the run GEMV it made the step 1.005-1.006x as
/// fast (f77cd0e:results/2026-12-03-h200-decode-run-depth, call 2); until then the threshold was 16 MiB.
bool run_pays(int64_t m, int64_t n, int64_t k, int rows) {
  const DecodeKernelMode mode = decode_run_mode();
  if (mode == DecodeKernelMode::kOff || !decode_run_serves(m, k, rows)) return false;
  return mode == DecodeKernelMode::kEverywhere || (m == 1 && n * k * rows * 2 >= (int64_t{8} << 20));
}

/// The weight blocks as the kernels take them, when x [m, k] (CUDA bf16/fp16, rows of stride ldx, at most
/// kDecodeGemvMaxRows) and every block ([n_i, k], contiguous, x's dtype and device) fit the decode GEMVs; `n` the
/// blocks' rows summed.
bool kernel_weights(const at::Tensor& x, const std::vector<at::Tensor>& weights, DecodeWeights* dw, int64_t* n) {
  if (x.dim() != 2 || !on_decode_kernels(x) || x.size(0) < 1 || x.size(0) > kDecodeGemvMaxRows || x.stride(1) != 1) {
    return false;
  }
  *n = 0;
  for (const auto& w : weights) {
    if (w.scalar_type() != x.scalar_type() || w.device() != x.device() || !w.is_contiguous() || w.dim() != 2 ||
        w.size(1) != x.size(1)) {
      return false;
    }
    dw->w[dw->count] = w.data_ptr();
    dw->rows[dw->count++] = w.size(0);
    *n += w.size(0);
  }
  return decode_gemv_fits(x.data_ptr(), x.stride(0), *dw, x.size(1));
}

/// A tensor of `numel` elements in x's dtype the kernels can read whole (undefined: none).
bool kernel_vector(const at::Tensor& t, const at::Tensor& x, int64_t numel) {
  return !t.defined() || (t.is_contiguous() && t.scalar_type() == x.scalar_type() && t.device() == x.device() &&
                          t.numel() == numel && (reinterpret_cast<uintptr_t>(t.data_ptr()) & 15u) == 0);
}

/// The norm as the kernels take it, when it fits (false: it does not).
bool kernel_norm(const DecodeNorm& norm, const at::Tensor& x, DecodeInputNorm* in) {
  const int64_t k = x.size(1);
  if (!kernel_vector(norm.weight, x, k) || !kernel_vector(norm.bias, x, k)) return false;
  if (norm.weight.defined()) {
    in->weight = norm.weight.data_ptr();
    in->bias = norm.bias.defined() ? norm.bias.data_ptr() : nullptr;
    in->eps = static_cast<float>(norm.eps);
    in->rms = norm.rms && !norm.bias.defined();
  }
  return true;
}

}  // namespace

at::Tensor try_decode_linear(const at::Tensor& x, const std::vector<at::Tensor>& weights, const at::Tensor& bias,
                             DecodeAct act, const at::Tensor& residual, const DecodeNorm& norm) {
  DecodeWeights dw;
  DecodeInputNorm in;
  int64_t n = 0;
  bool kernel = kernel_weights(x, weights, &dw, &n);
  if (kernel && act == DecodeAct::kSwiglu) {
    n = weights[0].size(0);
    kernel = weights[1].size(0) == n;
  }
  const int64_t m = x.size(0), k = x.size(-1);
  kernel = kernel && kernel_vector(bias, x, n) && kernel_vector(residual, x, m * n) && kernel_norm(norm, x, &in);
  const bool plain = dw.count == 1 && act == DecodeAct::kNone && !bias.defined() && !residual.defined();
  const int rows = act == DecodeAct::kSwiglu ? 2 : 1;
  const bool run = kernel && run_pays(m, n, k, rows);
  const bool stream = kernel && !run && stream_pays(m, n, k, rows);
  if (run || stream || (kernel && gemv_pays(m, n, k, plain))) {
    at::Tensor out = at::empty({m, n}, x.options());
    const DecodeActivation a = act == DecodeAct::kSwiglu    ? DecodeActivation::kSwiglu
                               : act == DecodeAct::kGeluTanh ? DecodeActivation::kGeluTanh
                                                             : DecodeActivation::kNone;
    const void* b = bias.defined() ? bias.data_ptr() : nullptr;
    const void* r = residual.defined() ? residual.data_ptr() : nullptr;
    const DType dtype = launch::dtype_of(x);
    void* o = out.data_ptr();
    launch::check(run      ? launch_decode_run_gemv(x.data_ptr(), x.stride(0), dw, b, r, o, dtype, m, n, k, a,
                                                        launch::stream(), in)
                  : stream ? launch_decode_stream_gemv(x.data_ptr(), x.stride(0), dw, b, r, o, dtype, m, n, k, a,
                                                       launch::stream(), in)
                           : launch_decode_gemv(x.data_ptr(), x.stride(0), dw, b, r, o, dtype, m, n, k, a,
                                                launch::stream(), 0, in),
                  "decode_gemv");
    return out;
  }
  return {};
}

bool try_decode_lm_head_greedy(const at::Tensor& x, const at::Tensor& weight, const DecodeNorm& norm,
                               const DecodeGreedy& g) {
  if (!decode_greedy_tail_enabled()) return false;
  DecodeWeights dw;
  DecodeInputNorm in;
  int64_t n = 0;
  if (!kernel_weights(x, {weight}, &dw, &n) || !kernel_norm(norm, x, &in)) return false;
  const int64_t m = x.size(0), k = x.size(1);
  auto index_tensor = [&](const at::Tensor& t) {
    return t.defined() && t.scalar_type() == at::kLong && t.device() == x.device() && t.is_contiguous();
  };
  if (!run_pays(m, n, k, 1) || !index_tensor(g.token) || g.token.numel() != m || !index_tensor(g.pos) ||
      g.pos.numel() < 1 || !index_tensor(g.scratch) || g.scratch.numel() < decode_greedy_scratch(m) ||
      !index_tensor(g.history) || g.history.dim() != 2 || g.history.size(0) != m) {
    return false;
  }
  at::Tensor logits = at::empty({m, n}, x.options());
  DecodeGreedyTail tail;
  tail.token = g.token.data_ptr<int64_t>();
  tail.history = g.history.data_ptr<int64_t>();
  tail.history_ld = g.history.size(1);
  tail.history_offset = g.history_offset;
  tail.pos = g.pos.data_ptr<int64_t>();
  tail.scratch = g.scratch.data_ptr<int64_t>();
  launch::check(launch_decode_run_gemv_greedy(x.data_ptr(), x.stride(0), weight.data_ptr(), logits.data_ptr(),
                                              launch::dtype_of(x), m, n, k, tail, launch::stream(), in),
                "decode_lm_head_greedy");
  return true;
}

at::Tensor try_decode_qkv_linear_to_cache(const at::Tensor& x, const std::vector<at::Tensor>& weights,
                                          const at::Tensor& bias, const DecodeNorm& norm, int64_t q_heads,
                                          int64_t kv_heads, const at::Tensor& cos, const at::Tensor& sin,
                                          const at::Tensor& pos, at::Tensor& k_cache, at::Tensor& v_cache,
                                          const at::Tensor& used_k) {
  DecodeWeights dw;
  DecodeInputNorm in;
  int64_t n = 0;
  if (weights.empty() || weights.size() > 3 || !kernel_weights(x, weights, &dw, &n)) return {};
  const int64_t m = x.size(0), k = x.size(1), d = k_cache.dim() == 4 ? k_cache.size(3) : 0;
  if (!stream_pays(m, n / 2, k, 2)) return {};
  auto cache_fits = [&](const at::Tensor& c) {
    return c.dim() == 4 && c.is_contiguous() && c.scalar_type() == x.scalar_type() && c.device() == x.device() &&
           c.size(0) == m && c.size(1) == k_cache.size(1) && c.size(2) == kv_heads && c.size(3) == d;
  };
  const bool tables = cos.defined() && sin.defined();
  if (d == 0 || d % 2 != 0 || n != (q_heads + 2 * kv_heads) * d || !cache_fits(k_cache) || !cache_fits(v_cache) ||
      cos.defined() != sin.defined() || (tables && !kernel_vector(cos, x, k_cache.size(1) * d)) ||
      (tables && !kernel_vector(sin, x, k_cache.size(1) * d)) || !kernel_vector(bias, x, n) ||
      !kernel_norm(norm, x, &in) || pos.scalar_type() != at::kLong || pos.device() != x.device() ||
      (used_k.defined() && (used_k.scalar_type() != at::kInt || used_k.numel() < m || !used_k.is_contiguous()))) {
    return {};
  }
  at::Tensor q = at::empty({m, q_heads, d}, x.options());
  DecodeCacheWrite cw;
  cw.cos = tables ? cos.data_ptr() : nullptr;
  cw.sin = tables ? sin.data_ptr() : nullptr;
  cw.pos = pos.data_ptr<int64_t>();
  cw.q_out = q.data_ptr();
  cw.k_cache = k_cache.data_ptr();
  cw.v_cache = v_cache.data_ptr();
  cw.used_k = used_k.defined() ? used_k.data_ptr<int>() : nullptr;
  cw.positions = k_cache.size(1);
  cw.q_heads = q_heads;
  cw.kv_heads = kv_heads;
  cw.head_dim = d;
  launch::check(launch_decode_stream_qkv_to_cache(x.data_ptr(), x.stride(0), dw,
                                                  bias.defined() ? bias.data_ptr() : nullptr, cw, launch::dtype_of(x),
                                                  m, k, launch::stream(), in),
                "decode_qkv_cache");
  return q;
}

at::Tensor try_decode_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps, bool rms) {
  const int64_t dim = x.size(-1);
  if (on_decode_kernels(x) && x.is_contiguous() && weight.scalar_type() == x.scalar_type() && weight.is_contiguous() &&
      (!bias.defined() || (bias.scalar_type() == x.scalar_type() && bias.is_contiguous()))) {
    at::Tensor y = at::empty_like(x);
    launch::check(launch_decode_norm(x.data_ptr(), weight.data_ptr(), bias.defined() ? bias.data_ptr() : nullptr,
                                     y.data_ptr(), launch::dtype_of(x), x.numel() / dim, dim, static_cast<float>(eps),
                                     rms, launch::stream()),
                  "decode_norm");
    return y;
  }
  return {};
}

at::Tensor try_decode_embed(const at::Tensor& ids, const at::Tensor& table, const at::Tensor& pos_table,
                            const at::Tensor& pos) {
  const int64_t m = ids.numel(), dim = table.size(1);
  auto index = [&](const at::Tensor& t) {
    return t.scalar_type() == at::kLong && t.device() == table.device() && t.is_contiguous();
  };
  auto rows16 = [&](const at::Tensor& t) {  // 16-byte aligned rows, as the kernel reads them
    return t.is_contiguous() && t.dim() == 2 && t.size(1) == dim && dim % 8 == 0 &&
           reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0;
  };
  const bool positions = pos_table.defined();
  if (decode_embed_kernel_enabled() && on_decode_kernels(table) && rows16(table) && index(ids) &&
      (!positions || (pos_table.scalar_type() == table.scalar_type() && pos_table.device() == table.device() &&
                      rows16(pos_table) && index(pos) && pos.numel() == 1))) {
    at::Tensor out = at::empty({m, dim}, table.options());
    launch::check(launch_decode_embed(ids.data_ptr<int64_t>(), table.data_ptr(), table.size(0),
                                      positions ? pos_table.data_ptr() : nullptr,
                                      positions ? pos.data_ptr<int64_t>() : nullptr, out.data_ptr(),
                                      launch::dtype_of(table), m, dim, launch::stream()),
                  "decode_embed");
    return out;
  }
  return {};
}

at::Tensor try_decode_argmax(const at::Tensor& logits) {
  if (on_decode_kernels(logits) && logits.dim() == 2 && logits.is_contiguous()) {
    const int64_t rows = logits.size(0);
    at::Tensor out = at::empty({rows, 1}, logits.options().dtype(at::kLong));
    at::Tensor best_v = at::empty({decode_argmax_scratch(rows)}, logits.options().dtype(at::kFloat));
    at::Tensor best_i = at::empty({decode_argmax_scratch(rows)}, logits.options().dtype(at::kLong));
    launch::check(launch_decode_argmax(logits.data_ptr(), launch::dtype_of(logits), rows, logits.size(1),
                                       best_v.data_ptr<float>(), best_i.data_ptr<int64_t>(), out.data_ptr<int64_t>(),
                                       launch::stream()),
                  "decode_argmax");
    return out;
  }
  return {};
}

at::Tensor try_decode_attention(const at::Tensor& q, const at::Tensor& k_cache, const at::Tensor& v_cache,
                                const at::Tensor& pos, int64_t window, const at::Tensor& counters) {
  const int64_t b = q.size(0), hq = q.size(1), d = q.size(2), hk = k_cache.size(2);
  // Up to 8 sequences: at 32 and 128 (TinyLlama, H200) this kernel's one warp per q head and position made the step
  // 1.2 and 1.5x slower than FlashAttention's (f77cd0e:results/2026-12-01-h200-fused-decode), which serves them instead.
  if (b <= kDecodeAttentionMaxBatch && on_decode_kernels(q) && q.dim() == 3 && q.is_contiguous() && k_cache.scalar_type() == q.scalar_type() &&
      v_cache.scalar_type() == q.scalar_type() && k_cache.is_contiguous() && v_cache.is_contiguous() &&
      k_cache.size(3) == d && decode_attention_serves(hq, hk, d) && counters.defined() && counters.is_cuda() &&
      counters.scalar_type() == at::kInt && counters.numel() >= b * hk && pos.scalar_type() == at::kLong) {
    int splits = 1, per_split = 1;
    at::Tensor out = at::empty_like(q);
    const DecodeClusterSetting cluster = decode_attention_cluster();
    if (b <= cluster.max_batch &&
        decode_attention_cluster_plan(hq, hk, d, window, &splits, &per_split, decode_attention_min_split(),
                                      cluster.limit)) {
      DecodeAttentionInput in;
      in.q = q.data_ptr();
      in.q_stride = hq * d;
      in.k_cache = k_cache.data_ptr();
      in.v_cache = v_cache.data_ptr();
      launch::check(launch_decode_attention_cluster(in, pos.data_ptr<int64_t>(), out.data_ptr(), launch::dtype_of(q), b,
                                                    k_cache.size(1), hq, hk, d, splits, per_split, launch::stream()),
                    "decode_attention (cluster)");
      return out;
    }
    decode_attention_splits(b, hq, hk, window, &splits, &per_split, decode_attention_min_split());
    at::Tensor acc = at::empty({b, hq, splits, d}, q.options().dtype(at::kFloat));
    at::Tensor ml = at::empty({b, hq, splits, 2}, q.options().dtype(at::kFloat));
    launch::check(launch_decode_attention(q.data_ptr(), k_cache.data_ptr(), v_cache.data_ptr(), pos.data_ptr<int64_t>(),
                                          out.data_ptr(), acc.data_ptr<float>(), ml.data_ptr<float>(),
                                          counters.data_ptr<int>(), launch::dtype_of(q), b, k_cache.size(1), hq, hk, d,
                                          splits, per_split, launch::stream()),
                  "decode_attention");
    return out;
  }
  return {};
}

at::Tensor try_decode_qkv_attention(const at::Tensor& qkv, int64_t q_heads, int64_t kv_heads, const at::Tensor& pos,
                                    int64_t window, at::Tensor& k_cache, at::Tensor& v_cache, const at::Tensor& used_k) {
  const int64_t b = qkv.size(0), d = k_cache.size(3);
  int splits = 1, per_split = 1;
  const DecodeClusterSetting cluster = decode_attention_cluster();
  // The new k and v rows are read 16 bytes at a time: qkv 16-byte aligned (its rows and parts then are: d is 64 or
  // 128, which decode_attention_cluster_plan requires).
  if (b <= cluster.max_batch && b <= kDecodeAttentionMaxBatch && on_decode_kernels(qkv) && qkv.dim() == 2 &&
      qkv.is_contiguous() && (reinterpret_cast<uintptr_t>(qkv.data_ptr()) & 15u) == 0 &&
      qkv.size(1) == (q_heads + 2 * kv_heads) * d &&
      k_cache.scalar_type() == qkv.scalar_type() &&
      v_cache.scalar_type() == qkv.scalar_type() && k_cache.is_contiguous() && v_cache.is_contiguous() &&
      k_cache.dim() == 4 && k_cache.size(2) == kv_heads && v_cache.sizes() == k_cache.sizes() &&
      pos.scalar_type() == at::kLong &&
      (!used_k.defined() || (used_k.scalar_type() == at::kInt && used_k.is_contiguous())) &&
      decode_attention_cluster_plan(q_heads, kv_heads, d, window, &splits, &per_split, decode_attention_min_split(),
                                    cluster.limit)) {
    const auto* base = static_cast<const char*>(qkv.data_ptr());
    const int64_t bytes = qkv.element_size();
    DecodeAttentionInput in;
    in.q = base;
    in.q_stride = qkv.size(1);
    in.k_cache = k_cache.data_ptr();
    in.v_cache = v_cache.data_ptr();
    in.fresh_k = base + q_heads * d * bytes;
    in.fresh_v = base + (q_heads + kv_heads) * d * bytes;
    in.fresh_stride = qkv.size(1);
    in.used_k = used_k.defined() ? used_k.data_ptr<int>() : nullptr;
    at::Tensor out = at::empty({b, q_heads, d}, qkv.options());
    launch::check(launch_decode_attention_cluster(in, pos.data_ptr<int64_t>(), out.data_ptr(), launch::dtype_of(qkv),
                                                  b, k_cache.size(1), q_heads, kv_heads, d, splits, per_split,
                                                  launch::stream()),
                  "decode_attention (cluster, from the q/k/v product)");
    return out;
  }
  return {};
}

at::Tensor try_decode_qkv_to_cache(const at::Tensor& qkv, int64_t q_heads, int64_t kv_heads, const at::Tensor& cos,
                                   const at::Tensor& sin, const at::Tensor& pos, at::Tensor& k_cache,
                                   at::Tensor& v_cache, const at::Tensor& used_k) {
  const int64_t b = qkv.size(0), d = k_cache.size(3), positions = k_cache.size(1);
  const bool same = k_cache.scalar_type() == qkv.scalar_type() && v_cache.scalar_type() == qkv.scalar_type() &&
                    (!cos.defined() || (cos.scalar_type() == qkv.scalar_type() && sin.scalar_type() == qkv.scalar_type()));
  if (on_decode_kernels(qkv) && same && qkv.is_contiguous() && k_cache.is_contiguous() && v_cache.is_contiguous() &&
      (!cos.defined() || (cos.is_contiguous() && sin.is_contiguous())) && pos.scalar_type() == at::kLong &&
      (!used_k.defined() || used_k.scalar_type() == at::kInt)) {
    at::Tensor q = at::empty({b, q_heads, d}, qkv.options());
    launch::check(launch_decode_qkv_to_cache(qkv.data_ptr(), cos.defined() ? cos.data_ptr() : nullptr,
                                             sin.defined() ? sin.data_ptr() : nullptr, pos.data_ptr<int64_t>(),
                                             q.data_ptr(), k_cache.data_ptr(), v_cache.data_ptr(),
                                             used_k.defined() ? used_k.data_ptr<int>() : nullptr, launch::dtype_of(qkv),
                                             b, positions, q_heads, kv_heads, d, launch::stream()),
                  "decode_qkv_to_cache");
    return q;
  }
  return {};
}

std::string decode_choices_this_run(const std::string& n) {
  std::string out;
  if (n == "decode_gemv") {
    out += decode_programmatic_launch() ? "; this run: programmatic launches"
                                        : "; this run: plain launches (a device before sm_90, or decode_pdl false)";
    auto which = [](DecodeKernelMode mode, const char* name) {
      return !decode_stream_available() || mode == DecodeKernelMode::kOff ? std::string(", no ") + name
             : mode == DecodeKernelMode::kEverywhere ? std::string(", the ") + name + " wherever it serves"
                                                     : std::string(", the ") + name + " where it pays";
    };
    out += which(decode_run_mode(), "run GEMV") + which(decode_stream_mode(), "streamed GEMV");
    out += decode_weights_evict_first() ? ", weights read with L2 evict_first" : ", weights read with L2's normal priority";
  } else if (n == "decode_argmax") {
    out += decode_greedy_tail_enabled() ? "; this run: in the LM head's launch where it serves"
                                        : "; this run: two launches";
  } else if (n == "decode_embed" && !decode_embed_kernel_enabled()) {
    out += "; this run: ATen's operations";
  } else if (n == "decode_attention") {
    const DecodeClusterSetting cluster = decode_attention_cluster();
    const bool clusters = decode_stream_available() && cluster.limit > 0 && cluster.max_batch > 0;
    out += "; this run: splits of " + std::to_string(decode_attention_min_split()) + " positions or more, " +
           (clusters ? "clusters of up to " + std::to_string(cluster.limit) + " splits for up to " +
                           std::to_string(cluster.max_batch) + (cluster.max_batch == 1 ? " sequence" : " sequences")
                     : std::string("no clusters (a device before sm_90, or attention_cluster_splits 0)"));
  }
  return out;
}

}  // namespace gpubench::engine::fused::cuda_ops
