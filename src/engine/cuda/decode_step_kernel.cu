#include "cuda/decode_step_kernel.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>

#include "cuda/decode_device.cuh"
#include "cuda/device_values.cuh"

namespace gpubench::engine::fused {

namespace {

using device::load;
using device::copies_wait;
using device::copy16_async;
using device::load_once;
using device::prefetch_l2;
using device::rounded;
using device::softmax_numerators;
using device::store;
using device::unpack8;
using device::warp_sum;

// One block an SM of kWarps warps. A GEMV phase gives each block a contiguous run of outputs ("units": a weight row,
// or two for SwiGLU's gate and up and for a rotary pair of q/k/v rows) and each warp an equal share of the block's
// 512-byte steps (a 16-byte chunk a lane of each of the unit's rows), so no warp waits on another's longer run; a
// warp keeps kDepth steps of loads in flight, refilling each slot as it is used. Nothing is prefetched further ahead
// but the output product's rows during the attention: per-lane or bulk L2 prefetches of the next rows made the step
// slower at every depth on the H200 (f77cd0e:results/2026-12-03-h200-decode-step-kernel). A warp's sums go to shared memory
// per unit, and the block adds them up in warp order (the same result every run).
constexpr int kWarps = 12;
constexpr int kThreads = kWarps * 32;
// Positions an attention split covers at most (its keys and values sit in shared memory), and at least where the
// window allows (DecodeStepTuning::min_split).
constexpr int kMaxPerSplit = 64;
constexpr int kMinPerSplit = 32;
// The block's small shared state: a norm's per-warp sums (2 per warp, first), the LM head's per-warp best keys (8 bytes
// per warp) and each warp's share of a GEMV phase's steps (first step, end, first unit: 3 ints per warp).
constexpr int kKeysAt = 2 * kWarps, kWarpTableAt = 4 * kWarps, kReduceFloats = 7 * kWarps + 4;

/// Everything the kernel reads from its parameter space.
struct StepParams {
  DecodeStepModel m;
  DecodeStepState s;
  int splits = 1, per_split = 1;
  int xs_floats = 0;   // the input vector (fp32), or the attention's working set
  int warp_slots = 0;  // per-warp partial sums of a GEMV phase
};

/// One element another block of this launch may have written: through L2 (L1 is not coherent across SMs).
template <typename T>
__device__ __forceinline__ float load_cg(const T* p, int64_t i) {
  const unsigned short b = __ldcg(reinterpret_cast<const unsigned short*>(p) + i);
  T t;
  *reinterpret_cast<unsigned short*>(&t) = b;
  return load(&t, 0);
}

/// Bytes [p, p + bytes) into L2, spread over the block's threads (a prefetch per 128 bytes).
__device__ __forceinline__ void prefetch_range(const void* p, int64_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (int64_t off = static_cast<int64_t>(threadIdx.x) * 128; off < bytes; off += kThreads * 128) prefetch_l2(c + off);
}

// ---- the arrival counters: one per phase of the step ----------------------------------------------------------

/// The phases' counters and, for measuring, where each block stamps the time it saw a phase's input ready (slot 2 i:
/// phase i's wait ended; slot 0: the kernel's start) and the time it arrived (slot 2 i + 1), [2 phases, grid].
struct Sync {
  unsigned* done = nullptr;
  unsigned long long* trace = nullptr;
};

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void stamp(const Sync& s, int slot) {
  if (s.trace != nullptr) s.trace[static_cast<int64_t>(slot) * gridDim.x + blockIdx.x] = now_ns();
}

/// This block's part of phase i is written: every thread's stores are ordered before the count (the barrier, then
/// one thread's device-wide fence), as cooperative groups' grid barrier does.
__device__ __forceinline__ void arrive(const Sync& s, int i) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(&s.done[i], 1u);
    stamp(s, 2 * i + 1);
  }
}

/// Every block has arrived at phase i (then what they wrote is visible to loads through L2).
__device__ __forceinline__ void wait_all(const Sync& s, int i) {
  if (threadIdx.x == 0) {
    unsigned v = 0;
    do {
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(s.done + i) : "memory");
    } while (v < gridDim.x);
    stamp(s, 2 * (i + 1));
  }
  __syncthreads();
}

/// The block's share [u0, u1) of n units.
__device__ __forceinline__ void block_share(int64_t n, int64_t* u0, int64_t* u1) {
  *u0 = n * blockIdx.x / gridDim.x;
  *u1 = n * (blockIdx.x + 1) / gridDim.x;
}

/// The input of a GEMV phase into xs as fp32: k values of src (plus add's, rounded to T as their sum is), normalized
/// as the norm's module returns them (RMSNorm: x r rounded to T, then times gamma, rounded again; LayerNorm rounded
/// once; none when nw is null), as decode_kernels.cu's stage_x does. raw, when given, receives the input before the
/// norm. A thread's chunks of x, add, gamma and beta are requested together (one round trip), the norm's weights kept
/// in registers for up to kStageRounds chunks a thread. All threads; ends with a barrier.
constexpr int kStageRounds = 2;
template <typename T>
__device__ void stage(const T* src, const T* add, int64_t k, const T* nw, const T* nb, bool rms, float eps,
                      float* xs, float* red, T* raw) {
  const int chunks = static_cast<int>(k / 8);
  float sum = 0.0f, squares = 0.0f;
  uint4 gw[kStageRounds], bw[kStageRounds];
  for (int c0 = 0; c0 < chunks; c0 += kStageRounds * kThreads) {
    uint4 xv[kStageRounds], av[kStageRounds];
#pragma unroll
    for (int j = 0; j < kStageRounds; ++j) {
      const int c = c0 + j * kThreads + threadIdx.x;
      if (c >= chunks) continue;
      xv[j] = __ldcg(reinterpret_cast<const uint4*>(src) + c);
      if (add != nullptr) av[j] = __ldcg(reinterpret_cast<const uint4*>(add) + c);
      if (nw != nullptr) gw[j] = __ldg(reinterpret_cast<const uint4*>(nw) + c);
      if (nb != nullptr) bw[j] = __ldg(reinterpret_cast<const uint4*>(nb) + c);
    }
#pragma unroll
    for (int j = 0; j < kStageRounds; ++j) {
      const int c = c0 + j * kThreads + threadIdx.x;
      if (c >= chunks) continue;
      float f[8];
      unpack8<T>(xv[j], f);
      if (add != nullptr) {
        float a[8];
        unpack8<T>(av[j], a);
#pragma unroll
        for (int e = 0; e < 8; ++e) f[e] = rounded<T>(f[e] + a[e]);
      }
      if (raw != nullptr) device::store_v<T, 8>(raw, 8 * c, f);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        sum += f[e];
        squares = fmaf(f[e], f[e], squares);
      }
      float4* x4 = reinterpret_cast<float4*>(xs + 8 * c);
      x4[0] = make_float4(f[0], f[1], f[2], f[3]);
      x4[1] = make_float4(f[4], f[5], f[6], f[7]);
    }
  }
  if (nw != nullptr) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    sum = warp_sum(sum);
    squares = warp_sum(squares);
    if (lane == 0) {
      red[2 * warp] = sum;
      red[2 * warp + 1] = squares;
    }
    __syncthreads();
    float s = 0.0f, q = 0.0f;
#pragma unroll
    for (int i = 0; i < kWarps; ++i) {
      s += red[2 * i];
      q += red[2 * i + 1];
    }
    const float inv_k = 1.0f / static_cast<float>(k);
    const float mean = rms ? 0.0f : s * inv_k;
    const float inv = rsqrtf((rms ? q * inv_k : fmaxf(q * inv_k - mean * mean, 0.0f)) + eps);
    for (int c0 = 0; c0 < chunks; c0 += kStageRounds * kThreads) {  // the chunks this thread wrote
#pragma unroll
      for (int j = 0; j < kStageRounds; ++j) {
        const int c = c0 + j * kThreads + threadIdx.x;
        if (c >= chunks) continue;
        if (c0 > 0) {  // beyond what the registers kept
          gw[j] = __ldg(reinterpret_cast<const uint4*>(nw) + c);
          if (nb != nullptr) bw[j] = __ldg(reinterpret_cast<const uint4*>(nb) + c);
        }
        float* x = xs + 8 * c;
        float g[8], b[8];
        unpack8<T>(gw[j], g);
        if (nb != nullptr) unpack8<T>(bw[j], b);
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          x[e] = rms ? rounded<T>(rounded<T>(x[e] * inv) * g[e])
                     : rounded<T>((x[e] - mean) * inv * g[e] + (nb != nullptr ? b[e] : 0.0f));
        }
      }
    }
  }
  __syncthreads();
}

/// A GEMV phase's streaming: the block's units [u0, u1) of rows of k (a multiple of 256: a 512-byte step never
/// straddles two rows) against xs (fp32 in shared memory), row(u, o) the o-th weight row of unit u. The loads of the
/// first kDepth steps are issued, then before() runs (the wait for
/// the phase's input and its staging into xs; every thread calls it), then the rows stream, each step's registers
/// refilled with the step kDepth on as soon as it is used. On return (after a barrier)
/// wp[w * slots + (i - table[3 w + 2]) * R + o] holds warp w's sum for the block's unit i, row o; unit_sums adds them
/// up.
template <typename T, int R, typename Row, typename Before>
__device__ __forceinline__ void stream_units(int64_t u0, int64_t u1, int64_t k, const Row& row, const float* xs,
                                             float* wp, int slots, int* table, const Before& before) {
  constexpr int kDepth = 12 / R;  // steps in flight: 12 16-byte loads a lane
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int per_row = static_cast<int>(k / 256);
  const int steps = static_cast<int>(u1 - u0) * per_row;
  const int s0 = steps * warp / kWarps, s1 = steps * (warp + 1) / kWarps;
  if (lane == 0) {  // for unit_sums
    table[3 * warp] = s0;
    table[3 * warp + 1] = s1;
    table[3 * warp + 2] = s0 / per_row;
  }
  // The load cursor: this lane's next chunk of each row, the steps left in the unit, the steps issued.
  struct Cursor {
    const T* p[R];
    int unit, left, at;
  };
  auto start = [&](Cursor& c) {
    c.unit = s0 / per_row;
    c.left = per_row - s0 % per_row;
    c.at = s0;
#pragma unroll
    for (int o = 0; o < R; ++o) c.p[o] = s0 < s1 ? row(u0 + c.unit, o) + (s0 % per_row) * 256 + lane * 8 : nullptr;
  };
  auto advance = [&](Cursor& c) {
    ++c.at;
    if (--c.left == 0) {
      ++c.unit;
      c.left = per_row;
#pragma unroll
      for (int o = 0; o < R; ++o) c.p[o] = c.at < s1 ? row(u0 + c.unit, o) + lane * 8 : nullptr;
    } else {
#pragma unroll
      for (int o = 0; o < R; ++o) c.p[o] += 256;
    }
  };
  Cursor lc;
  start(lc);
  uint4 ring[kDepth][R];  // step s sits in slot (s - s0) % kDepth until it is used, then the slot is refilled
#pragma unroll
  for (int d = 0; d < kDepth; ++d) {
    if (lc.at < s1) {
#pragma unroll
      for (int o = 0; o < R; ++o) ring[d][o] = load_once(lc.p[o]);
      advance(lc);
    }
  }
  before();

  float a[R];
#pragma unroll
  for (int o = 0; o < R; ++o) a[o] = 0.0f;
  int cu = 0, ct = s0 % per_row;  // the unit (from the warp's first) and step being summed
  float* mine = wp + warp * slots;
  const float* xl = xs + 8 * lane;
  for (int s = s0; s < s1; s += kDepth) {
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
      if (s + d >= s1) break;
      const float4* x4 = reinterpret_cast<const float4*>(xl + ct * 256);
      const float4 xa = x4[0], xb = x4[1];
#pragma unroll
      for (int o = 0; o < R; ++o) {
        float w[8];
        unpack8<T>(ring[d][o], w);
        float v = a[o];
        v = fmaf(w[0], xa.x, v);
        v = fmaf(w[1], xa.y, v);
        v = fmaf(w[2], xa.z, v);
        v = fmaf(w[3], xa.w, v);
        v = fmaf(w[4], xb.x, v);
        v = fmaf(w[5], xb.y, v);
        v = fmaf(w[6], xb.z, v);
        v = fmaf(w[7], xb.w, v);
        a[o] = v;
      }
      if (lc.at < s1) {  // the slot's next step
#pragma unroll
        for (int o = 0; o < R; ++o) ring[d][o] = load_once(lc.p[o]);
        advance(lc);
      }
      const bool row_end = ++ct == per_row;
      if (row_end || s + d + 1 == s1) {
#pragma unroll
        for (int o = 0; o < R; ++o) {
          const float v = warp_sum(a[o]);
          if (lane == 0) mine[cu * R + o] = v;
          a[o] = 0.0f;
        }
        if (row_end) {
          ct = 0;
          ++cu;
        }
      }
    }
  }
  __syncthreads();
}

/// Unit i's sums (the block's i-th) from the warps' partial sums, in warp order (table: stream_units').
template <int R>
__device__ __forceinline__ void unit_sums(int i, int per_row, const float* wp, int slots, const int* table,
                                          float (&out)[R]) {
  const int a = i * per_row, b = a + per_row;  // the unit's steps
#pragma unroll
  for (int o = 0; o < R; ++o) out[o] = 0.0f;
  for (int w = 0; w < kWarps; ++w) {
    const int s0 = table[3 * w], s1 = table[3 * w + 1];
    if (s0 >= s1 || s0 >= b || s1 <= a) continue;
    const int slot = (i - table[3 * w + 2]) * R;
#pragma unroll
    for (int o = 0; o < R; ++o) out[o] += wp[w * slots + slot + o];
  }
}

/// A whole GEMV phase: stream_units, then epi(u, sums, carry) for each of the block's units (threads over units),
/// then the arrival at phase `phase`. carry = prep(u): what the epilogue reads besides the sums (a bias, the
/// residual), loaded right after the wait for the thread's first unit so that it arrives while the rows stream. A
/// block without units arrives at once.
template <typename T, int R, typename Row, typename Before, typename Prep, typename Epi>
__device__ __forceinline__ void gemv_phase(int64_t n, int64_t k, const Row& row, float* xs, float* wp, int slots,
                                           int* table, const Before& before, const Prep& prep,
                                           const Epi& epi, const Sync& sync, int phase) {
  int64_t u0 = 0, u1 = 0;
  block_share(n, &u0, &u1);
  if (u0 < u1) {
    float2 carry = make_float2(0.0f, 0.0f);
    const int first = threadIdx.x;
    auto after_wait = [&]() {
      before();
      if (first < u1 - u0) carry = prep(u0 + first);
    };
    stream_units<T, R>(u0, u1, k, row, xs, wp, slots, table, after_wait);
    const int per_row = static_cast<int>(k / 256);
    for (int i = first; i < u1 - u0; i += kThreads) {
      float sums[R];
      unit_sums<R>(i, per_row, wp, slots, table, sums);
      epi(u0 + i, sums, i == first ? carry : prep(u0 + i));
    }
  }
  arrive(sync, phase);
}

/// The greedy order of (logit, index) as one unsigned 64-bit key: larger logits first, NaN above all (as
/// torch.argmax), the first index among equal ones.
__device__ __forceinline__ unsigned long long argmax_key(float v, int64_t i) {
  unsigned bits = __float_as_uint(v == 0.0f ? 0.0f : v);
  bits = v != v ? 0xffffffffu : (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
  return (static_cast<unsigned long long>(bits) << 32) | (0xffffffffu - static_cast<unsigned>(i));
}

/// The attention's shared memory for head_dim D: the split's keys and values (rows padded by 8 values, so a warp
/// reading a column of rows meets every bank once), the group's q (fp32, scaled), the scores, each head's (max, total)
/// and the combine's (max, total) of every split.
template <int D>
struct AttnSmem {
  static constexpr int kRow = D + 8;
  static int64_t floats(int64_t group, int64_t per, int64_t splits) {
    return 2 * per * kRow / 2 + group * D + group * per + 2 * group + 2 * group * splits + 4;
  }
};

/// The attention phase of one layer: item i < kv_heads x splits (block i, and i + grid, ...) attends the q heads of
/// kv head i / splits over its split of the positions in use: its keys and values are copied into shared memory
/// before the wait for the q/k/v phase (all but the new position's, which that phase writes), then q and the new
/// row, then scores, the split's softmax and the weighted values from shared memory; the partial (sums, max, total)
/// goes to scratch and the last split of a kv head to finish (a counter, left zero) combines them into attn. Blocks
/// without an item arrive at once.
template <typename T, int D>
__device__ void attention_phase(const StepParams& p, const DecodeStepLayer& L, int64_t pos, float* sm,
                                unsigned* kv_counters, const Sync& sync, int phase) {
  using Smem = AttnSmem<D>;
  constexpr int kRow = Smem::kRow, kChunks = D / 8;
  const int hq = static_cast<int>(p.m.q_heads), hk = static_cast<int>(p.m.kv_heads), group = hq / hk;
  const int splits = p.splits, per = p.per_split, tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int items = hk * splits;
  const T* kc = static_cast<const T*>(L.k_cache);
  const T* vc = static_cast<const T*>(L.v_cache);
  const T* q = static_cast<const T*>(p.s.q);
  T* out = static_cast<T*>(p.s.attn);
  const int64_t used = pos + 1;
  T* kt = reinterpret_cast<T*>(sm);  // [per, kRow]
  T* vt = kt + per * kRow;
  float* qs = reinterpret_cast<float*>(vt + per * kRow);  // [group, D], scaled
  float* sc = qs + group * D;                              // [group, per]: scores, then their exponentials
  float* ml = sc + group * per;                            // [group, 2]: the split's max and total
  float* cm = ml + 2 * group;                              // [group, splits, 2]: every split's, for the combine
  int* flag = reinterpret_cast<int*>(cm + 2 * group * splits);
  float* part = p.s.part;                                         // [hq, splits, D]
  float* part_ml = part + static_cast<int64_t>(hq) * splits * D;  // [hq, splits, 2]
  const float scale = rsqrtf(static_cast<float>(D));
  // Rows [a, b) of kv head kh into the tiles from row 0 (`from`: the tile's first position).
  auto copy_rows = [&](int kh, int64_t from, int64_t a, int64_t b) {
    for (int64_t i = tid; i < (b - a) * kChunks; i += kThreads) {
      const int64_t r = a + i / kChunks, c = i % kChunks;
      const int64_t src = (r * hk + kh) * D + c * 8, dst = (r - from) * kRow + c * 8;
      copy16_async(kt + dst, kc + src);
      copy16_async(vt + dst, vc + src);
    }
  };
  for (int item = blockIdx.x; item < items; item += gridDim.x) {
    const int kh = item / splits, split = item % splits;
    const int64_t p0 = static_cast<int64_t>(split) * per, p1 = min(p0 + per, used);
    const int n = p1 > p0 ? static_cast<int>(p1 - p0) : 0;
    __syncthreads();  // the previous item's shared memory is free
    copy_rows(kh, p0, p0, min(p1, pos));  // rows this step does not write
    if (item == static_cast<int>(blockIdx.x)) wait_all(sync, phase - 1);
    if (p0 <= pos && pos < p1) copy_rows(kh, p0, pos, pos + 1);  // the new position's, just written
    for (int i = tid; i < group * kChunks; i += kThreads) {
      float f[8];
      unpack8<T>(__ldcg(reinterpret_cast<const uint4*>(q + static_cast<int64_t>(kh) * group * D) + i), f);
      float4* d4 = reinterpret_cast<float4*>(qs + 8 * i);
      d4[0] = make_float4(f[0] * scale, f[1] * scale, f[2] * scale, f[3] * scale);
      d4[1] = make_float4(f[4] * scale, f[5] * scale, f[6] * scale, f[7] * scale);
    }
    copies_wait();
    __syncthreads();
    for (int idx = tid; idx < group * per; idx += kThreads) {  // scores: threads over (head, position)
      const int g = idx / per, i = idx % per;
      if (i >= n) continue;
      const float* qg = qs + g * D;
      const T* kr = kt + i * kRow;
      float s = 0.0f;
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        float kf[8];
        unpack8<T>(*reinterpret_cast<const uint4*>(kr + 8 * c), kf);
        const float4 qa = *reinterpret_cast<const float4*>(qg + 8 * c);
        const float4 qb = *reinterpret_cast<const float4*>(qg + 8 * c + 4);
        s = fmaf(qa.x, kf[0], s);
        s = fmaf(qa.y, kf[1], s);
        s = fmaf(qa.z, kf[2], s);
        s = fmaf(qa.w, kf[3], s);
        s = fmaf(qb.x, kf[4], s);
        s = fmaf(qb.y, kf[5], s);
        s = fmaf(qb.z, kf[6], s);
        s = fmaf(qb.w, kf[7], s);
      }
      sc[g * per + i] = s;
    }
    __syncthreads();
    for (int g = warp; g < group; g += kWarps) {  // the split's softmax, a warp a head
      const float2 m_l = softmax_numerators(sc + g * per, n, lane);
      if (lane == 0) {
        ml[2 * g] = m_l.x;
        ml[2 * g + 1] = m_l.y;
      }
    }
    __syncthreads();
    for (int idx = tid; idx < group * D; idx += kThreads) {  // weighted values: threads over (head, dimension)
      const int g = idx / D, dd = idx % D, head = kh * group + g;
      float o = 0.0f;
#pragma unroll 8
      for (int i = 0; i < n; ++i) o = fmaf(sc[g * per + i], load(vt, static_cast<int64_t>(i) * kRow + dd), o);
      if (splits == 1) {
        store(out, static_cast<int64_t>(head) * D + dd, o / ml[2 * g + 1]);
      } else {
        part[(static_cast<int64_t>(head) * splits + split) * D + dd] = o;
      }
    }
    if (splits == 1) continue;
    if (tid < group) {
      part_ml[(static_cast<int64_t>(kh * group + tid) * splits + split) * 2] = ml[2 * tid];
      part_ml[(static_cast<int64_t>(kh * group + tid) * splits + split) * 2 + 1] = ml[2 * tid + 1];
    }
    __syncthreads();
    if (tid == 0) {
      __threadfence();
      *flag = atomicAdd(&kv_counters[kh], 1u) == static_cast<unsigned>(splits - 1);
    }
    __syncthreads();
    if (*flag == 0) continue;
    __threadfence();
    for (int i = tid; i < group * splits; i += kThreads) {  // every split's (max, total) of the group's heads
      cm[2 * i] = __ldcg(part_ml + (static_cast<int64_t>(kh) * group * splits + i) * 2);
      cm[2 * i + 1] = __ldcg(part_ml + (static_cast<int64_t>(kh) * group * splits + i) * 2 + 1);
    }
    __syncthreads();
    for (int idx = tid; idx < group * D; idx += kThreads) {
      const int g = idx / D, dd = idx % D, head = kh * group + g;
      float mx = -INFINITY;
      for (int s = 0; s < splits; ++s) mx = fmaxf(mx, cm[2 * (g * splits + s)]);
      float total = 0.0f, acc = 0.0f;
      const float* src = part + static_cast<int64_t>(head) * splits * D + dd;
      for (int s0 = 0; s0 < splits; s0 += 8) {  // eight splits' loads in flight at once
        float v[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) v[j] = s0 + j < splits ? __ldcg(src + static_cast<int64_t>(s0 + j) * D) : 0.0f;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          if (s0 + j >= splits) break;
          const float ls = cm[2 * (g * splits + s0 + j) + 1];
          const float w = ls > 0.0f ? __expf(cm[2 * (g * splits + s0 + j)] - mx) : 0.0f;
          total += ls * w;
          acc = fmaf(v[j], w, acc);
        }
      }
      store(out, static_cast<int64_t>(head) * D + dd, acc / total);
    }
    if (tid == 0) kv_counters[kh] = 0;  // ready for the next step
  }
  arrive(sync, phase);
}

template <typename T, int D>
__global__ void __launch_bounds__(kThreads, 1) decode_step(const StepParams p) {
  extern __shared__ __align__(16) float step_smem[];
  float* xs = step_smem;
  float* wp = xs + p.xs_floats;
  float* red = wp + kWarps * p.warp_slots;
  int* table = reinterpret_cast<int*>(red + kWarpTableAt);
  float* rope = red + kReduceFloats;  // cos, sin at pos: [2, D]
  const DecodeStepModel& m = p.m;
  const int64_t dim = m.dim, ffn = m.ffn, hq = m.q_heads, hk = m.kv_heads, half = D / 2;
  const int64_t pos = *p.s.pos, token = *p.s.token_in;
  auto* best = reinterpret_cast<unsigned long long*>(p.s.sync);  // words 0-1
  unsigned* kv_counters = p.s.sync + 2;
  Sync sync;
  sync.done = kv_counters + hk;  // one counter per phase
  sync.trace = p.s.trace;
  unsigned* done = sync.done;
  stamp(sync, 0);
  const int slots = p.warp_slots;
  T* hidden = static_cast<T*>(p.s.hidden);
  T* mlp = static_cast<T*>(p.s.mlp);
  if (blockIdx.x == 0 && threadIdx.x == 0) *best = 0ull;  // read after the last phase's barrier only
  const bool rotary = m.rope_cos != nullptr;
  if (rotary && threadIdx.x < 2 * D) {  // the one position's rotary row, for every layer (barriers follow)
    const T* table_row = static_cast<const T*>(threadIdx.x < D ? m.rope_cos : m.rope_sin) + pos * D;
    rope[threadIdx.x] = load(table_row, threadIdx.x % D);
  }
  auto no_carry = [](int64_t) { return make_float2(0.0f, 0.0f); };
  int phase = 0;
  for (int64_t l = 0; l < m.layers; ++l) {
    const DecodeStepLayer& L = m.layer[l];
    {  // q, k and v of the normalized input, rotary pairs together, straight to q and the caches
      const T* wq = static_cast<const T*>(L.wq);
      const T* wk = static_cast<const T*>(L.wk);
      const T* wv = static_cast<const T*>(L.wv);
      auto row = [&](int64_t u, int o) -> const T* {
        const int64_t r = (u / half) * D + u % half + o * half;
        return r < hq * D ? wq + r * dim : r < (hq + hk) * D ? wk + (r - hq * D) * dim : wv + (r - (hq + hk) * D) * dim;
      };
      auto before = [&]() {
        if (l > 0) wait_all(sync, phase - 1);
        const T* src = l > 0 ? hidden : static_cast<const T*>(m.embed) + token * dim;
        const T* add = l == 0 && m.pos_embed != nullptr ? static_cast<const T*>(m.pos_embed) + pos * dim : nullptr;
        stage<T>(src, add, dim, static_cast<const T*>(L.attn_norm_w), static_cast<const T*>(L.attn_norm_b), m.rms,
                 m.eps, xs, red, l == 0 && blockIdx.x == 0 ? hidden : nullptr);
      };
      auto prep = [&](int64_t u) {  // the pair's biases
        const int64_t head = u / half, r = head * D + u % half;
        const T* bias = static_cast<const T*>(head < hq ? L.bq : head < hq + hk ? L.bk : L.bv);
        const int64_t br = head < hq ? r : head < hq + hk ? r - hq * D : r - (hq + hk) * D;
        return bias != nullptr ? make_float2(load(bias, br), load(bias, br + half)) : make_float2(0.0f, 0.0f);
      };
      auto epi = [&](int64_t u, const float(&s)[2], float2 bias) {
        const int64_t head = u / half, e = u % half;
        float y1 = rounded<T>(s[0] + bias.x);
        float y2 = rounded<T>(s[1] + bias.y);
        if (rotary && head < hq + hk) {  // x cos + rotate_half(x) sin
          const float x1 = y1, x2 = y2;
          y1 = x1 * rope[e] - x2 * rope[D + e];
          y2 = x2 * rope[e + half] + x1 * rope[D + e + half];
        }
        T* dst = head < hq        ? static_cast<T*>(p.s.q) + head * D
                 : head < hq + hk ? static_cast<T*>(L.k_cache) + (pos * hk + head - hq) * D
                                  : static_cast<T*>(L.v_cache) + (pos * hk + head - hq - hk) * D;
        store(dst, e, y1);
        store(dst, e + half, y2);
      };
      gemv_phase<T, 2>((hq + 2 * hk) * half, dim, row, xs, wp, slots, table, before, prep, epi, sync, phase);
      ++phase;
    }
    {  // attention; its blocks also start the output product's rows into L2
      int64_t u0 = 0, u1 = 0;
      block_share(dim, &u0, &u1);
      prefetch_range(static_cast<const T*>(L.wo) + u0 * hq * D, (u1 - u0) * hq * D * static_cast<int64_t>(sizeof(T)));
      attention_phase<T, D>(p, L, pos, xs, kv_counters, sync, phase);
      ++phase;
    }
    // The output product and the MLP's second: + bias + the residual, in place.
    auto residual = [&](const void* bias) {
      return [bias, hidden](int64_t u) {
        return make_float2(bias != nullptr ? load(static_cast<const T*>(bias), u) : 0.0f, load_cg(hidden, u));
      };
    };
    auto add_residual = [&](int64_t u, const float(&s)[1], float2 c) { store(hidden, u, s[0] + c.x + c.y); };
    {
      const T* wo = static_cast<const T*>(L.wo);
      auto row = [&](int64_t u, int) -> const T* { return wo + u * hq * D; };
      auto before = [&]() {
        wait_all(sync, phase - 1);
        stage<T>(static_cast<const T*>(p.s.attn), nullptr, hq * D, nullptr, nullptr, true, 0.0f, xs, red, nullptr);
      };
      gemv_phase<T, 1>(dim, hq * D, row, xs, wp, slots, table, before, residual(L.bo), add_residual, sync, phase);
      ++phase;
    }
    {  // the MLP's first product with its norm: SwiGLU, or GELU (tanh) of the product + bias
      auto before = [&]() {
        wait_all(sync, phase - 1);
        stage<T>(hidden, nullptr, dim, static_cast<const T*>(L.mlp_norm_w), static_cast<const T*>(L.mlp_norm_b),
                 m.rms, m.eps, xs, red, nullptr);
      };
      const T* up = static_cast<const T*>(L.w_up);
      if (L.w_gate != nullptr) {
        const T* gate = static_cast<const T*>(L.w_gate);
        auto row = [&](int64_t u, int o) -> const T* { return (o == 0 ? gate : up) + u * dim; };
        auto epi = [&](int64_t u, const float(&s)[2], float2) {
          store(mlp, u, s[0] / (1.0f + __expf(-s[0])) * s[1]);
        };
        gemv_phase<T, 2>(ffn, dim, row, xs, wp, slots, table, before, no_carry, epi, sync, phase);
      } else {
        const T* b = static_cast<const T*>(L.b_up);
        auto row = [&](int64_t u, int) -> const T* { return up + u * dim; };
        auto prep = [&](int64_t u) { return make_float2(b != nullptr ? load(b, u) : 0.0f, 0.0f); };
        auto epi = [&](int64_t u, const float(&s)[1], float2 c) {
          const float v = s[0] + c.x;
          store(mlp, u, 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v))));
        };
        gemv_phase<T, 1>(ffn, dim, row, xs, wp, slots, table, before, prep, epi, sync, phase);
      }
      ++phase;
    }
    {
      const T* wd = static_cast<const T*>(L.w_down);
      auto row = [&](int64_t u, int) -> const T* { return wd + u * ffn; };
      auto before = [&]() {
        wait_all(sync, phase - 1);
        stage<T>(mlp, nullptr, ffn, nullptr, nullptr, true, 0.0f, xs, red, nullptr);
      };
      gemv_phase<T, 1>(dim, ffn, row, xs, wp, slots, table, before, residual(L.b_down), add_residual, sync, phase);
      ++phase;
    }
  }
  // The final norm, the LM head and the greedy choice: each block's best logit (as the storage type holds it) by one
  // 64-bit atomicMax; the last block to arrive writes the token and leaves the counters zero.
  const T* head = static_cast<const T*>(m.lm_head);
  T* logits = static_cast<T*>(p.s.logits);
  auto row = [&](int64_t u, int) -> const T* { return head + u * dim; };
  auto before = [&]() {
    wait_all(sync, phase - 1);
    stage<T>(hidden, nullptr, dim, static_cast<const T*>(m.final_norm_w), static_cast<const T*>(m.final_norm_b), m.rms,
             m.eps, xs, red, nullptr);
  };
  int64_t u0 = 0, u1 = 0;
  block_share(m.vocab, &u0, &u1);
  unsigned long long key = 0ull;
  if (u0 < u1) {
    stream_units<T, 1>(u0, u1, dim, row, xs, wp, slots, table, before);
    const int per_row = static_cast<int>(dim / 256);
    for (int i = threadIdx.x; i < u1 - u0; i += kThreads) {
      float sums[1];
      unit_sums<1>(i, per_row, wp, slots, table, sums);
      const float v = rounded<T>(sums[0]);
      if (logits != nullptr) store(logits, u0 + i, v);
      key = max(key, argmax_key(v, u0 + i));
    }
  }
  for (int off = 16; off > 0; off >>= 1) key = max(key, __shfl_xor_sync(0xffffffffu, key, off));
  auto* keys = reinterpret_cast<unsigned long long*>(red + kKeysAt);  // 8-byte aligned: red is
  __syncthreads();
  if ((threadIdx.x & 31) == 0) keys[threadIdx.x >> 5] = key;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kWarps; ++w) key = max(key, keys[w]);
    if (key != 0ull) atomicMax(best, key);
    __threadfence();
    const bool last = atomicAdd(&done[phase], 1u) == gridDim.x - 1;
    stamp(sync, 2 * phase + 1);
    if (last) {  // every block is past every wait
      __threadfence();
      const unsigned long long b = atomicAdd(best, 0ull);
      *p.s.token_out = static_cast<int64_t>(0xffffffffu - static_cast<unsigned>(b & 0xffffffffull));
      for (int i = 0; i <= phase; ++i) done[i] = 0u;
    }
  }
}

/// The GEMV phases' most units a block takes and steps a warp streams: the per-warp slots of partial sums.
int warp_slots_for(const DecodeStepModel& m, int64_t grid) {
  const int64_t d = m.head_dim, hq = m.q_heads, hk = m.kv_heads;
  struct Gemv {
    int64_t n, k, rows;
  };
  const Gemv phases[] = {{(hq + 2 * hk) * d / 2, m.dim, 2},
                         {m.dim, hq * d, 1},
                         {m.ffn, m.dim, 2},
                         {m.dim, m.ffn, 1},
                         {m.vocab, m.dim, 1}};
  int64_t most = 1;
  for (const Gemv& g : phases) {
    const int64_t per_row = g.k / 256, units = (g.n + grid - 1) / grid;
    const int64_t warp_steps = (units * per_row + kWarps - 1) / kWarps;
    most = std::max(most, (std::min(units, warp_steps / per_row + 2)) * g.rows);
  }
  return static_cast<int>(most);
}

void attention_splits(const DecodeStepModel& m, int64_t window, int64_t grid, int* splits, int* per_split,
                      int least = kMinPerSplit) {
  least = std::max(kMinPerSplit, std::min(least, kMaxPerSplit));
  int64_t s = std::max<int64_t>(1, std::min<int64_t>(grid / m.kv_heads, (window + least - 1) / least));
  s = std::max<int64_t>(s, (window + kMaxPerSplit - 1) / kMaxPerSplit);
  *per_split = static_cast<int>((window + s - 1) / s);
  *splits = static_cast<int>((window + *per_split - 1) / *per_split);
}

int multiprocessors() { return device::multiprocessors(); }

template <typename T, int D>
cudaError_t launch_typed(StepParams p, cudaStream_t stream) {
  void (*kernel)(const StepParams) = decode_step<T, D>;
  const int64_t group = p.m.q_heads / p.m.kv_heads;
  const int64_t attn_floats = AttnSmem<D>::floats(group, p.per_split, p.splits);
  const int64_t xs = std::max({p.m.dim, p.m.ffn, p.m.q_heads * D, attn_floats});
  p.xs_floats = static_cast<int>((xs + 3) / 4 * 4);
  const size_t smem =
      (static_cast<size_t>(p.xs_floats) + kWarps * p.warp_slots + kReduceFloats + 2 * D) * sizeof(float);
  static std::atomic<size_t> allowed{0};
  if (smem > 48 * 1024 && allowed.load() < smem) {
    const cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (e != cudaSuccess) return e;
    allowed.store(smem);
  }
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(multiprocessors()));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attribute[1];  // every block resident at once: the arrival counters need it
  attribute[0].id = cudaLaunchAttributeCooperative;
  attribute[0].val.cooperative = 1;
  config.attrs = attribute;
  config.numAttrs = 1;
  const cudaError_t e = cudaLaunchKernelEx(&config, kernel, p);
  return e != cudaSuccess ? e : cudaGetLastError();
}

}  // namespace

bool decode_step_available() {
  int device = 0, major = 0;
  return cudaGetDevice(&device) == cudaSuccess &&
         cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess && major >= 9;
}

bool decode_step_serves(const DecodeStepModel& m) {
  const int64_t d = m.head_dim;
  return (d == 64 || d == 128) && m.kv_heads > 0 && m.q_heads % m.kv_heads == 0 &&
         (m.q_heads / m.kv_heads) * d <= 4096 && m.dim % 256 == 0 && m.ffn % 256 == 0 &&
         (m.q_heads * d) % 256 == 0 && m.layers > 0 &&
         m.vocab > 0 && m.vocab < (int64_t{1} << 32) && m.positions > 0;
}

int64_t decode_step_part_floats(const DecodeStepModel& m, int64_t window) {
  int splits = 1, per = 1;
  attention_splits(m, window, multiprocessors(), &splits, &per);
  return m.q_heads * splits * (m.head_dim + 2);
}

int64_t decode_step_sync_words(const DecodeStepModel& m) { return 2 + m.kv_heads + 5 * m.layers + 1; }

cudaError_t launch_decode_step(const DecodeStepModel& model, const DecodeStepState& state, DType dtype,
                               cudaStream_t stream, const DecodeStepTuning& tuning) {
  if (!decode_step_serves(model) || state.window < 1 || state.window > model.positions) return cudaErrorInvalidValue;
  StepParams p;
  p.m = model;
  p.s = state;
  const int64_t grid = multiprocessors();
  attention_splits(model, state.window, grid, &p.splits, &p.per_split,
                   tuning.min_split > 0 ? tuning.min_split : kMinPerSplit);
  p.warp_slots = warp_slots_for(model, grid);
  const bool d64 = model.head_dim == 64;
  switch (dtype) {
    case DType::kBFloat16:
      return d64 ? launch_typed<__nv_bfloat16, 64>(p, stream)
                 : launch_typed<__nv_bfloat16, 128>(p, stream);
    case DType::kFloat16:
      return d64 ? launch_typed<__half, 64>(p, stream)
                 : launch_typed<__half, 128>(p, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace gpubench::engine::fused
