// The decode step's kernels but its matrix products (decode_gemv_kernels.cu): the norm before the LM head, the cache
// write, the embeddings, the greedy argmax and decode attention (tiled and, on sm_90, in thread block clusters).

#include "cuda/decode_launch.cuh"

namespace gpubench::engine::fused {

std::atomic<bool> g_decode_pdl_allowed{true}, g_decode_evict_first{true};

namespace {

// ---- RMSNorm / LayerNorm of a few rows ------------------------------------------------------------------------

constexpr int kNormThreads = 256;

__device__ float block_sum(float v, float* shared) {
  v = warp_sum(v);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // `shared` may still be read from a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < kNormThreads / 32 ? shared[lane] : 0.0f;
  return warp_sum(v);
}

template <typename T>
__global__ void __launch_bounds__(kNormThreads)
    decode_norm(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b, T* __restrict__ y,
                int64_t dim, float eps, bool rms) {
  __shared__ float shared[kNormThreads / 32];
  const T* xr = x + blockIdx.x * dim;
  T* yr = y + blockIdx.x * dim;
  wait_for_previous_kernel();
  let_next_kernel_start();
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < dim; i += kNormThreads) {
    const float v = load(xr, i);
    s += rms ? v * v : v;
  }
  s = block_sum(s, shared);
  const float inv_dim = 1.0f / static_cast<float>(dim);
  float mean = 0.0f, var = s * inv_dim;
  if (!rms) {  // two passes over the row (it is in L1): the variance about the mean
    mean = s * inv_dim;
    float d2 = 0.0f;
    for (int64_t i = threadIdx.x; i < dim; i += kNormThreads) {
      const float d = load(xr, i) - mean;
      d2 += d * d;
    }
    var = block_sum(d2, shared) * inv_dim;
  }
  const float inv = rsqrtf(var + eps);
  for (int64_t i = threadIdx.x; i < dim; i += kNormThreads) {
    float v = (load(xr, i) - mean) * inv * load(w, i);
    if (b != nullptr) v += load(b, i);
    store(yr, i, v);
  }
}

// ---- q, k, v into the cache, rotary on the way ----------------------------------------------------------------

template <typename T>
__global__ void decode_qkv_to_cache(const T* __restrict__ qkv, const T* __restrict__ cos, const T* __restrict__ sin,
                                    const int64_t* __restrict__ pos_ptr, T* __restrict__ q_out, T* __restrict__ kc,
                                    T* __restrict__ vc, int* __restrict__ used_k, int64_t batch, int64_t positions,
                                    int64_t hq, int64_t hk, int64_t d) {
  wait_for_previous_kernel();
  let_next_kernel_start();
  const int64_t pos = *pos_ptr;
  const int64_t half = d / 2, heads = hq + 2 * hk;
  const int64_t total = batch * heads * half;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (used_k != nullptr && first < batch) used_k[first] = static_cast<int>(pos + 1);
  for (int64_t i = first; i < total; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t e = i % half, head = (i / half) % heads, b = i / (half * heads);
    const T* src = qkv + (b * heads + head) * d;
    float y1 = load(src, e), y2 = load(src, e + half);
    if (cos != nullptr && head < hq + hk) {  // x * cos + rotate_half(x) * sin, rotate_half(x) = (-x2, x1)
      const float x1 = y1, x2 = y2;
      y1 = x1 * load(cos, pos * d + e) - x2 * load(sin, pos * d + e);
      y2 = x2 * load(cos, pos * d + e + half) + x1 * load(sin, pos * d + e + half);
    }
    T* dst = head < hq        ? q_out + (b * hq + head) * d
             : head < hq + hk ? kc + ((b * positions + pos) * hk + head - hq) * d
                              : vc + ((b * positions + pos) * hk + head - hq - hk) * d;
    store(dst, e, y1);
    store(dst, e + half, y2);
  }
}

// ---- the step's input: the tokens' embeddings (+ the position's) -----------------------------------------------

constexpr int kEmbedThreads = 128;

/// Block r: out[r] = table[ids[r]] (+ pos_table[*pos]), 16 bytes a thread at a time, summed in fp32 and rounded once
/// (as ATen's add of the two rows); an id outside [0, vocab) gives a zero row.
template <typename T>
__global__ void __launch_bounds__(kEmbedThreads)
    decode_embed_rows(const int64_t* __restrict__ ids, const T* __restrict__ table, int64_t vocab,
                      const T* __restrict__ pos_table, const int64_t* __restrict__ pos, T* __restrict__ out,
                      int64_t dim) {
  wait_for_previous_kernel();
  let_next_kernel_start();
  const int64_t id = ids[blockIdx.x];
  const T* row = id >= 0 && id < vocab ? table + id * dim : nullptr;
  const T* at = pos_table != nullptr ? pos_table + *pos * dim : nullptr;
  for (int64_t c = threadIdx.x; c < dim / 8; c += kEmbedThreads) {
    float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (row != nullptr) load_v<T, 8>(row, 8 * c, v);
    if (at != nullptr) {
      float w[8];
      load_v<T, 8>(at, 8 * c, w);
#pragma unroll
      for (int e = 0; e < 8; ++e) v[e] += w[e];
    }
    store_v<T, 8>(out + blockIdx.x * dim, 8 * c, v);
  }
}

// ---- greedy choice: the first largest logit of each row ------------------------------------------------------

constexpr int kArgmaxThreads = 256;
constexpr int kArgmaxBlocksPerRow = 32;

/// Stage 1: block (g, row) finds the best of its slice of the row.
template <typename T>
__global__ void __launch_bounds__(kArgmaxThreads) argmax_slices(const T* __restrict__ logits, int64_t n,
                                                               float* __restrict__ best_v, int64_t* __restrict__ best_i) {
  __shared__ float sv[kArgmaxThreads / 32];
  __shared__ int64_t si[kArgmaxThreads / 32];
  const T* row = logits + blockIdx.y * n;
  wait_for_previous_kernel();
  let_next_kernel_start();
  float v = -INFINITY;
  int64_t idx = n;
  for (int64_t j = blockIdx.x * static_cast<int64_t>(kArgmaxThreads) + threadIdx.x; j < n;
       j += static_cast<int64_t>(gridDim.x) * kArgmaxThreads) {
    better(v, idx, load(row, j), j);
  }
  warp_best(v, idx);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    sv[warp] = v;
    si[warp] = idx;
  }
  __syncthreads();
  if (warp == 0) {
    v = lane < kArgmaxThreads / 32 ? sv[lane] : -INFINITY;
    idx = lane < kArgmaxThreads / 32 ? si[lane] : n;
    warp_best(v, idx);
    if (lane == 0) {
      best_v[blockIdx.y * gridDim.x + blockIdx.x] = v;
      best_i[blockIdx.y * gridDim.x + blockIdx.x] = idx;
    }
  }
}

/// Stage 2: one warp per row over its slices' best.
__global__ void argmax_rows(const float* __restrict__ best_v, const int64_t* __restrict__ best_i, int slices, int64_t n,
                            int64_t* __restrict__ out) {
  const int lane = threadIdx.x;
  wait_for_previous_kernel();
  let_next_kernel_start();
  float v = -INFINITY;
  int64_t idx = n;
  for (int s = lane; s < slices; s += 32) better(v, idx, best_v[blockIdx.x * slices + s], best_i[blockIdx.x * slices + s]);
  warp_best(v, idx);
  if (lane == 0) out[blockIdx.x] = idx < n ? idx : 0;
}

// ---- decode attention: one query per sequence over the cache, split over positions ---------------------------

constexpr int kAttnThreads = 256;
constexpr int kAttnCombineSlots = 1024;  // q heads of a kv head x splits: the combine's shared memory

/// Positions per tile: a tile's keys and values fill 16 KB of shared memory.
template <int D>
struct AttnTile {
  static constexpr int kPositions = D == 64 ? 64 : 32;
  static constexpr int kChunks = D / 8;       // 16-byte pieces of a row
  static constexpr int kRowWords = D / 2 + 1;  // a row in 32-bit words, padded so rows start on different banks
  static constexpr int kLoads = kPositions * kChunks / kAttnThreads;  // 16-byte loads a thread makes per tile, each
};

/// Block (split, kv head, sequence): the group of q heads that share the kv head over positions [split x per_split,
/// +per_split) of the keys in use (pos + 1), in tiles: every thread loads its share of a tile's keys and values at
/// once (the next tile's while this one is computed) into shared memory, then the scores of every (head, position),
/// the tile's softmax per head (online across tiles), and the weighted values of every (head, dimension). Partial
/// (max, sum, acc) go to scratch; the last block of a (sequence, kv head) to finish (a counter, reset by it) combines
/// the splits, spread over its threads.
template <typename T, int D>
__global__ void __launch_bounds__(kAttnThreads)
    decode_attention(const T* __restrict__ q, const T* __restrict__ kc, const T* __restrict__ vc,
                     const int64_t* __restrict__ pos_ptr, T* __restrict__ out, float* __restrict__ part_acc,
                     float* __restrict__ part_ml, int* __restrict__ counters, int64_t positions, int hq, int hk,
                     int splits, int per_split, float scale) {
  using Tile = AttnTile<D>;
  constexpr int P = Tile::kPositions, W = Tile::kRowWords, kPerThread = 32 * D / kAttnThreads;
  __shared__ uint32_t kt[P * W], vt[P * W];  // the tile's keys and values, two 16-bit values a word
  __shared__ float qs[32 * D];                 // the group's q heads, scaled
  __shared__ float sc[32 * P];                 // scores, then their exponentials
  __shared__ float head_m[32], head_l[32], head_c[32];
  __shared__ bool last;
  const int split = blockIdx.x, kh = blockIdx.y, b = blockIdx.z, tid = threadIdx.x;
  const int group = hq / hk, lane = tid & 31, warp = tid >> 5;
  const int64_t p0 = static_cast<int64_t>(split) * per_split;
  const int64_t row0 = (static_cast<int64_t>(b) * positions) * hk + kh;  // row of (b, position 0, kh)
  auto row_of = [&](int64_t p) { return (row0 + p * hk) * D; };
  {  // the block's positions into L2 while the previous kernel finishes (the range only, not pos: no dependency)
    const int64_t pend = p0 + per_split < positions ? p0 + per_split : positions;
    for (int64_t i = tid; i < (pend - p0) * (D / 64); i += kAttnThreads) {  // one prefetch per 128 bytes
      const int64_t p = p0 + i / (D / 64), off = (i % (D / 64)) * 64;
      prefetch_l2(kc + row_of(p) + off);
      prefetch_l2(vc + row_of(p) + off);
    }
  }
  wait_for_previous_kernel();
  let_next_kernel_start();
  const int64_t used = *pos_ptr + 1;
  const int64_t p1 = p0 + per_split < used ? p0 + per_split : used;
  for (int i = tid; i < group * D; i += kAttnThreads) {
    qs[i] = load(q + (static_cast<int64_t>(b) * hq + kh * group) * D, i) * scale;
  }
  if (tid < group) {
    head_m[tid] = -INFINITY;
    head_l[tid] = 0.0f;
  }
  float acc[kPerThread];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) acc[i] = 0.0f;

  uint4 kr[Tile::kLoads], vr[Tile::kLoads];
  auto fetch = [&](int64_t t0) {
#pragma unroll
    for (int i = 0; i < Tile::kLoads; ++i) {
      const int idx = tid + i * kAttnThreads, p = idx / Tile::kChunks, c = idx % Tile::kChunks;
      if (t0 + p < p1) {
        kr[i] = __ldcg(reinterpret_cast<const uint4*>(kc + row_of(t0 + p)) + c);
        vr[i] = __ldcg(reinterpret_cast<const uint4*>(vc + row_of(t0 + p)) + c);
      }
    }
  };
  if (p0 < p1) fetch(p0);
  for (int64_t t0 = p0; t0 < p1; t0 += P) {
    const int n = p1 - t0 < P ? static_cast<int>(p1 - t0) : P;
    __syncthreads();  // the previous tile's shared memory is free (and qs, head_* written, the first time)
#pragma unroll
    for (int i = 0; i < Tile::kLoads; ++i) {
      const int idx = tid + i * kAttnThreads, p = idx / Tile::kChunks, c = idx % Tile::kChunks;
      if (p < n) {
        const uint32_t* kw = reinterpret_cast<const uint32_t*>(&kr[i]);
        const uint32_t* vw = reinterpret_cast<const uint32_t*>(&vr[i]);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          kt[p * W + c * 4 + e] = kw[e];
          vt[p * W + c * 4 + e] = vw[e];
        }
      }
    }
    if (t0 + P < p1) fetch(t0 + P);  // in flight while this tile is computed
    __syncthreads();
    for (int i = tid; i < group * P; i += kAttnThreads) {  // scores: lanes over positions, a q head per warp row
      const int g = i / P, p = i % P;
      float s = -INFINITY;
      if (p < n) {
        s = 0.0f;
        const float* qg = qs + g * D;
#pragma unroll 8
        for (int wd = 0; wd < D / 2; ++wd) {
          const float2 kf = pair_from_bits<T>(kt[p * W + wd]);
          s = fmaf(qg[2 * wd], kf.x, fmaf(qg[2 * wd + 1], kf.y, s));
        }
      }
      sc[g * P + p] = s;
    }
    __syncthreads();
    for (int g = warp; g < group; g += kAttnThreads / 32) {  // the tile's softmax, a warp per q head
      float mt = -INFINITY;
      for (int p = lane; p < P; p += 32) mt = fmaxf(mt, sc[g * P + p]);
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, off));
      const float m_old = head_m[g], m_new = fmaxf(m_old, mt);
      float lt = 0.0f;
      for (int p = lane; p < P; p += 32) {
        const float e = p < n ? __expf(sc[g * P + p] - m_new) : 0.0f;
        sc[g * P + p] = e;
        lt += e;
      }
      lt = warp_sum(lt);
      if (lane == 0) {
        const float corr = __expf(m_old - m_new);  // 0 on the first tile (m_old is -inf)
        head_c[g] = corr;
        head_l[g] = head_l[g] * corr + lt;
        head_m[g] = m_new;
      }
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {  // weighted values: threads over (q head, dimension)
      const int idx = tid + i * kAttnThreads, g = idx / D, d = idx % D;
      if (g < group) {
        float a = acc[i] * head_c[g];
        const uint16_t* vh = reinterpret_cast<const uint16_t*>(vt);
        for (int p = 0; p < n; ++p) a = fmaf(sc[g * P + p], from_bits<T>(vh[2 * (p * W) + d]), a);
        acc[i] = a;
      }
    }
  }
  __syncthreads();  // head_m / head_l final
  const int64_t first_slot = (static_cast<int64_t>(b) * hq + kh * group) * splits;  // slot of (head g, split s):
  auto slot = [&](int g) { return first_slot + static_cast<int64_t>(g) * splits + split; };  // first + g splits + s
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int idx = tid + i * kAttnThreads, g = idx / D, d = idx % D;
    if (g < group) part_acc[slot(g) * D + d] = acc[i];
  }
  if (tid < group) {
    part_ml[slot(tid) * 2] = head_m[tid];
    part_ml[slot(tid) * 2 + 1] = head_l[tid];
  }
  __threadfence();
  __syncthreads();
  if (tid == 0) last = atomicAdd(&counters[b * hk + kh], 1) == splits - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  // The combine: every split's weight exp(m_s - max) per head, then the weighted sum per (head, dimension). The
  // other blocks' partials are read through L2 (__ldcg), never from this SM's L1, which is not coherent with them.
  float* weight = sc;  // group x splits <= kAttnCombineSlots floats: sc and kt/vt are free now
  float* ml = reinterpret_cast<float*>(kt);
  for (int i = tid; i < group * splits; i += kAttnThreads) {
    ml[2 * i] = __ldcg(part_ml + (first_slot + i) * 2);
    ml[2 * i + 1] = __ldcg(part_ml + (first_slot + i) * 2 + 1);
  }
  __syncthreads();
  for (int g = warp; g < group; g += kAttnThreads / 32) {
    float mx = -INFINITY;
    for (int s = lane; s < splits; s += 32) mx = fmaxf(mx, ml[2 * (g * splits + s)]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
    float total = 0.0f;
    for (int s = lane; s < splits; s += 32) {
      const float ls = ml[2 * (g * splits + s) + 1];
      const float f = ls > 0.0f ? __expf(ml[2 * (g * splits + s)] - mx) : 0.0f;
      weight[g * splits + s] = f;
      total += ls * f;
    }
    total = warp_sum(total);
    if (lane == 0) head_l[g] = 1.0f / total;
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) {
    const int idx = tid + i * kAttnThreads, g = idx / D, d = idx % D;
    if (g < group) {
      float o = 0.0f;
      const float* src = part_acc + (first_slot + static_cast<int64_t>(g) * splits) * D + d;
#pragma unroll 4
      for (int s = 0; s < splits; ++s) o = fmaf(__ldcg(src + static_cast<int64_t>(s) * D), weight[g * splits + s], o);
      store(out + (static_cast<int64_t>(b) * hq + kh * group + g) * D, d, o * head_l[g]);
    }
  }
  if (tid == 0) counters[b * hk + kh] = 0;  // ready for the next step (the same graph replays it)
}

template <typename T>
cudaError_t attention_typed(const void* q, const void* k_cache, const void* v_cache, const int64_t* pos, void* out,
                            float* part_acc, float* part_ml, int* counters, int64_t batch, int64_t positions,
                            int64_t hq, int64_t hk, int64_t d, int splits, int per_split, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(splits), static_cast<unsigned>(hk), static_cast<unsigned>(batch));
  const float scale = 1.0f / sqrtf(static_cast<float>(d));
  const auto* qs = static_cast<const T*>(q);
  const auto* ks = static_cast<const T*>(k_cache);
  const auto* vs = static_cast<const T*>(v_cache);
  auto* o = static_cast<T*>(out);
  const int h = static_cast<int>(hq), k = static_cast<int>(hk);
  if (d == 64) {
    return launch_kernel(decode_attention<T, 64>, grid, dim3(kAttnThreads), stream, qs, ks, vs, pos, o, part_acc,
                         part_ml, counters, positions, h, k, splits, per_split, scale);
  }
  return launch_kernel(decode_attention<T, 128>, grid, dim3(kAttnThreads), stream, qs, ks, vs, pos, o, part_acc,
                       part_ml, counters, positions, h, k, splits, per_split, scale);
}

// ---- decode attention, cluster form (sm_90): the splits of a (sequence, kv head) combined in shared memory ---------
//
// One thread block cluster per (sequence, kv head), a block per split of the positions. A block copies every key and
// value row of its split into shared memory before it waits for the previous kernel (rows written by earlier steps do
// not change; the new position's row, written by the kernel just before, is read again after the wait), computes its
// partial softmax(q k^T) v in one pass, and the blocks of the cluster then combine the partials by reading each
// other's shared memory (distributed shared memory) instead of writing them to global memory for a last block to
// read back: the chain after the wait is the position, the new row, the arithmetic and two cluster barriers.
// Given `fresh_k` / `fresh_v` (the new token's k and v rows, [batch] x fresh_stride apart: the q/k/v product's output
// where nothing else writes the cache), the new row comes from them and the block that holds its position writes it
// into the cache, so that no kernel of its own has to (and `used_k`, when given, gets the keys in use).

constexpr int kClusterAttnThreads = 256;
constexpr int kClusterAttnMaxSplits = 16;

/// The cluster form's dynamic shared memory for `per_split` positions, `group` q heads of head size d: the keys and
/// values (16-bit, rows of d/8 16-byte chunks), the group's q (fp32; the partial outputs once the scores are done),
/// the scores and each head's (max, total).
size_t cluster_attn_smem(int64_t per_split, int64_t group, int64_t d) {
  const int64_t scores = (per_split + 3) / 4 * 4;
  return static_cast<size_t>(2 * per_split * d * 2 + group * d * 4 + group * scores * 4 + group * 2 * 4);
}

template <typename T, int D>
__global__ void __launch_bounds__(kClusterAttnThreads)
    decode_attention_cluster(const T* __restrict__ q, int64_t q_stride, T* __restrict__ kc, T* __restrict__ vc,
                             const T* __restrict__ fresh_k, const T* __restrict__ fresh_v, int64_t fresh_stride,
                             int* __restrict__ used_k, const int64_t* __restrict__ pos_ptr, T* __restrict__ out,
                             int64_t positions, int hq, int hk, int per_split, float scale) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int kChunks = D / 8;  // 16-byte chunks of a row; chunk c of row p sits at c ^ (p % 8), so that eight
                                  // lanes reading chunk c of eight rows meet eight different bank groups
  extern __shared__ __align__(128) unsigned char smem[];
  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  const int split = blockIdx.x, kh = blockIdx.y, b = blockIdx.z, tid = threadIdx.x, splits = gridDim.x;
  const int group = hq / hk, lane = tid & 31, warp = tid >> 5;
  const int scores_stride = (per_split + 3) / 4 * 4;
  uint4* kt = reinterpret_cast<uint4*>(smem);
  uint4* vt = kt + per_split * kChunks;
  float* qs = reinterpret_cast<float*>(vt + per_split * kChunks);  // q (scaled), then this block's partial outputs
  float* sc = qs + group * D;
  float* ml = sc + group * scores_stride;  // per head: max, total
  const int64_t p0 = static_cast<int64_t>(split) * per_split;
  const int64_t row0 = (static_cast<int64_t>(b) * positions) * hk + kh;  // row of (b, position 0, kh)
  auto row_of = [&](int64_t p) { return (row0 + p * hk) * D; };
  auto slot = [](int p, int c) { return p * kChunks + (c ^ (p & 7)); };
  const int rows = static_cast<int>(p0 + per_split < positions ? per_split : positions - p0);
  for (int i = tid; i < rows * kChunks; i += kClusterAttnThreads) {  // before the wait: no dependency on this step
    const int p = i / kChunks, c = i % kChunks;
    copy16_async(kt + slot(p, c), kc + row_of(p0 + p) + c * 8);
    copy16_async(vt + slot(p, c), vc + row_of(p0 + p) + c * 8);
  }
  wait_for_previous_kernel();
  let_next_kernel_start();
  const int64_t used = *pos_ptr + 1;
  // q's first values a thread stages, loaded beside the position rather than after the new row's round trip.
  const T* qb = q + static_cast<int64_t>(b) * q_stride + kh * group * D;
  constexpr int kQAhead = 2;
  float q_ahead[kQAhead];
#pragma unroll
  for (int u = 0; u < kQAhead; ++u) {
    const int i = tid + u * kClusterAttnThreads;
    q_ahead[u] = i < group * D ? load(qb, i) : 0.0f;
  }
  const int n = static_cast<int>(used <= p0 ? 0 : used - p0 < per_split ? used - p0 : per_split);
  // The new position's row: its owner threads (those that copied it above) read it again, after their copies land.
  const int fresh = static_cast<int>(used - 1 - p0);
  const int chunk = tid - fresh * kChunks % kClusterAttnThreads;
  const int mine = chunk < 0 ? chunk + kClusterAttnThreads : chunk;
  const bool owner = fresh >= 0 && fresh < rows && mine < kChunks;
  uint4 knew{}, vnew{};
  if (owner && fresh_k != nullptr) {
    const int64_t at = static_cast<int64_t>(b) * fresh_stride + kh * D;
    knew = __ldcg(reinterpret_cast<const uint4*>(fresh_k + at) + mine);
    vnew = __ldcg(reinterpret_cast<const uint4*>(fresh_v + at) + mine);
    reinterpret_cast<uint4*>(kc + row_of(p0 + fresh))[mine] = knew;
    reinterpret_cast<uint4*>(vc + row_of(p0 + fresh))[mine] = vnew;
  } else if (owner) {
    knew = __ldcg(reinterpret_cast<const uint4*>(kc + row_of(p0 + fresh)) + mine);
    vnew = __ldcg(reinterpret_cast<const uint4*>(vc + row_of(p0 + fresh)) + mine);
  }
  if (used_k != nullptr && split == 0 && kh == 0 && tid == 0) used_k[b] = static_cast<int>(used);
#pragma unroll
  for (int u = 0; u < kQAhead; ++u) {
    const int i = tid + u * kClusterAttnThreads;
    if (i < group * D) qs[i] = q_ahead[u] * scale;
  }
  for (int i = tid + kQAhead * kClusterAttnThreads; i < group * D; i += kClusterAttnThreads) {
    qs[i] = load(qb, i) * scale;
  }
  copies_wait();
  if (owner) {
    kt[slot(fresh, mine)] = knew;
    vt[slot(fresh, mine)] = vnew;
  }
  __syncthreads();
  for (int i = tid; i < group * n; i += kClusterAttnThreads) {  // scores: a thread per (head, position)
    const int g = i / n, p = i % n;
    const float4* qg = reinterpret_cast<const float4*>(qs + g * D);
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      float kf[8];
      unpack8<T>(kt[slot(p, c)], kf);
      const float4 a = qg[2 * c], e = qg[2 * c + 1];
      s = fmaf(a.x, kf[0], fmaf(a.y, kf[1], fmaf(a.z, kf[2], fmaf(a.w, kf[3], s))));
      s = fmaf(e.x, kf[4], fmaf(e.y, kf[5], fmaf(e.z, kf[6], fmaf(e.w, kf[7], s))));
    }
    sc[g * scores_stride + p] = s;
  }
  __syncthreads();
  for (int g = warp; g < group; g += kClusterAttnThreads / 32) {  // softmax numerators, a warp per head
    const float2 m_l = softmax_numerators(sc + g * scores_stride, n, lane);
    if (lane == 0) {
      ml[2 * g] = m_l.x;
      ml[2 * g + 1] = m_l.y;
    }
  }
  __syncthreads();  // the scores are final; qs is free for the partial outputs
  const uint32_t* vw = reinterpret_cast<const uint32_t*>(vt);
  for (int i = tid; i < group * D / 2; i += kClusterAttnThreads) {  // weighted values: a thread per (head, 2 dims)
    const int g = i / (D / 2), w = i % (D / 2), c = w / 4, e = w % 4;
    float ax = 0.0f, ay = 0.0f;
    const float* sg = sc + g * scores_stride;
#pragma unroll 4
    for (int p = 0; p < n; ++p) {
      const float2 v = pair_from_bits<T>(vw[4 * slot(p, c) + e]);
      ax = fmaf(sg[p], v.x, ax);
      ay = fmaf(sg[p], v.y, ay);
    }
    qs[g * D + 2 * w] = ax;
    qs[g * D + 2 * w + 1] = ay;
  }
  cluster.sync();  // every block's partials are written and visible to the cluster
  // The combine: block `split` owns outputs [split * per_block, +per_block) of the group's group x D (more than the
  // block's threads where the splits are few); for each, a thread reads every split's (max, total) of the head and its
  // partial of the dimension from that block's shared memory.
  const int total = group * D, per_block = (total + splits - 1) / splits, first = split * per_block;
  const int end = first + per_block < total ? first + per_block : total;
  T* out_group = out + (static_cast<int64_t>(b) * hq + kh * group) * D;
  for (int o = first + tid; o < end; o += kClusterAttnThreads) {
    const int g = o / D;
    float m_s[kClusterAttnMaxSplits], l_s[kClusterAttnMaxSplits], a_s[kClusterAttnMaxSplits];
#pragma unroll
    for (int s = 0; s < kClusterAttnMaxSplits; ++s) {
      if (s < splits) {
        const float* rml = cluster.map_shared_rank(ml, s);
        const float* racc = cluster.map_shared_rank(qs, s);
        m_s[s] = rml[2 * g];
        l_s[s] = rml[2 * g + 1];
        a_s[s] = racc[o];
      }
    }
    float mx = -INFINITY;
#pragma unroll
    for (int s = 0; s < kClusterAttnMaxSplits; ++s) {
      if (s < splits && l_s[s] > 0.0f) mx = fmaxf(mx, m_s[s]);
    }
    float sum = 0.0f, acc = 0.0f;
#pragma unroll
    for (int s = 0; s < kClusterAttnMaxSplits; ++s) {
      if (s < splits && l_s[s] > 0.0f) {
        const float f = __expf(m_s[s] - mx);
        sum = fmaf(l_s[s], f, sum);
        acc = fmaf(a_s[s], f, acc);
      }
    }
    store(out_group, o, sum > 0.0f ? acc / sum : 0.0f);
  }
  cluster.barrier_arrive();  // done reading the others' shared memory
  cluster.barrier_wait();  // no block leaves while another may still read its shared memory
#endif
}

template <typename T>
cudaError_t cluster_attention_typed(const DecodeAttentionInput& in, const int64_t* pos, void* out, int64_t batch,
                                    int64_t positions, int64_t hq, int64_t hk, int64_t d, int splits, int per_split,
                                    cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(splits), static_cast<unsigned>(hk), static_cast<unsigned>(batch));
  const size_t smem = cluster_attn_smem(per_split, hq / hk, d);
  const float scale = 1.0f / sqrtf(static_cast<float>(d));
  auto kernel = d == 64 ? decode_attention_cluster<T, 64> : decode_attention_cluster<T, 128>;
  const int optin = device_attribute<cudaDevAttrMaxSharedMemoryPerBlockOptin>();
  if (smem > static_cast<size_t>(optin)) return cudaErrorInvalidValue;
  static std::atomic<uint64_t> sized[2] = {{0}, {0}};  // per head size: the devices whose limit is raised
  cudaError_t e = allow_smem(sized[d == 64], kernel, optin);  // up to the opt-in limit, once (the plan keeps within)
  if (e == cudaSuccess && splits > 8) {  // more than the portable cluster size
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  }
  if (e != cudaSuccess) return e;
  return launch_kernel_cluster(kernel, grid, dim3(kClusterAttnThreads), smem, static_cast<unsigned>(splits), stream,
                               static_cast<const T*>(in.q), in.q_stride, static_cast<T*>(in.k_cache),
                               static_cast<T*>(in.v_cache), static_cast<const T*>(in.fresh_k),
                               static_cast<const T*>(in.fresh_v), in.fresh_stride, in.used_k, pos, static_cast<T*>(out),
                               positions, static_cast<int>(hq), static_cast<int>(hk), per_split, scale);
}

}  // namespace

bool decode_programmatic_launch() { return programmatic_launch(); }
bool decode_weights_evict_first() { return weights_evict_first(); }
void set_decode_launch_options(bool programmatic, bool evict_first) {
  g_decode_pdl_allowed.store(programmatic, std::memory_order_relaxed);
  g_decode_evict_first.store(evict_first, std::memory_order_relaxed);
}

cudaError_t launch_decode_norm(const void* x, const void* weight, const void* bias, void* y, DType dtype, int64_t rows,
                               int64_t dim, float eps, bool rms, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(rows));
  switch (dtype) {
    case DType::kBFloat16:
      return launch_kernel(decode_norm<__nv_bfloat16>, grid, dim3(kNormThreads), stream,
                           static_cast<const __nv_bfloat16*>(x), static_cast<const __nv_bfloat16*>(weight),
                           static_cast<const __nv_bfloat16*>(bias), static_cast<__nv_bfloat16*>(y), dim, eps, rms);
    case DType::kFloat16:
      return launch_kernel(decode_norm<__half>, grid, dim3(kNormThreads), stream, static_cast<const __half*>(x),
                           static_cast<const __half*>(weight), static_cast<const __half*>(bias),
                           static_cast<__half*>(y), dim, eps, rms);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t launch_decode_embed(const int64_t* ids, const void* table, int64_t vocab, const void* pos_table,
                                const int64_t* pos, void* out, DType dtype, int64_t rows, int64_t dim,
                                cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (dim % 8 != 0 || !aligned16(table) || !aligned16(out) || (pos_table != nullptr && (!aligned16(pos_table) ||
                                                                                      pos == nullptr))) {
    return cudaErrorInvalidValue;
  }
  const dim3 grid(static_cast<unsigned>(rows));
  switch (dtype) {
    case DType::kBFloat16:
      return launch_kernel(decode_embed_rows<__nv_bfloat16>, grid, dim3(kEmbedThreads), stream, ids,
                           static_cast<const __nv_bfloat16*>(table), vocab,
                           static_cast<const __nv_bfloat16*>(pos_table), pos, static_cast<__nv_bfloat16*>(out), dim);
    case DType::kFloat16:
      return launch_kernel(decode_embed_rows<__half>, grid, dim3(kEmbedThreads), stream, ids,
                           static_cast<const __half*>(table), vocab, static_cast<const __half*>(pos_table), pos,
                           static_cast<__half*>(out), dim);
    default: return cudaErrorInvalidValue;
  }
}

int64_t decode_argmax_scratch(int64_t rows) { return rows * kArgmaxBlocksPerRow; }

cudaError_t launch_decode_argmax(const void* logits, DType dtype, int64_t rows, int64_t n, float* scratch_v,
                                 int64_t* scratch_i, int64_t* out, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  const int64_t wanted = (n + 4 * kArgmaxThreads - 1) / (4 * kArgmaxThreads);  // about 4 values per thread
  const int slices = static_cast<int>(wanted < 1 ? 1 : wanted > kArgmaxBlocksPerRow ? kArgmaxBlocksPerRow : wanted);
  const dim3 grid(static_cast<unsigned>(slices), static_cast<unsigned>(rows));
  cudaError_t e = cudaErrorInvalidValue;
  switch (dtype) {
    case DType::kBFloat16:
      e = launch_kernel(argmax_slices<__nv_bfloat16>, grid, dim3(kArgmaxThreads), stream,
                        static_cast<const __nv_bfloat16*>(logits), n, scratch_v, scratch_i);
      break;
    case DType::kFloat16:
      e = launch_kernel(argmax_slices<__half>, grid, dim3(kArgmaxThreads), stream, static_cast<const __half*>(logits), n,
                        scratch_v, scratch_i);
      break;
    default: break;
  }
  if (e != cudaSuccess) return e;
  return launch_kernel(argmax_rows, dim3(static_cast<unsigned>(rows)), dim3(32), stream,
                       static_cast<const float*>(scratch_v), static_cast<const int64_t*>(scratch_i), slices, n, out);
}

bool decode_attention_serves(int64_t q_heads, int64_t kv_heads, int64_t head_dim) {
  return (head_dim == 64 || head_dim == 128) && kv_heads > 0 && q_heads % kv_heads == 0 && q_heads / kv_heads <= 32;
}

void decode_attention_splits(int64_t batch, int64_t q_heads, int64_t kv_heads, int64_t window, int* splits,
                             int* per_split, int64_t min_per_split) {
  const int64_t pairs = batch * kv_heads, group = q_heads / kv_heads, least = std::max<int64_t>(min_per_split, 1);
  int64_t s = (256 + pairs - 1) / pairs;                // about 256 blocks in all
  s = std::min<int64_t>(s, (window + least - 1) / least);  // at least `least` positions a block
  s = std::max<int64_t>(s, (window + 255) / 256);        // at most 256 (a few tiles)
  s = std::min<int64_t>(s, kAttnCombineSlots / group);   // what the combine holds in shared memory
  s = std::max<int64_t>(s, 1);
  *per_split = static_cast<int>((window + s - 1) / s);
  *splits = static_cast<int>((window + *per_split - 1) / *per_split);
}

cudaError_t launch_decode_attention(const void* q, const void* k_cache, const void* v_cache, const int64_t* pos,
                                    void* out, float* part_acc, float* part_ml, int* counters, DType dtype,
                                    int64_t batch, int64_t positions, int64_t q_heads, int64_t kv_heads,
                                    int64_t head_dim, int splits, int per_split, cudaStream_t stream) {
  if (!decode_attention_serves(q_heads, kv_heads, head_dim) || splits < 1) return cudaErrorInvalidValue;
  if (batch == 0) return cudaSuccess;
  switch (dtype) {
    case DType::kBFloat16:
      return attention_typed<__nv_bfloat16>(q, k_cache, v_cache, pos, out, part_acc, part_ml, counters, batch,
                                            positions, q_heads, kv_heads, head_dim, splits, per_split, stream);
    case DType::kFloat16:
      return attention_typed<__half>(q, k_cache, v_cache, pos, out, part_acc, part_ml, counters, batch, positions,
                                     q_heads, kv_heads, head_dim, splits, per_split, stream);
    default: return cudaErrorInvalidValue;
  }
}

bool decode_attention_cluster_plan(int64_t q_heads, int64_t kv_heads, int64_t head_dim, int64_t window, int* splits,
                                   int* per_split, int64_t min_per_split, int max_cluster) {
  if (max_cluster <= 0 || !stream_available() || !decode_attention_serves(q_heads, kv_heads, head_dim) || window < 1) {
    return false;
  }
  max_cluster = std::min(max_cluster, kClusterAttnMaxSplits);
  const int optin = device_attribute<cudaDevAttrMaxSharedMemoryPerBlockOptin>();
  const int64_t least = std::max<int64_t>(min_per_split, 1), group = q_heads / kv_heads;
  int64_t s = std::min<int64_t>(std::max<int64_t>((window + least - 1) / least, 1), max_cluster);
  for (; s <= kClusterAttnMaxSplits; ++s) {  // more splits only where a split would not fit
    const int64_t per = (window + s - 1) / s;
    if (cluster_attn_smem(per, group, head_dim) <= static_cast<size_t>(optin)) {
      *per_split = static_cast<int>(per);
      *splits = static_cast<int>((window + per - 1) / per);
      return true;
    }
  }
  return false;
}

cudaError_t launch_decode_attention_cluster(const DecodeAttentionInput& in, const int64_t* pos, void* out, DType dtype,
                                            int64_t batch, int64_t positions, int64_t q_heads, int64_t kv_heads,
                                            int64_t head_dim, int splits, int per_split, cudaStream_t stream) {
  if (!decode_attention_serves(q_heads, kv_heads, head_dim) || splits < 1 || splits > kClusterAttnMaxSplits ||
      per_split < 1 || !stream_available() || (in.fresh_k == nullptr) != (in.fresh_v == nullptr) ||
      (in.fresh_k != nullptr && (!aligned16(in.fresh_k) || !aligned16(in.fresh_v) || in.fresh_stride % 8 != 0))) {
    return cudaErrorInvalidValue;
  }
  if (batch == 0) return cudaSuccess;
  switch (dtype) {
    case DType::kBFloat16:
      return cluster_attention_typed<__nv_bfloat16>(in, pos, out, batch, positions, q_heads, kv_heads, head_dim,
                                                    splits, per_split, stream);
    case DType::kFloat16:
      return cluster_attention_typed<__half>(in, pos, out, batch, positions, q_heads, kv_heads, head_dim, splits,
                                             per_split, stream);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t launch_decode_qkv_to_cache(const void* qkv, const void* cos, const void* sin, const int64_t* pos,
                                       void* q_out, void* k_cache, void* v_cache, int* used_k, DType dtype,
                                       int64_t batch, int64_t positions, int64_t q_heads, int64_t kv_heads,
                                       int64_t head_dim, cudaStream_t stream) {
  const int64_t n = batch * (q_heads + 2 * kv_heads) * (head_dim / 2);
  if (n == 0) return cudaSuccess;
  const int threads = 256;
  const int64_t blocks = (n + threads - 1) / threads;
  const dim3 grid(static_cast<unsigned>(blocks < 4096 ? blocks : 4096));
  switch (dtype) {
    case DType::kBFloat16:
      return launch_kernel(decode_qkv_to_cache<__nv_bfloat16>, grid, dim3(threads), stream,
                           static_cast<const __nv_bfloat16*>(qkv), static_cast<const __nv_bfloat16*>(cos),
                           static_cast<const __nv_bfloat16*>(sin), pos, static_cast<__nv_bfloat16*>(q_out),
                           static_cast<__nv_bfloat16*>(k_cache), static_cast<__nv_bfloat16*>(v_cache), used_k, batch,
                           positions, q_heads, kv_heads, head_dim);
    case DType::kFloat16:
      return launch_kernel(decode_qkv_to_cache<__half>, grid, dim3(threads), stream, static_cast<const __half*>(qkv),
                           static_cast<const __half*>(cos), static_cast<const __half*>(sin), pos,
                           static_cast<__half*>(q_out), static_cast<__half*>(k_cache), static_cast<__half*>(v_cache),
                           used_k, batch, positions, q_heads, kv_heads, head_dim);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace gpubench::engine::fused
