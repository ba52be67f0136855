// The input pipeline's GPU stage (gpu_jpeg_stage.h): nvJPEG and the crop/resize/normalise kernel.

#include "cuda/gpu_jpeg_stage.h"

#include <c10/cuda/CUDAStream.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cuda/gpu_augment.h"
#include "cuda/nvjpeg_decoder.h"
#include "input_pipeline.h"

namespace gpubench::engine {

namespace {

class NvjpegStage final : public GpuJpegStage {
 public:
  explicit NvjpegStage(std::unique_ptr<NvjpegDecoder> decoder) : decoder_(std::move(decoder)) {}

  std::string describe() const override {
    return "nvJPEG " + decoder_->backend() + " backend (" + decoder_->library() +
           (decoder_->backend_fallback().empty() ? "" : "; not available: " + decoder_->backend_fallback()) + "), " +
           (decoder_->roi_available() ? std::string("the crop window only (regions of interest)")
                                      : "whole images (" + decoder_->roi_off_reason() + ")") +
           ", crop/resize/normalise in one CUDA kernel; files the decoder cannot take decoded by " +
           data::jpeg_library_version();
  }

  std::string backend() const override { return decoder_->backend(); }

  bool can_decode(const data::JpegInfo& info, const uint8_t* bytes, size_t size) const override {
    return decoder_->can_decode(info, bytes, size);
  }

  int64_t crop_table_bytes(int64_t batch) const override { return static_cast<int64_t>(sizeof(CropDesc)) * batch; }

  void prepare(data::HostBatch& hb, int64_t batch, int64_t out_size, const at::Tensor& host, at::Tensor& staging,
               at::Tensor& table_host, at::Tensor& table_dev, at::Tensor& images, const c10::Stream& side,
               const Hooks& hooks) override {
    const cudaStream_t stream = c10::cuda::CUDAStream(c10::cuda::CUDAStream::UNCHECKED, side).stream();
    std::vector<int64_t> on_gpu;
    for (int64_t i = 0; i < batch; ++i) {
      if (hb.on_cpu[static_cast<size_t>(i)] == 0) on_gpu.push_back(i);
    }
    // Only each crop's window is decoded where nvJPEG takes regions of interest (the crop kernel reads nothing
    // outside it); where a ROI batch fails, that batch and all after it are decoded whole.
    bool roi = !on_gpu.empty() && decoder_->roi_available();
    std::vector<int64_t> offset(static_cast<size_t>(batch), 0);
    while (!on_gpu.empty()) {
      int64_t total = 0;
      for (int64_t i : on_gpu) {
        const auto ui = static_cast<size_t>(i);
        const auto [w, h] = decoded_extent(hb, ui, roi);
        offset[ui] = total;
        total += (w * h * 3 + 255) / 256 * 256;
      }
      if (!arena_.defined() || arena_.numel() < total) {
        arena_ = at::empty({total + total / 4}, at::TensorOptions().dtype(at::kByte).device(images.device()));
      }
      // The files go to nvJPEG from the workers' (pageable) buffers: staging them in pinned memory made the
      // training step slower on the H200 (GPU decode 0.930 of synthetic against 0.957 in bf16).
      std::vector<const uint8_t*> data;
      std::vector<size_t> sizes, pitch;
      std::vector<uint8_t*> dst;
      std::vector<NvjpegDecoder::Roi> rois;
      for (int64_t i : on_gpu) {
        const auto ui = static_cast<size_t>(i);
        data.push_back(hb.files[ui].data());
        sizes.push_back(hb.files[ui].size());
        dst.push_back(arena_.data_ptr<uint8_t>() + offset[ui]);
        pitch.push_back(static_cast<size_t>(decoded_extent(hb, ui, roi).first) * 3);
        const data::Box& box = hb.crops[ui].box;
        rois.push_back({box.x, box.y, box.w, box.h});
      }
      std::string why;
      if (decoder_->decode(data, sizes, dst, pitch, stream, why, roi ? &rois : nullptr)) break;
      if (roi) {
        hooks.roi_failed(why);
        roi = false;
        continue;
      }
      // A file the decoder refused mid-batch: decode this batch on the CPU (a corrupt file is skipped there).
      hooks.batch_failed(why);
      for (int64_t i : on_gpu) {
        int64_t fb = -1;
        for (int64_t j : on_gpu) {
          if (j != i && !hb.files[static_cast<size_t>(j)].empty()) fb = j;
        }
        if (!hooks.decode_on_cpu(hb, i, fb)) throw std::runtime_error("a batch with no decodable JPEG");
      }
      on_gpu.clear();
    }
    // The workers' samples (decode: mixed puts its share first) travel up to the last one, not the whole buffer.
    int64_t cpu_end = 0;
    for (int64_t i = 0; i < batch; ++i) {
      if (hb.on_cpu[static_cast<size_t>(i)] != 0) cpu_end = i + 1;
    }
    if (cpu_end > 0) staging.narrow(0, 0, cpu_end).copy_(host.narrow(0, 0, cpu_end), /*non_blocking=*/true);
    auto* d = reinterpret_cast<CropDesc*>(table_host.data_ptr<uint8_t>());
    const int64_t sample_bytes = out_size * out_size * 3;
    for (int64_t i = 0; i < batch; ++i) {
      const auto ui = static_cast<size_t>(i);
      CropDesc c;
      if (hb.on_cpu[ui] != 0) {
        c.src = reinterpret_cast<uint64_t>(staging.data_ptr<uint8_t>() + i * sample_bytes);
        c.width = c.height = static_cast<int32_t>(out_size);
        c.pitch = static_cast<int32_t>(out_size * 3);
        c.w = c.h = static_cast<float>(out_size);
      } else {
        const auto& crop = hb.crops[ui];
        const auto [w, h] = decoded_extent(hb, ui, roi);
        c.src = reinterpret_cast<uint64_t>(arena_.data_ptr<uint8_t>() + offset[ui]);
        c.width = static_cast<int32_t>(w);
        c.height = static_cast<int32_t>(h);
        c.pitch = static_cast<int32_t>(w * 3);
        c.flip = crop.flip ? 1 : 0;
        c.x = roi ? 0.0f : static_cast<float>(crop.box.x);  // a ROI starts at the crop's corner
        c.y = roi ? 0.0f : static_cast<float>(crop.box.y);
        c.w = static_cast<float>(crop.box.w);
        c.h = static_cast<float>(crop.box.h);
      }
      d[i] = c;
    }
    table_dev.copy_(table_host, /*non_blocking=*/true);
    NormalizeParams norm{};
    for (int c = 0; c < 3; ++c) {
      norm.mean[c] = kImageNetMean[c];
      norm.inv_std[c] = 1.0f / kImageNetStd[c];
    }
    const auto st = images.strides();
    const cudaError_t e = launch_crop_resize_normalize(
        reinterpret_cast<const CropDesc*>(table_dev.data_ptr<uint8_t>()), static_cast<int>(batch),
        static_cast<int>(out_size), images.data_ptr<float>(), st[0], st[1], st[2], st[3], norm, stream);
    if (e != cudaSuccess) throw std::runtime_error(std::string("GPU crop kernel: ") + cudaGetErrorString(e));
  }

 private:
  /// The width and height nvJPEG writes for sample `i`: its crop window where decoding regions of interest, else
  /// the whole image.
  static std::pair<int64_t, int64_t> decoded_extent(const data::HostBatch& hb, size_t i, bool roi) {
    if (roi) return {hb.crops[i].box.w, hb.crops[i].box.h};
    return {hb.infos[i].width, hb.infos[i].height};
  }

  std::unique_ptr<NvjpegDecoder> decoder_;
  at::Tensor arena_;  ///< the decoded images of the batch being prepared (reused, grown by a quarter when short)
};

}  // namespace

std::unique_ptr<GpuJpegStage> GpuJpegStage::open(const Options& options, std::string& why) {
  std::unique_ptr<NvjpegDecoder> decoder = NvjpegDecoder::open(why, {options.library, options.roi});
  if (decoder == nullptr) return nullptr;
  return std::make_unique<NvjpegStage>(std::move(decoder));
}

}  // namespace gpubench::engine
