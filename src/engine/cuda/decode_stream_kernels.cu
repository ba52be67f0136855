// The decode step's large matrix products on sm_90: the streamed GEMV (weight rows through a ring of shared memory by
// bulk copies) and the run GEMV (each warp streams its run of weight rows into registers, the greedy argmax in the LM
// head's launch), with their launches. decode_launch.cuh holds what the decode units share.

#include "cuda/decode_launch.cuh"

namespace gpubench::engine::fused {

namespace {

// ---- the streamed GEMV (sm_90): one block an SM, its weight rows copied into shared memory by the copy engine ----
//
// A GEMV's blocks above each pull a few kilobytes of weights in two round trips and end; with PDL only their first
// loads overlap the previous kernel. Here the grid is one block per SM, each owning a contiguous run of outputs
// ("units": a weight row, or two rows for SwiGLU's gate and up or a rotary pair of q/k/v rows), and a ring of
// shared-memory slots fed by bulk asynchronous copies (cp.async.bulk, completed on an mbarrier per slot): before its
// wait for the previous kernel a block has requested up to ~100 KB of its weights (all of a q/k/v or output
// projection's share on TinyLlama), and afterwards every slot a warp has used is refilled at once, so each SM keeps
// its ring in flight until its run ends. Two such blocks fit an SM, so the next GEMV's block requests its weights
// while this one computes. x (normalized, as the storage type, which is what the norm's module returns) sits in
// shared memory beside the ring.

constexpr int kStreamWarps = 8;
constexpr int kStreamMaxSlots = 64;
constexpr int kStreamSmemBytes = 110 * 1024;  // two blocks an SM (228 KB on sm_90, 1 KB of it reserved per block)
constexpr int kStreamBarrierBytes = kStreamMaxSlots * 8;
constexpr int kStreamEpilogue = 128;  // outputs (x rows) whose bias and residual a block stages; rotary: head size

/// kStreamGreedy: a plain product (the run GEMV only) whose outputs also go through the greedy tail (DecodeGreedyTail).
enum StreamMode : int { kStreamPlain = 0, kStreamGelu = 1, kStreamSwiglu = 2, kStreamQkvCache = 3, kStreamGreedy = 4 };

/// What a streamed GEMV launch computes and where its outputs go (one struct: a kernel parameter).
struct StreamArgs {
  const void* x = nullptr;
  int64_t ldx = 0;
  DecodeWeights w;
  const void* bias = nullptr;
  const void* residual = nullptr;
  void* out = nullptr;  // [m, n] (not used by kStreamQkvCache)
  int64_t n = 0, k = 0;
  DecodeInputNorm norm;
  DecodeCacheWrite cache;  // kStreamQkvCache only
  int slots = 0;           // ring slots a block may use
  bool weights_first = false;  // weights loaded with L2's evict_first priority (weights_evict_first)
  DecodeGreedyTail greedy;     // kStreamGreedy only
};

__host__ __device__ constexpr int64_t stream_align(int64_t b) { return (b + 127) / 128 * 128; }

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ uint32_t smem_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void barrier_init(uint32_t bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void barrier_expect(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
/// `bytes` from global memory into shared memory at `dst` by the copy engine, completed on the mbarrier `bar`, with
/// the L2 eviction policy `policy` (weight_policy).
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar,
                                          uint64_t policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;"
      ::"r"(dst), "l"(src), "r"(bytes), "r"(bar), "l"(policy) : "memory");
}
/// 16 bytes of shared memory (16-byte aligned) as one load: where the ring's rows were read through a uint4*, nvcc
/// emitted four 4-byte loads at a 16-byte lane stride (4-way bank conflicts); one load made TinyLlama's step 1.032x
/// as fast on the H200 (f77cd0e:results/2026-12-03-h200-decode-run-head, call 2).
__device__ __forceinline__ uint4 load_shared16(const uint4* p) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(smem_address(p)));
  return v;
}
__device__ __forceinline__ void barrier_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  } while (done == 0);
}
#endif

/// Row j of the concatenated weight blocks.
template <typename T>
__device__ __forceinline__ const T* weight_row(const DecodeWeights& w, int64_t j, int64_t k) {
  const void* base = w.w[0];
  if (w.count > 1 && j >= w.rows[0]) {
    j -= w.rows[0];
    base = w.w[1];
    if (w.count > 2 && j >= w.rows[1]) {
      j -= w.rows[1];
      base = w.w[2];
    }
  }
  return static_cast<const T*>(base) + j * k;
}

/// The norm's gamma and beta for this thread's first chunk of x (zeros past k or without them): weights, so loaded
/// before the wait for the previous kernel, where stage_x would otherwise fetch them after x's statistics, a
/// dependent round trip on the kernel's critical path.
struct NormAhead {
  uint4 gamma = make_uint4(0, 0, 0, 0), beta = make_uint4(0, 0, 0, 0);
};
template <typename T>
__device__ __forceinline__ NormAhead norm_ahead(const StreamArgs& a) {
  NormAhead n;
  if (a.norm.weight != nullptr && threadIdx.x < a.k / 8) {
    n.gamma = __ldg(reinterpret_cast<const uint4*>(a.norm.weight) + threadIdx.x);
    if (a.norm.bias != nullptr) n.beta = __ldg(reinterpret_cast<const uint4*>(a.norm.bias) + threadIdx.x);
  }
  return n;
}

/// x's M rows (row stride a.ldx) into shared memory xs [M, k], normalized as the norm's module returns them (RMSNorm:
/// x r rounded to the storage type, then times gamma, rounded again; LayerNorm rounded once), by all kStreamWarps
/// warps of the block, after the wait for the previous kernel; ends with a barrier. `ahead`: norm_ahead's values.
template <typename T, int M>
__device__ __forceinline__ void stage_x(const StreamArgs& a, T* xs, const NormAhead& ahead) {
  const int64_t k = a.k, chunks = k / 8;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  __shared__ float stats[kStreamWarps][M][2];
  const T* nw = static_cast<const T*>(a.norm.weight);
  const T* nb = static_cast<const T*>(a.norm.bias);
  float sum[M], squares[M];
#pragma unroll
  for (int r = 0; r < M; ++r) {
    sum[r] = 0.0f;
    squares[r] = 0.0f;
    for (int64_t c = threadIdx.x; c < chunks; c += kStreamWarps * 32) {
      // through L2 only: an earlier kernel of the step wrote it
      const uint4 v = __ldcg(reinterpret_cast<const uint4*>(static_cast<const T*>(a.x) + r * a.ldx) + c);
      reinterpret_cast<uint4*>(xs + r * k)[c] = v;
      if (nw == nullptr) continue;  // statistics only for a norm
      float f[8];
      unpack8<T>(v, f);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        sum[r] += f[e];
        squares[r] = fmaf(f[e], f[e], squares[r]);
      }
    }
  }
  if (nw != nullptr) {
#pragma unroll
    for (int r = 0; r < M; ++r) {
      sum[r] = warp_sum(sum[r]);
      squares[r] = warp_sum(squares[r]);
      if (lane == 0) {
        stats[warp][r][0] = sum[r];
        stats[warp][r][1] = squares[r];
      }
    }
    __syncthreads();
    const float inv_k = 1.0f / static_cast<float>(k);
#pragma unroll
    for (int r = 0; r < M; ++r) {
      float s = 0.0f, q = 0.0f;
#pragma unroll
      for (int i = 0; i < kStreamWarps; ++i) {
        s += stats[i][r][0];
        q += stats[i][r][1];
      }
      const bool rms = a.norm.rms;
      const float mean = rms ? 0.0f : s * inv_k;
      const float inv = rsqrtf((rms ? q * inv_k : fmaxf(q * inv_k - mean * mean, 0.0f)) + a.norm.eps);
      for (int64_t c = threadIdx.x; c < chunks; c += kStreamWarps * 32) {
        uint4* p = reinterpret_cast<uint4*>(xs + r * k) + c;
        float f[8], g[8], b[8];
        unpack8<T>(*p, f);
        const bool first = c == threadIdx.x;
        unpack8<T>(first ? ahead.gamma : __ldg(reinterpret_cast<const uint4*>(nw) + c), g);
        if (nb != nullptr) unpack8<T>(first ? ahead.beta : __ldg(reinterpret_cast<const uint4*>(nb) + c), b);
        T y[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          const float v =
              rms ? rounded<T>(f[e] * inv) * g[e] : (f[e] - mean) * inv * g[e] + (nb != nullptr ? b[e] : 0.0f);
          store(y, e, v);
        }
        *p = *reinterpret_cast<const uint4*>(y);
      }
    }
  }
  __syncthreads();
}

template <typename T, int M, int MODE>
__global__ void __launch_bounds__(kStreamWarps * 32, 2) decode_stream_gemv(const StreamArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int kRows = MODE >= kStreamSwiglu ? 2 : 1;  // weight rows a unit reads
  extern __shared__ __align__(128) unsigned char smem[];
  const int64_t k = a.k, chunks = k / 8;
  const uint32_t row_bytes = static_cast<uint32_t>(k * sizeof(T)), unit_bytes = kRows * row_bytes;
  const uint32_t bars = smem_address(smem);
  T* xs = reinterpret_cast<T*>(smem + kStreamBarrierBytes);  // M x k
  unsigned char* ring = smem + kStreamBarrierBytes + stream_align(M * k * static_cast<int64_t>(sizeof(T)));
  const int64_t half = MODE == kStreamQkvCache ? a.cache.head_dim / 2 : 0;
  const int64_t units = MODE == kStreamQkvCache ? a.n / 2 : a.n;
  const int64_t u0 = units * blockIdx.x / gridDim.x, u1 = units * (blockIdx.x + 1) / gridDim.x;
  const int count = static_cast<int>(u1 - u0), slots = a.slots < count ? a.slots : count;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  // Unit u's first weight row (its second: + half for a rotary pair, the same row of `up` for SwiGLU).
  auto unit_row = [&](int64_t u, int o) -> const T* {
    if constexpr (MODE == kStreamSwiglu) {
      return static_cast<const T*>(a.w.w[o]) + u * k;
    } else if constexpr (MODE == kStreamQkvCache) {
      return weight_row<T>(a.w, (u / half) * 2 * half + u % half + o * half, k);
    } else {
      return weight_row<T>(a.w, u, k);
    }
  };
  const uint64_t policy = weight_policy(a.weights_first);
  auto request = [&](int slot, int64_t u) {  // one thread: the unit's rows into the slot
    const uint32_t bar = bars + 8 * slot;
    barrier_expect(bar, unit_bytes);
#pragma unroll
    for (int o = 0; o < kRows; ++o) {
      bulk_copy(smem_address(ring + static_cast<int64_t>(slot) * unit_bytes + o * row_bytes), unit_row(u, o),
                row_bytes, bar, policy);
    }
  };
  if (threadIdx.x == 0) {  // weights only before the wait: nothing an earlier kernel of the step writes
    for (int s = 0; s < slots; ++s) barrier_init(bars + 8 * s);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    for (int s = 0; s < slots; ++s) request(s, u0 + s);
  }
  // What the epilogues add, staged once so that no unit's epilogue waits on a load of its own: the bias of the
  // block's outputs (a weight: before the wait) and their residual, or for the q/k/v product the rotary tables' row
  // at the position. Where it does not fit (more than kStreamEpilogue values), the epilogue loads them itself.
  __shared__ float epi[2][kStreamEpilogue];  // bias / cos, residual / sin
  const bool staged = MODE == kStreamQkvCache ? a.cache.cos != nullptr && a.cache.head_dim <= kStreamEpilogue
                                              : count * M <= kStreamEpilogue;
  if (MODE != kStreamQkvCache && staged && a.bias != nullptr) {
    for (int i = threadIdx.x; i < count * M; i += kStreamWarps * 32) {
      epi[0][i] = load(static_cast<const T*>(a.bias), u0 + i / M);
    }
  }
  const NormAhead ahead = norm_ahead<T>(a);
  wait_for_previous_kernel();
  let_next_kernel_start();

  int64_t pos = 0;
  if (MODE == kStreamQkvCache) {
    pos = *a.cache.pos;
    if (blockIdx.x == 0 && a.cache.used_k != nullptr && threadIdx.x < M) {
      a.cache.used_k[threadIdx.x] = static_cast<int>(pos + 1);
    }
    if (staged) {
      const int64_t d = a.cache.head_dim;
      for (int i = threadIdx.x; i < d; i += kStreamWarps * 32) {
        epi[0][i] = load(static_cast<const T*>(a.cache.cos) + pos * d, i);
        epi[1][i] = load(static_cast<const T*>(a.cache.sin) + pos * d, i);
      }
    }
  } else if (staged && a.residual != nullptr) {
    for (int i = threadIdx.x; i < count * M; i += kStreamWarps * 32) {
      epi[1][i] = load(static_cast<const T*>(a.residual), (i % M) * a.n + u0 + i / M);
    }
  }
  stage_x<T, M>(a, xs, ahead);  // ends with a barrier: epi is complete

  const uint4* xv = reinterpret_cast<const uint4*>(xs);
  // Each slot has one warp (slot mod 8), which consumes its units in order and refills it: a slot's fills then never
  // run ahead of its reads, and a wait for fill p (parity p mod 2) can never be met by fill p - 2. (With unit i on
  // warp i mod 8 and a slot count not a multiple of 8, a warp could reach a unit while the slot's previous fill was
  // still in flight, find that parity already complete, read stale rows and refill the slot out of turn: TinyLlama's
  // 12 gate/up slots failed so on the H200.)
  for (int i = 0; i < count; ++i) {
    const int slot = i % slots;
    if (slot % kStreamWarps != warp) continue;
    barrier_wait(bars + 8 * slot, static_cast<uint32_t>((i / slots) & 1));
    const uint4* wv = reinterpret_cast<const uint4*>(ring + static_cast<int64_t>(slot) * unit_bytes);
    float acc[kRows][M];
#pragma unroll
    for (int o = 0; o < kRows; ++o) {
#pragma unroll
      for (int r = 0; r < M; ++r) acc[o][r] = 0.0f;
    }
#pragma unroll 4
    for (int64_t c = lane; c < chunks; c += 32) {
      float wf[kRows][8];
#pragma unroll
      for (int o = 0; o < kRows; ++o) unpack8<T>(load_shared16(wv + o * chunks + c), wf[o]);
#pragma unroll
      for (int r = 0; r < M; ++r) {
        float xf[8];
        unpack8<T>(xv[r * chunks + c], xf);
#pragma unroll
        for (int o = 0; o < kRows; ++o) {
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[o][r] = fmaf(wf[o][e], xf[e], acc[o][r]);
        }
      }
    }
    __syncwarp();
    if (lane == 0 && i + slots < count) {  // the slot is read: its next unit on its way
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      request(slot, u0 + i + slots);
    }
#pragma unroll
    for (int o = 0; o < kRows; ++o) {
#pragma unroll
      for (int r = 0; r < M; ++r) acc[o][r] = warp_sum(acc[o][r]);
    }
    const int64_t u = u0 + i;
#pragma unroll
    for (int r = 0; r < M; ++r) {
      if (lane != r) continue;
      if constexpr (MODE == kStreamQkvCache) {
        const DecodeCacheWrite& cw = a.cache;
        const int64_t d = cw.head_dim, head = u / half, e = u % half, ja = head * d + e;
        const T* bias = static_cast<const T*>(a.bias);
        float y1 = rounded<T>(acc[0][r] + (bias != nullptr ? load(bias, ja) : 0.0f));
        float y2 = rounded<T>(acc[1][r] + (bias != nullptr ? load(bias, ja + half) : 0.0f));
        if (cw.cos != nullptr && head < cw.q_heads + cw.kv_heads) {  // x cos + rotate_half(x) sin
          const T* cs = static_cast<const T*>(cw.cos) + pos * d;
          const T* sn = static_cast<const T*>(cw.sin) + pos * d;
          const float x1 = y1, x2 = y2;
          const float c1 = staged ? epi[0][e] : load(cs, e), s1 = staged ? epi[1][e] : load(sn, e);
          const float c2 = staged ? epi[0][e + half] : load(cs, e + half);
          const float s2 = staged ? epi[1][e + half] : load(sn, e + half);
          y1 = x1 * c1 - x2 * s1;
          y2 = x2 * c2 + x1 * s2;
        }
        T* dst = head < cw.q_heads ? static_cast<T*>(cw.q_out) + (r * cw.q_heads + head) * d
                 : head < cw.q_heads + cw.kv_heads
                     ? static_cast<T*>(cw.k_cache) + ((r * cw.positions + pos) * cw.kv_heads + head - cw.q_heads) * d
                     : static_cast<T*>(cw.v_cache) +
                           ((r * cw.positions + pos) * cw.kv_heads + head - cw.q_heads - cw.kv_heads) * d;
        store(dst, e, y1);
        store(dst, e + half, y2);
      } else if (staged) {
        const int at = i * M + r;
        gemv_epilogue_values<T, MODE == kStreamGelu ? 1 : MODE == kStreamSwiglu ? 2 : 0>(
            acc[0][r], acc[kRows - 1][r], a.bias != nullptr ? epi[0][at] : 0.0f, a.residual != nullptr, epi[1][at],
            static_cast<T*>(a.out), a.n, u, r);
      } else {
        gemv_epilogue<T, MODE == kStreamGelu ? 1 : MODE == kStreamSwiglu ? 2 : 0>(
            acc[0][r], acc[kRows - 1][r], static_cast<const T*>(a.bias), static_cast<const T*>(a.residual),
            static_cast<T*>(a.out), a.n, u, r);
      }
    }
  }
#endif
}

/// Ring slots of `rows` weight rows of k 16-bit values beside m rows of x.
int stream_slots(int64_t m, int64_t k, int rows) {
  const int64_t ring = kStreamSmemBytes - kStreamBarrierBytes - stream_align(m * k * 2);
  const int64_t slots = ring / (static_cast<int64_t>(rows) * k * 2);
  return static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(slots, kStreamMaxSlots)));
}


template <typename T, int M, int MODE>
cudaError_t stream_launch(StreamArgs a, int64_t units, cudaStream_t stream) {
  void (*kernel)(const StreamArgs) = decode_stream_gemv<T, M, MODE>;
  static std::atomic<uint64_t> sized{0};
  const cudaError_t e = allow_smem(sized, kernel, kStreamSmemBytes);
  if (e != cudaSuccess) return e;
  a.slots = stream_slots(M, a.k, MODE >= kStreamSwiglu ? 2 : 1);
  a.weights_first = weights_evict_first();
  const int64_t grid = std::min<int64_t>(device::multiprocessors(), units);
  return launch_kernel_smem(kernel, dim3(static_cast<unsigned>(grid)), dim3(kStreamWarps * 32), kStreamSmemBytes,
                            stream, a);
}

// ---- the run GEMV: each warp streams its own run of weight rows straight into registers ------------------------
//
// For the large products of one token (TinyLlama's gate/up and down, the LM heads), where the streamed GEMV's
// consumers, not its copies, set the pace (f77cd0e:results/2026-12-02-h200-decode-gemv-bench: its ring alone reads the LM head
// at 4.0-4.3 TB/s, with the arithmetic 2.4-2.7). The grid is kRunBlocksPerSm blocks an SM; each warp owns a
// contiguous run of outputs and reads their rows as 512-byte steps (a 16-byte chunk a lane), kRunDepth steps of each
// row (gate and up for SwiGLU) in flight and the next kRunDepth issued before the current ones are used; the first
// are issued before the wait for the previous kernel. x, normalized as in the streamed GEMV, sits in shared memory.

/// An argmax candidate as one 64-bit key whose unsigned order is `better`'s: the value's bits mapped to an unsigned
/// order (NaN the largest, -0 as +0, as comparisons have them), then the column inverted (ties to the first).
__device__ __forceinline__ unsigned long long greedy_key(float v, int64_t j) {
  uint32_t u = v != v ? 0x7fffffffu : v == 0.0f ? 0u : __float_as_uint(v);
  u = (u & 0x80000000u) != 0 ? ~u : u | 0x80000000u;
  return (static_cast<unsigned long long>(u) << 32) | (0xffffffffu - static_cast<uint32_t>(j));
}

/// The greedy tail (DecodeGreedyTail) at the end of a block whose lanes r < M hold their warp's best (v, j) of x row
/// r: the block's best of each row into scratch[r] (64-bit atomic max of greedy_key), then the last block to arrive
/// (the counter in scratch[M]) writes the tokens, the history and the next position, and zeroes scratch again.
template <int M>
__device__ void greedy_tail(const DecodeGreedyTail& g, float v, int64_t j, int64_t n) {
  __shared__ unsigned long long block_best[M];
  __shared__ bool last;
  const int lane = threadIdx.x & 31;
  if (threadIdx.x < M) block_best[threadIdx.x] = 0;
  __syncthreads();
  if (lane < M) atomicMax(&block_best[lane], greedy_key(v, j));
  __syncthreads();
  auto* keys = reinterpret_cast<unsigned long long*>(g.scratch);
  auto* arrived = reinterpret_cast<unsigned int*>(g.scratch + M);
  if (threadIdx.x == 0) {
    for (int r = 0; r < M; ++r) atomicMax(&keys[r], block_best[r]);
    __threadfence();  // this block's keys before its arrival
    last = atomicAdd(arrived, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last || threadIdx.x >= M) return;
  __threadfence();  // every block's keys are in
  const int r = static_cast<int>(threadIdx.x);
  const unsigned long long key = atomicExch(&keys[r], 0ull);
  const int64_t best = 0xffffffffll - static_cast<int64_t>(key & 0xffffffffull);
  const int64_t token = best >= 0 && best < n ? best : 0;
  const int64_t p = *g.pos, column = p - g.history_offset;
  g.token[r] = token;
  if (column >= 0 && column < g.history_ld) g.history[r * g.history_ld + column] = token;
  __syncwarp(0xffffffffu >> (32 - M));  // every lane has read *pos
  if (r == 0) {
    *g.pos = p + 1;
    *arrived = 0;
  }
}

constexpr int kRunDepth = 4;
constexpr int kRunBlocksPerSm = 2;
constexpr int kRunMaxSmemBytes = 96 * 1024;  // x's rows: two blocks an SM


template <typename T, int M, int MODE>
__global__ void __launch_bounds__(kStreamWarps * 32, kRunBlocksPerSm) decode_run_gemv(const StreamArgs a) {
  constexpr int kRows = MODE == kStreamSwiglu ? 2 : 1, D = kRunDepth;
  extern __shared__ __align__(16) unsigned char run_smem[];
  T* xs = reinterpret_cast<T*>(run_smem);
  const int64_t k = a.k, chunks = k / 8, per_row = (chunks + 31) / 32;  // steps a row
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kStreamWarps;
  const int64_t w = static_cast<int64_t>(blockIdx.x) * kStreamWarps + warp;
  const int64_t j0 = a.n * w / warps, j1 = a.n * (w + 1) / warps, steps = (j1 - j0) * per_row;
  auto rows_of = [&](int64_t j, const T** p) {
    if constexpr (MODE == kStreamSwiglu) {
      p[0] = static_cast<const T*>(a.w.w[0]) + j * k;
      p[1] = static_cast<const T*>(a.w.w[1]) + j * k;
    } else {
      p[0] = weight_row<T>(a.w, j, k);
    }
  };
  // The load cursor: the row it is in, its step in that row, the steps issued.
  const T* lrow[kRows];
  int64_t lj = j0, lt = 0, issued = 0;
  if (steps > 0) rows_of(j0, lrow);
  const uint64_t policy = weight_policy(a.weights_first);
  auto issue = [&](uint4 (&dst)[D][kRows]) {
#pragma unroll
    for (int u = 0; u < D; ++u) {
      if (issued < steps) {
        const int64_t c = lt * 32 + lane;
#pragma unroll
        for (int o = 0; o < kRows; ++o) {
          dst[u][o] = c < chunks ? load_once(lrow[o] + 8 * c, policy) : make_uint4(0, 0, 0, 0);
        }
        ++issued;
        if (++lt == per_row) {
          lt = 0;
          if (++lj < j1) rows_of(lj, lrow);
        }
      }
    }
  };
  uint4 buf[D][kRows];
  issue(buf);  // weights only before the wait
  // What the epilogues add, held by the lanes so that no row's epilogue waits on a load of its own: lane l has output
  // (row j0 + l / M, x row l % M)'s bias (a weight: before the wait) and residual (after it); rows past 32 / M of the
  // run load theirs in the epilogue.
  const bool held = lane < (j1 - j0) * M;
  const int64_t held_j = j0 + lane / M;
  const float held_bias = held && a.bias != nullptr ? load(static_cast<const T*>(a.bias), held_j) : 0.0f;
  const NormAhead ahead = norm_ahead<T>(a);
  wait_for_previous_kernel();
  let_next_kernel_start();
  const float held_residual =
      held && a.residual != nullptr ? load(static_cast<const T*>(a.residual), (lane % M) * a.n + held_j) : 0.0f;
  stage_x<T, M>(a, xs, ahead);

  const uint4* xv = reinterpret_cast<const uint4*>(xs);
  float best_v = -INFINITY;  // kStreamGreedy: lane r < M's best output of x row r so far, and its column
  int64_t best_j = a.n;
  float acc[kRows][M];
#pragma unroll
  for (int o = 0; o < kRows; ++o) {
#pragma unroll
    for (int r = 0; r < M; ++r) acc[o][r] = 0.0f;
  }
  int64_t j = j0, t = 0;  // the compute cursor
  for (int64_t b = 0; b < steps; b += D) {
    uint4 next[D][kRows];
    issue(next);
#pragma unroll
    for (int u = 0; u < D; ++u) {
      if (b + u >= steps) break;
      const int64_t c = t * 32 + lane;
      if (c < chunks) {
        float wf[kRows][8];
#pragma unroll
        for (int o = 0; o < kRows; ++o) unpack8<T>(buf[u][o], wf[o]);
#pragma unroll
        for (int r = 0; r < M; ++r) {
          float xf[8];
          unpack8<T>(xv[r * chunks + c], xf);
#pragma unroll
          for (int o = 0; o < kRows; ++o) {
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[o][r] = fmaf(wf[o][e], xf[e], acc[o][r]);
          }
        }
      }
      if (++t == per_row) {  // row j is summed: its outputs
#pragma unroll
        for (int o = 0; o < kRows; ++o) {
#pragma unroll
          for (int r = 0; r < M; ++r) acc[o][r] = warp_sum(acc[o][r]);
        }
        const int64_t at = (j - j0) * M;  // lane at + r holds (j, r)'s bias and residual, where at + M <= 32
        const int from = static_cast<int>((at + lane) & 31);
        const float bias_r = __shfl_sync(0xffffffffu, held_bias, from);
        const float residual_r = __shfl_sync(0xffffffffu, held_residual, from);
#pragma unroll
        for (int r = 0; r < M; ++r) {
          if (lane != r) continue;
          float v;
          if (at + M <= 32) {
            v = gemv_epilogue_values<T, MODE == kStreamGelu ? 1 : MODE == kStreamSwiglu ? 2 : 0>(
                acc[0][r], acc[kRows - 1][r], bias_r, a.residual != nullptr, residual_r, static_cast<T*>(a.out), a.n,
                j, r);
          } else {
            v = gemv_epilogue<T, MODE == kStreamGelu ? 1 : MODE == kStreamSwiglu ? 2 : 0>(
                acc[0][r], acc[kRows - 1][r], static_cast<const T*>(a.bias), static_cast<const T*>(a.residual),
                static_cast<T*>(a.out), a.n, j, r);
          }
          if constexpr (MODE == kStreamGreedy) better(best_v, best_j, v, j);
        }
#pragma unroll
        for (int o = 0; o < kRows; ++o) {
#pragma unroll
          for (int r = 0; r < M; ++r) acc[o][r] = 0.0f;
        }
        t = 0;
        ++j;
      }
    }
#pragma unroll
    for (int u = 0; u < D; ++u) {
#pragma unroll
      for (int o = 0; o < kRows; ++o) buf[u][o] = next[u][o];
    }
  }
  if constexpr (MODE == kStreamGreedy) greedy_tail<M>(a.greedy, best_v, best_j, a.n);
}

template <typename T, int M, int MODE>
cudaError_t run_launch(StreamArgs a, int64_t units, cudaStream_t stream) {
  void (*kernel)(const StreamArgs) = decode_run_gemv<T, M, MODE>;
  static std::atomic<uint64_t> sized{0};
  const cudaError_t e = allow_smem(sized, kernel, kRunMaxSmemBytes);
  if (e != cudaSuccess) return e;
  a.weights_first = weights_evict_first();
  const int64_t per_block = kStreamWarps;  // every warp a row at least
  const int64_t grid = std::min<int64_t>(int64_t{device::multiprocessors()} * kRunBlocksPerSm,
                                         (units + per_block - 1) / per_block);
  return launch_kernel_smem(kernel, dim3(static_cast<unsigned>(grid)), dim3(kStreamWarps * 32),
                            static_cast<size_t>(M * a.k * 2), stream, a);
}

/// The streamed GEMV (kRun false) or the run GEMV (true) for m rows of x.
template <bool kRun, typename T, int M, int MODE>
cudaError_t family_launch(const StreamArgs& a, int64_t units, cudaStream_t stream) {
  if constexpr (kRun) {
    return run_launch<T, M, MODE>(a, units, stream);
  } else {
    return stream_launch<T, M, MODE>(a, units, stream);
  }
}

template <bool kRun, typename T, int MODE>
cudaError_t stream_rows(const StreamArgs& a, int64_t m, int64_t units, cudaStream_t stream) {
  switch (m) {
    case 1: return family_launch<kRun, T, 1, MODE>(a, units, stream);
    case 2: return family_launch<kRun, T, 2, MODE>(a, units, stream);
    case 3: return family_launch<kRun, T, 3, MODE>(a, units, stream);
    case 4: return family_launch<kRun, T, 4, MODE>(a, units, stream);
    default: return cudaErrorInvalidValue;
  }
}

/// A streamed GEMV's arguments but where its outputs go.
StreamArgs stream_args(const void* x, int64_t ldx, const DecodeWeights& weights, const void* bias, int64_t n,
                       int64_t k, const DecodeInputNorm& norm) {
  StreamArgs a;
  a.x = x;
  a.ldx = ldx;
  a.w = weights;
  a.bias = bias;
  a.n = n;
  a.k = k;
  a.norm = norm;
  return a;
}

template <int MODE, bool kRun = false>
cudaError_t stream_typed(const StreamArgs& a, DType dtype, int64_t m, int64_t units, cudaStream_t stream) {
  switch (dtype) {
    case DType::kBFloat16: return stream_rows<kRun, __nv_bfloat16, MODE>(a, m, units, stream);
    case DType::kFloat16: return stream_rows<kRun, __half, MODE>(a, m, units, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

bool decode_stream_available() { return stream_available(); }

bool decode_stream_serves(int64_t m, int64_t k, int rows_per_output) {
  return m >= 1 && m <= kDecodeStreamMaxRows && k > 0 && k % 8 == 0 && (rows_per_output == 1 || rows_per_output == 2) &&
         stream_slots(m, k, rows_per_output) >= 2 && stream_available();
}

namespace {

/// The streamed GEMV (kRun false) or the run GEMV's launch, checked.
template <bool kRun>
cudaError_t product_launch(const void* x, int64_t ldx, const DecodeWeights& weights, const void* bias,
                           const void* residual, void* out, DType dtype, int64_t m, int64_t n, int64_t k,
                           DecodeActivation act, cudaStream_t stream, const DecodeInputNorm& norm) {
  const bool glu = act == DecodeActivation::kSwiglu;
  const bool serves = kRun ? decode_run_serves(m, k, glu ? 2 : 1) : decode_stream_serves(m, k, glu ? 2 : 1);
  if (!serves || !decode_gemv_fits(x, ldx, weights, k)) return cudaErrorInvalidValue;
  if (glu && (weights.count != 2 || bias != nullptr)) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  StreamArgs a = stream_args(x, ldx, weights, bias, n, k, norm);
  a.residual = residual;
  a.out = out;
  switch (act) {
    case DecodeActivation::kNone: return stream_typed<kStreamPlain, kRun>(a, dtype, m, n, stream);
    case DecodeActivation::kGeluTanh: return stream_typed<kStreamGelu, kRun>(a, dtype, m, n, stream);
    case DecodeActivation::kSwiglu: return stream_typed<kStreamSwiglu, kRun>(a, dtype, m, n, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t launch_decode_stream_gemv(const void* x, int64_t ldx, const DecodeWeights& weights, const void* bias,
                                      const void* residual, void* out, DType dtype, int64_t m, int64_t n, int64_t k,
                                      DecodeActivation act, cudaStream_t stream, const DecodeInputNorm& norm) {
  return product_launch<false>(x, ldx, weights, bias, residual, out, dtype, m, n, k, act, stream, norm);
}

bool decode_run_serves(int64_t m, int64_t k, int rows_per_output) {
  return m >= 1 && m <= kDecodeStreamMaxRows && k > 0 && k % 8 == 0 && (rows_per_output == 1 || rows_per_output == 2) &&
         m * k * 2 <= kRunMaxSmemBytes && stream_available();
}

cudaError_t launch_decode_run_gemv(const void* x, int64_t ldx, const DecodeWeights& weights, const void* bias,
                                   const void* residual, void* out, DType dtype, int64_t m, int64_t n, int64_t k,
                                   DecodeActivation act, cudaStream_t stream, const DecodeInputNorm& norm) {
  return product_launch<true>(x, ldx, weights, bias, residual, out, dtype, m, n, k, act, stream, norm);
}

int64_t decode_greedy_scratch(int64_t m) { return m + 1; }

cudaError_t launch_decode_run_gemv_greedy(const void* x, int64_t ldx, const void* weight, void* logits, DType dtype,
                                          int64_t m, int64_t n, int64_t k, const DecodeGreedyTail& tail,
                                          cudaStream_t stream, const DecodeInputNorm& norm) {
  DecodeWeights weights;
  weights.w[0] = weight;
  weights.rows[0] = n;
  weights.count = 1;
  if (!decode_run_serves(m, k, 1) || !decode_gemv_fits(x, ldx, weights, k) || n < 1 || n > 0xffffffffll ||
      tail.token == nullptr || tail.history == nullptr || tail.pos == nullptr || tail.scratch == nullptr) {
    return cudaErrorInvalidValue;
  }
  StreamArgs a = stream_args(x, ldx, weights, nullptr, n, k, norm);
  a.out = logits;
  a.greedy = tail;
  return stream_typed<kStreamGreedy, true>(a, dtype, m, n, stream);
}

cudaError_t launch_decode_stream_qkv_to_cache(const void* x, int64_t ldx, const DecodeWeights& weights,
                                              const void* bias, const DecodeCacheWrite& cache, DType dtype, int64_t m,
                                              int64_t k, cudaStream_t stream, const DecodeInputNorm& norm) {
  const int64_t n = (cache.q_heads + 2 * cache.kv_heads) * cache.head_dim;
  int64_t rows = 0;
  for (int i = 0; i < weights.count; ++i) rows += weights.rows[i];
  if (!decode_stream_serves(m, k, 2) || !decode_gemv_fits(x, ldx, weights, k) || rows != n || cache.head_dim % 2 != 0 ||
      cache.pos == nullptr || cache.k_cache == nullptr || cache.v_cache == nullptr || cache.q_out == nullptr ||
      (cache.cos == nullptr) != (cache.sin == nullptr)) {
    return cudaErrorInvalidValue;
  }
  if (n == 0) return cudaSuccess;
  StreamArgs a = stream_args(x, ldx, weights, bias, n, k, norm);
  a.cache = cache;
  return stream_typed<kStreamQkvCache>(a, dtype, m, n / 2, stream);
}

}  // namespace gpubench::engine::fused
