#pragma once
// nvJPEG, loaded at run time with dlopen (as the telemetry readers load NVML): the binary runs where the library is
// absent, and `decode: gpu` then says why it cannot. The hardware JPEG decoder (A100/H100/H200) is used where the
// GPU has one, the hybrid GPU backend elsewhere. No torch headers here.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "gpubench/data/jpeg.hpp"

namespace gpubench::engine {

class NvjpegDecoder {
 public:
  /// What the scenario says about nvJPEG: a library to try first (Scenario::nvjpeg_library, from GPUBENCH_NVJPEG)
  /// and whether to decode crop windows only (kernel_options.nvjpeg_roi).
  struct Options {
    std::string library;
    bool roi = true;
  };
  /// Loads nvJPEG (options.library, then libnvjpeg.so.13 on the loader path, then the copies that ship beside the
  /// torch wheel: torchvision.libs/, nvidia/cu13/lib/, nvidia/nvjpeg/lib/) and creates a decoder on the current
  /// CUDA device. Returns null with `why` set when that fails.
  static std::unique_ptr<NvjpegDecoder> open(std::string& why, const Options& options);
  static std::unique_ptr<NvjpegDecoder> open(std::string& why) { return open(why, Options{}); }
  ~NvjpegDecoder();
  NvjpegDecoder(const NvjpegDecoder&) = delete;
  NvjpegDecoder& operator=(const NvjpegDecoder&) = delete;

  std::string backend() const { return backend_; }  ///< "hardware", "gpu_hybrid" or "hybrid"
  /// Where the backend is not the hardware JPEG engine: the backends tried first and why each failed (for example
  /// "hardware: NVJPEG_STATUS_ARCH_MISMATCH" on a card without the engine). Empty on the hardware backend.
  const std::string& backend_fallback() const { return backend_fallback_; }
  std::string library() const { return library_; }  ///< the file loaded
  /// Whether the batched decoder takes this stream (baseline Huffman, 1 or 3 components, a supported subsampling,
  /// and nvJPEG's own check where it has one). Thread-safe.
  bool can_decode(const data::JpegInfo& info, const uint8_t* data, size_t size) const;
  /// A region of interest: the pixels [x, x + w) x [y, y + h) of an image.
  struct Roi {
    int x = 0, y = 0, w = 0, h = 0;
  };
  /// Decodes the files into `dst[i]` (device, interleaved RGB with `pitch[i]` bytes per row) on `stream`. With
  /// `roi`, only `(*roi)[i]` of each file is written (its top-left pixel at dst[i]), by nvjpegDecodeBatchedEx.
  bool decode(const std::vector<const uint8_t*>& data, const std::vector<size_t>& sizes,
              const std::vector<uint8_t*>& dst, const std::vector<size_t>& pitch, cudaStream_t stream,
              std::string& error, const std::vector<Roi>* roi = nullptr);
  /// Whether decode() takes regions of interest: this nvJPEG has the batched ROI calls, kernel_options.nvjpeg_roi is not
  /// 0, and no ROI batch has failed yet (the first failure turns it off for the decoder's life: `roi_off_reason`).
  bool roi_available() const { return roi_ok_; }
  const std::string& roi_off_reason() const { return roi_off_reason_; }

 private:
  NvjpegDecoder() = default;
  struct Api;
  std::unique_ptr<Api> api_;
  void* lib_ = nullptr;
  void* handle_ = nullptr;
  void* state_ = nullptr;
  int initialized_batch_ = -1;
  std::vector<void*> params_;  ///< nvjpegDecodeParams_t, one per image of the largest ROI batch so far
  bool roi_ok_ = false;
  std::string roi_off_reason_;
  std::string backend_, library_, backend_fallback_;
};

}  // namespace gpubench::engine
