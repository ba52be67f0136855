#include "cuda/gpu_augment.h"

namespace gpubench::engine {

namespace {

/// torch's antialiased bilinear taps along one axis for output index i: [lo, hi) and the weight at j is
/// max(0, 1 - |(j + 0.5 - start - center) * invscale|) / total. Mirrors axis_weights() in src/data/augment.cpp.
struct Taps {
  int lo, hi;
  float start, center, invscale, total;
};

__device__ Taps taps_for(float start, float length, int extent, int out, int i) {
  const float scale = length / out;
  const float support = scale >= 1.0f ? scale : 1.0f;
  Taps t;
  t.invscale = scale >= 1.0f ? 1.0f / scale : 1.0f;
  t.start = start;
  t.center = scale * (i + 0.5f);
  const int lo_bound = max(0, static_cast<int>(floorf(start)));
  const int hi_bound = min(extent, static_cast<int>(ceilf(start + length)));
  t.lo = lo_bound + max(0, static_cast<int>(floorf(t.center - support + 0.5f + (start - lo_bound))));
  t.hi = min(hi_bound, lo_bound + static_cast<int>(floorf(t.center + support + 0.5f + (start - lo_bound))));
  if (t.hi <= t.lo) {
    t.hi = min(t.lo + 1, extent);
    t.lo = t.hi - 1;
  }
  t.total = 0.0f;
  for (int j = t.lo; j < t.hi; ++j) t.total += fmaxf(0.0f, 1.0f - fabsf((j + 0.5f - start - t.center) * t.invscale));
  if (t.total <= 0.0f) t.total = 1.0f;
  return t;
}

__device__ float weight(const Taps& t, int j) {
  return fmaxf(0.0f, 1.0f - fabsf((j + 0.5f - t.start - t.center) * t.invscale)) / t.total;
}

__global__ void crop_resize_normalize(const CropDesc* descs, int out_size, float* out, int64_t s_n, int64_t s_c,
                                      int64_t s_h, int64_t s_w, NormalizeParams norm) {
  const int b = blockIdx.y;
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= out_size * out_size) return;
  const int oy = idx / out_size, ox = idx % out_size;
  const CropDesc d = descs[b];
  const int sx = d.flip ? out_size - 1 - ox : ox;
  const Taps tx = taps_for(d.x, d.w, d.width, out_size, sx);
  const Taps ty = taps_for(d.y, d.h, d.height, out_size, oy);
  const unsigned char* src = reinterpret_cast<const unsigned char*>(d.src);
  float r = 0, g = 0, bl = 0;
  for (int y = ty.lo; y < ty.hi; ++y) {
    const float wy = weight(ty, y);
    const unsigned char* row = src + static_cast<int64_t>(y) * d.pitch;
    for (int x = tx.lo; x < tx.hi; ++x) {
      const float w = wy * weight(tx, x);
      r += w * row[3 * x];
      g += w * row[3 * x + 1];
      bl += w * row[3 * x + 2];
    }
  }
  // Rounded to 8-bit levels first, as the CPU path and torchvision's uint8 pipeline produce.
  float* o = out + b * s_n + oy * s_h + ox * s_w;
  o[0] = (fminf(fmaxf(rintf(r), 0.0f), 255.0f) - norm.mean[0]) * norm.inv_std[0];
  o[s_c] = (fminf(fmaxf(rintf(g), 0.0f), 255.0f) - norm.mean[1]) * norm.inv_std[1];
  o[2 * s_c] = (fminf(fmaxf(rintf(bl), 0.0f), 255.0f) - norm.mean[2]) * norm.inv_std[2];
}

}  // namespace

cudaError_t launch_crop_resize_normalize(const CropDesc* descs, int n, int out_size, float* out, int64_t s_n,
                                         int64_t s_c, int64_t s_h, int64_t s_w, const NormalizeParams& norm,
                                         cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const int threads = 256;
  const dim3 grid((out_size * out_size + threads - 1) / threads, n);
  crop_resize_normalize<<<grid, threads, 0, stream>>>(descs, out_size, out, s_n, s_c, s_h, s_w, norm);
  return cudaGetLastError();
}

}  // namespace gpubench::engine
