#pragma once
// What the decode kernels' two units share (decode_kernels.cu: norms, the cache write, embeddings, argmax and
// attention; decode_gemv_kernels.cu: the three GEMV families, compiled apart so that nvcc's two longest passes run
// side by side): the device helpers, programmatic dependent launch and the launch wrappers. Internal to those units.

#include <cuda_bf16.h>
#include <cooperative_groups.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "cuda/decode_device.cuh"
#include "cuda/decode_kernels.h"
#include "cuda/device_values.cuh"

namespace gpubench::engine::fused {

/// kernel_options.decode_pdl and decode_evict_first, as the engine set them for this run (on by default; defined in
/// decode_kernels.cu, set by set_decode_launch_options).
extern std::atomic<bool> g_decode_pdl_allowed, g_decode_evict_first;

namespace {

using device::copies_wait;
using device::copy16_async;
using device::load;
using device::load_once;
using device::load_v;
using device::prefetch_l2;
using device::rounded;
using device::softmax_numerators;
using device::store;
using device::store_v;
using device::unpack8;
using device::warp_sum;
using device::weight_policy;


/// One or two 16-bit values from their bits (shared memory holds them as words).
template <typename T>
__device__ __forceinline__ float from_bits(uint16_t b);
template <>
__device__ __forceinline__ float from_bits<__nv_bfloat16>(uint16_t b) { return __bfloat162float(__ushort_as_bfloat16(b)); }
template <>
__device__ __forceinline__ float from_bits<__half>(uint16_t b) { return __half2float(__ushort_as_half(b)); }
template <typename T>
__device__ __forceinline__ float2 pair_from_bits(uint32_t w) {
  return make_float2(from_bits<T>(static_cast<uint16_t>(w & 0xffffu)), from_bits<T>(static_cast<uint16_t>(w >> 16)));
}


// ---- programmatic dependent launch ------------------------------------------------------------------------------
//
// Every decode kernel is launched so that it may start while the kernel before it in the stream still runs (Hopper's
// programmatic dependent launch, also inside a CUDA graph): it first issues the loads that depend on nothing an earlier
// kernel of the step writes (weights, the cache's older positions), then waits for the previous kernel to finish,
// and only then lets the next one start. Before its wait a kernel reads nothing the step writes (only weights, and
// L2 prefetches of cache rows, which are hints); every other read and every write comes after it.

/// Waits until the previous kernel in the stream has finished and its writes are visible (a no-op before sm_90 and
/// when the launch was not programmatic).
__device__ __forceinline__ void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/// Lets the next kernel's blocks start (and issue their weight loads) while this one runs.
__device__ __forceinline__ void let_next_kernel_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}


/// The current device's attribute `kAttr` (0 where it cannot be asked or is not positive), asked once per device.
template <cudaDeviceAttr kAttr>
int device_attribute() {
  static std::atomic<int> value[64];  // 0: not asked yet
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) return 0;
  int v = value[device].load(std::memory_order_relaxed);
  if (v == 0) {
    if (cudaDeviceGetAttribute(&v, kAttr, device) != cudaSuccess || v <= 0) return 0;
    value[device].store(v, std::memory_order_relaxed);
  }
  return v;
}

/// The current device's compute capability major.
int device_major() { return device_attribute<cudaDevAttrComputeCapabilityMajor>(); }


/// Whether this device takes programmatic launches (compute capability 9.0 and later) and the run allows them
/// (kernel_options.decode_pdl: false measures what they buy).
bool programmatic_launch() { return g_decode_pdl_allowed.load(std::memory_order_relaxed) && device_major() >= 9; }

/// Whether the streamed and run GEMVs load their weights with L2's evict_first priority (weight_policy), unless the run
/// switched it off (kernel_options.decode_evict_first: false, for measuring what it buys).
bool weights_evict_first() {
  return g_decode_evict_first.load(std::memory_order_relaxed);
}

/// Whether the streamed GEMV can run here: sm_90 and later (decode_ops decides which products it takes).
bool stream_available() { return device_major() >= 9; }

/// Launches a decode kernel with `smem` bytes of dynamic shared memory in clusters of `cluster_x` blocks along x (0:
/// no clusters), programmatically where the device allows.
template <typename... Params, typename... Args>
cudaError_t launch_kernel_cluster(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, unsigned cluster_x,
                                  cudaStream_t stream, Args... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attribute[2];
  unsigned count = 0;
  if (programmatic_launch()) {
    attribute[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[count++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster_x > 0) {
    attribute[count].id = cudaLaunchAttributeClusterDimension;
    attribute[count].val.clusterDim.x = cluster_x;
    attribute[count].val.clusterDim.y = 1;
    attribute[count++].val.clusterDim.z = 1;
  }
  config.attrs = count > 0 ? attribute : nullptr;
  config.numAttrs = count;
  const cudaError_t e = cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...);
  return e != cudaSuccess ? e : cudaGetLastError();
}

/// Launches a decode kernel with `smem` bytes of dynamic shared memory, programmatically where the device allows.
template <typename... Params, typename... Args>
cudaError_t launch_kernel_smem(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                               Args... args) {
  return launch_kernel_cluster(kernel, grid, block, smem, 0, stream, args...);
}

/// Launches a decode kernel without dynamic shared memory.
template <typename... Params, typename... Args>
cudaError_t launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream, Args... args) {
  return launch_kernel_smem(kernel, grid, block, 0, stream, args...);
}

/// The better of (v, i) and (v2, i2) into (v, i) for an argmax: NaN is the largest, as torch.argmax has it; ties go
/// to the first index.
__device__ __forceinline__ void better(float& v, int64_t& i, float v2, int64_t i2) {
  const bool nan2 = v2 != v2, nan1 = v != v;
  if ((nan2 && !nan1) || (nan2 == nan1 && (v2 > v || (v2 == v && i2 < i)))) {
    v = v2;
    i = i2;
  }
}

__device__ __forceinline__ void warp_best(float& v, int64_t& idx) {
  for (int off = 16; off > 0; off >>= 1) {
    const float v2 = __shfl_xor_sync(0xffffffffu, v, off);
    const int64_t i2 = __shfl_xor_sync(0xffffffffu, idx, off);
    better(v, idx, v2, i2);
  }
}

/// Raises `kernel`'s dynamic shared memory limit to `bytes` once per device (`sized`: the devices done, 0..63).
template <typename Kernel>
cudaError_t allow_smem(std::atomic<uint64_t>& sized, Kernel kernel, int bytes) {
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return e;
  const uint64_t bit = uint64_t{1} << (device & 63);
  if ((sized.load(std::memory_order_relaxed) & bit) == 0) {
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (e != cudaSuccess) return e;
    sized.fetch_or(bit, std::memory_order_relaxed);
  }
  return cudaSuccess;
}

/// The output of row r for column j from its bias and residual values (0 where there is none; loaded early, off the
/// kernel's tail): act(dot + bias) (+ up for SwiGLU) + residual.
/// Returns the output as stored (rounded to T).
template <typename T, int ACT>
__device__ __forceinline__ float gemv_epilogue_values(float dot, float up, float bias, bool has_residual, float residual,
                                                      T* out, int64_t n, int64_t j, int r) {
  float v = dot + bias;
  if (ACT == static_cast<int>(DecodeActivation::kGeluTanh)) {
    v = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
  } else if (ACT == static_cast<int>(DecodeActivation::kSwiglu)) {
    v = v / (1.0f + __expf(-v)) * up;
  }
  if (has_residual) v += residual;
  store(out, r * n + j, v);
  return rounded<T>(v);
}

/// The output of row r for column j: act(dot + bias) (+ up for SwiGLU) + residual.
template <typename T, int ACT>
__device__ __forceinline__ float gemv_epilogue(float dot, float up, const T* bias, const T* residual, T* out, int64_t n,
                                               int64_t j, int r) {
  return gemv_epilogue_values<T, ACT>(dot, up, bias != nullptr ? load(bias, j) : 0.0f, residual != nullptr,
                                      residual != nullptr ? load(residual, r * n + j) : 0.0f, out, n, j, r);
}

/// norm(x_r) . W_j from the sums: with no norm the product itself; RMSNorm r (x.(gamma W_j)), r = 1/sqrt(mean x^2 +
/// eps); LayerNorm r (x.(gamma W_j) - mean (gamma . W_j)) + beta . W_j, r = 1/sqrt(var + eps).
__device__ __forceinline__ float normed_dot(float dot, int kind, float sum, float squares, float gamma_w, float beta_w,
                                            float inv_k, float eps) {
  if (kind == 0) return dot;
  if (kind == 1) return dot * rsqrtf(squares * inv_k + eps);
  const float mean = sum * inv_k;
  const float r = rsqrtf(fmaxf(squares * inv_k - mean * mean, 0.0f) + eps);
  return r * (dot - mean * gamma_w) + beta_w;
}

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace

}  // namespace gpubench::engine::fused
