#pragma once
// The GPU half of the image pipeline's last stage, as one kernel over the whole batch: each sample's crop window of
// its decoded image (any size, anywhere in device memory) is resized to out_size x out_size with torch's
// antialiased bilinear weights (the same the CPU path uses), mirrored when asked, and normalised into the batch
// tensor (float, any strides: NCHW or channels_last). No torch headers: compiled by nvcc.

#include <cstdint>

#include <cuda_runtime_api.h>

namespace gpubench::engine {

/// One sample, as the kernel reads it (plain data, copied to the device per batch).
struct CropDesc {
  uint64_t src = 0;      ///< device address of the sample's interleaved RGB pixels
  int32_t width = 0, height = 0, pitch = 0;  ///< pixels, pixels, bytes per row
  int32_t flip = 0;
  float x = 0, y = 0, w = 0, h = 0;          ///< the crop window, in the image's pixels
};

struct NormalizeParams {
  float mean[3];     ///< in 0..255 units
  float inv_std[3];  ///< 1 / (std in 0..255 units)
};

/// Launches the kernel on `stream`: `descs` (device) holds `n` samples; `out` is the float batch tensor's data with
/// element strides (sample, channel, row, column). Returns the launch status.
cudaError_t launch_crop_resize_normalize(const CropDesc* descs, int n, int out_size, float* out, int64_t s_n,
                                         int64_t s_c, int64_t s_h, int64_t s_w, const NormalizeParams& norm,
                                         cudaStream_t stream);

}  // namespace gpubench::engine
