#pragma once
// The input pipeline's GPU stage (decode: gpu | mixed): nvJPEG decodes a batch's files (their crop windows where it
// takes regions of interest) into a device arena and one CUDA kernel crops, resizes, flips and normalises them into
// the batch. The CUDA module's part of input_pipeline.cpp, behind ATen types only; without the module open() says
// why not and returns null.

#include <ATen/ATen.h>
#include <c10/core/Stream.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "gpubench/data/jpeg.hpp"
#include "gpubench/data/loader.hpp"

namespace gpubench::engine {

class GpuJpegStage {
 public:
  struct Options {
    std::string library;  ///< an nvJPEG to try first (Scenario::nvjpeg_library)
    bool roi = true;      ///< kernel_options.nvjpeg_roi
  };
  /// What the stage tells its pipeline while it prepares a batch.
  struct Hooks {
    std::function<void(const std::string&)> roi_failed;    ///< ROI decoding failed (why): whole images from now on
    std::function<void(const std::string&)> batch_failed;   ///< nvJPEG refused a batch (why): the CPU decodes it
    /// The loader's CPU decode of sample `sample` of `hb` (`fallback`: the sample to copy where it fails).
    std::function<bool(data::HostBatch& hb, int64_t sample, int64_t fallback)> decode_on_cpu;
  };
  /// Opens nvJPEG on the current device; null with `why` where it cannot (or the build has no CUDA module).
  static std::unique_ptr<GpuJpegStage> open(const Options& options, std::string& why);
  virtual ~GpuJpegStage() = default;

  /// The record's data.decoder, for the nvJPEG path.
  virtual std::string describe() const = 0;
  /// nvJPEG's backend ("hardware", "gpu_hybrid" or "hybrid").
  virtual std::string backend() const = 0;
  /// Whether nvJPEG takes this file (thread-safe: the loader's workers ask).
  virtual bool can_decode(const data::JpegInfo& info, const uint8_t* bytes, size_t size) const = 0;
  /// Bytes of the per-batch crop table a slot keeps (pinned on the host and on the device) for `batch` samples.
  virtual int64_t crop_table_bytes(int64_t batch) const = 0;
  /// Decodes `hb`'s GPU share and writes the whole batch into `images` (NCHW float, normalised) on `side`: the
  /// workers' samples travel from `host` through `staging`; `table_host`/`table_dev` are the slot's crop tables.
  virtual void prepare(data::HostBatch& hb, int64_t batch, int64_t out_size, const at::Tensor& host,
                       at::Tensor& staging, at::Tensor& table_host, at::Tensor& table_dev, at::Tensor& images,
                       const c10::Stream& side, const Hooks& hooks) = 0;
};

}  // namespace gpubench::engine
