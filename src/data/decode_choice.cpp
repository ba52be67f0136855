#include "gpubench/data/decode_choice.hpp"

#include <cmath>

namespace gpubench::data {

DecodeChoice choose_decode(const std::string& requested, int64_t workers, bool cuda_device) {
  DecodeChoice c;
  if (requested == "cpu") {
    c.reason = "decode: cpu was asked for";
    return c;
  }
  if (requested == "gpu") {
    c.try_gpu = c.required = true;
    c.reason = "decode: gpu was asked for";
    return c;
  }
  if (requested == "mixed") {
    c.try_gpu = c.mixed = c.required = true;
    c.reason = "decode: mixed was asked for: each batch split between the " + std::to_string(workers) +
               " workers (libjpeg-turbo) and nvJPEG, the workers' share raised while the device never waits for "
               "them and lowered when it does";
    return c;
  }
  const auto can_deliver = static_cast<int64_t>(std::lround(static_cast<double>(workers) * kImagesPerCpuWorker));
  if (!cuda_device) {
    c.reason = "decode: auto: the CPU (no CUDA device for nvJPEG)";
    return c;
  }
  if (workers >= kCpuDecodeWorkers) {
    c.reason = "decode: auto: the CPU, " + std::to_string(workers) + " workers (about " + std::to_string(can_deliver) +
               " images/s at the H200 host's rate) keep up without taking GPU time from the step; nvJPEG costs the "
               "step ~1.6 ms per 256 images (H200: ResNet-50 at 0.982 of synthetic on the CPU path, 0.932 on nvJPEG, fp16)";
    return c;
  }
  c.try_gpu = c.mixed = true;
  c.reason = "decode: auto: mixed, " + std::to_string(workers) + " workers (about " + std::to_string(can_deliver) +
             " images/s) are fewer than the " + std::to_string(kCpuDecodeWorkers) +
             " that keep a fast GPU fed: they decode what they keep up with and nvJPEG the rest of each batch; set "
             "decode: cpu to keep the GPU for the step";
  return c;
}

}  // namespace gpubench::data
