#pragma once
// FP8 training's memory passes as gpubench's own CUDA kernels (issue #30), torch-free: the amax of a tensor in one
// read, and the scaled saturating cast to e4m3/e5m2 in one more, optionally writing the transposed copy the backward
// products need in the same pass (a cast-transpose, as Transformer Engine's). The scale is computed on the device from
// the amax (no host synchronisation); fp8.cpp launches them on LibTorch's current stream.

#include <cstdint>

#include <cuda_runtime_api.h>

#include "cuda/fused_kernels.h"

namespace gpubench::engine::fused {

/// *amax = max(*amax, max |x[i]|) over n elements, as fp32 (NaN propagates: it orders above inf). `amax` must hold a
/// value the caller set (0 for a fresh one).
cudaError_t launch_fp8_amax(const void* x, DType dtype, int64_t n, float* amax, cudaStream_t stream);

/// x viewed as [rows, cols] row-major, scaled by s = fmax / *amax (fmax 448 for e4m3, 57,344 for e5m2; s = 1 where
/// *amax is 0 or not finite) and cast with saturation (|values| beyond fmax become +-fmax, not inf or NaN): the FP8
/// bytes to `out` ([rows, cols], may be null) and to `out_t` ([cols, rows], may be null), and 1 / s to *inv_scale.
cudaError_t launch_fp8_cast(const void* x, DType dtype, int64_t rows, int64_t cols, bool e5m2, const float* amax,
                            void* out, void* out_t, float* inv_scale, cudaStream_t stream);

/// One tensor of a many-tensor amax-and-cast (launch_fp8_amax_cast_many): x [rows, cols] row-major (rows and cols
/// multiples of 8, x 16-byte aligned, out and out_t 8-byte aligned), its amax slot (zeroed by the caller), its FP8
/// bytes and their transpose (either may be null), its inverse scale; and where its blocks start in each launch
/// (running sums of fp8_many_amax_blocks and fp8_many_tiles over the jobs before it).
struct Fp8CastJob {
  const void* x;
  int64_t rows, cols;
  float* amax;
  void* out;
  void* out_t;
  float* inv_scale;
  int64_t amax_first, tile_first;
};

/// The blocks a job of `numel` elements takes in the amax launch, and the tiles a [rows, cols] job takes in the cast.
int64_t fp8_many_amax_blocks(int64_t numel);
int64_t fp8_many_tiles(int64_t rows, int64_t cols);

/// launch_fp8_amax and then launch_fp8_cast for each of `n` jobs (a device array, all of `dtype`), as two launches:
/// the same bytes as the one-tensor kernels give. `amax_blocks` and `tiles`: the totals over the jobs.
cudaError_t launch_fp8_amax_cast_many(const Fp8CastJob* jobs, int n, int64_t amax_blocks, int64_t tiles, DType dtype,
                                      bool e5m2, cudaStream_t stream);

}  // namespace gpubench::engine::fused
