#pragma once
// `decode: auto`, decided by a rule from the H200's measurements (results/2026-11-30-h200-jpeg-pipeline): nvJPEG
// costs the training step GPU time beside it (~1.6 ms per 256-image ResNet-50 step: its colour pass, bitstream
// copies, the crop kernel), while libjpeg-turbo on the workers costs the GPU nothing as long as the workers keep up.
// On that host 15 workers delivered 7,000-11,000 images/s (at least ~465 per worker) and ResNet-50 trained at
// 0.990 / 0.982 of synthetic (bf16 / fp16) from them, against 0.957 / 0.932 with GPU decoding. So: decode on the CPU
// when the workers can deliver the H200's fastest ResNet-50 rate (fp16, 6,132 images/s) at that per-worker rate,
// i.e. with 14 workers or more; else `mixed` where nvJPEG works: the workers decode the share of each batch they
// keep up with, nvJPEG the rest (decode_split.hpp; H200, 7 workers: results/2026-12-02-h200-resnet-pipeline).
// Torch-free, so the rule is tested anywhere.

#include <cstdint>
#include <string>

namespace gpubench::data {

/// Workers from which `decode: auto` decodes on the CPU.
inline constexpr int64_t kCpuDecodeWorkers = 14;
/// Images per second one libjpeg-turbo worker delivered at least on the H200's host (ImageNet-sized files).
inline constexpr double kImagesPerCpuWorker = 465.0;

struct DecodeChoice {
  bool try_gpu = false;  ///< open nvJPEG (it may still fail; then the CPU decodes and says why)
  bool mixed = false;    ///< split each batch between the workers and nvJPEG (decode_split.hpp)
  bool required = false; ///< asked for (gpu, mixed): where nvJPEG cannot run the run fails instead of falling back
  std::string reason;    ///< why this decoder, for the record (data.decode_reason)
};

/// The decoder for `requested` (auto | cpu | gpu | mixed) with `workers` decode threads, on a CUDA device or not.
DecodeChoice choose_decode(const std::string& requested, int64_t workers, bool cuda_device);

}  // namespace gpubench::data
