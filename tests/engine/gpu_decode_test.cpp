// The GPU decode path (nvJPEG + the crop kernel) against the CPU path (libjpeg-turbo + resize_window + normalise)
// on the same files and crops: the two must give the same normalised pixels within a few 8-bit levels (the
// hardware decoder's IDCT and chroma upsampling are not libjpeg's to the bit), whether nvJPEG decodes whole images
// or only the crop windows (regions of interest). Needs a GPU; skips without one.

#include <gtest/gtest.h>

#include <iostream>
#include <torch/cuda.h>

#include <ATen/ATen.h>

#if defined(GPUBENCH_WITH_CUDA)
#include <ATen/cuda/CUDAContext.h>

#include "cuda/gpu_augment.h"
#include "cuda/nvjpeg_decoder.h"
#endif
#include "gpubench/data/augment.hpp"
#include "gpubench/data/jpeg.hpp"
#include "gpubench/data/synthetic_images.hpp"
#include "input_pipeline.h"

namespace gpubench::engine {
namespace {

TEST(GpuDecode, NvjpegAndTheCropKernelMatchTheCpuPath_CUDA) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
#ifndef GPUBENCH_WITH_CUDA
  GTEST_SKIP() << "built without the GPU crop kernel";
#else
  std::string why;
  auto decoder = NvjpegDecoder::open(why);
  if (!decoder) GTEST_SKIP() << why;
  constexpr int kOut = 64;
  const int n = 6;
  std::vector<std::vector<uint8_t>> files;
  std::vector<data::JpegInfo> infos(n);
  std::vector<data::CropParams> crops(n);
  at::Tensor expected = at::empty({n, 3, kOut, kOut}, at::kFloat);
  for (int i = 0; i < n; ++i) {
    files.push_back(data::encode_jpeg(data::synthetic_image(3, i, i % 3, 3), 90));
    std::string err;
    ASSERT_TRUE(data::read_jpeg_info(files[i].data(), files[i].size(), infos[i], err)) << err;
    data::Rng rng(1, 2, static_cast<uint64_t>(i));
    crops[i] = data::random_resized_crop(infos[i].width, infos[i].height, rng);
    data::DecodedWindow d;
    ASSERT_TRUE(data::decode_jpeg(files[i].data(), files[i].size(), data::Box{}, 0, 0, d, err)) << err;
    std::vector<uint8_t> u8(kOut * kOut * 3);
    data::resize_window(d.image, data::Window{double(crops[i].box.x), double(crops[i].box.y), double(crops[i].box.w),
                                              double(crops[i].box.h)},
                        kOut, kOut, crops[i].flip, u8.data());
    at::Tensor one = expected.narrow(0, i, 1);
    normalize_into(at::from_blob(u8.data(), {1, kOut, kOut, 3}, at::kByte), one);
  }
  const auto dev = at::TensorOptions().device(at::kCUDA);
  NormalizeParams norm{};
  const float mean[3] = {0.485f * 255, 0.456f * 255, 0.406f * 255}, sd[3] = {0.229f * 255, 0.224f * 255, 0.225f * 255};
  for (int c = 0; c < 3; ++c) {
    norm.mean[c] = mean[c];
    norm.inv_std[c] = 1 / sd[c];
  }
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream().stream();
  // Whole images, then only each crop's window (nvJPEG's regions of interest, as the input pipeline decodes where
  // the library takes them): the crop kernel reads nothing outside the window, so both give the same pixels.
  at::Tensor whole_out;
  for (const bool roi : {false, true}) {
    SCOPED_TRACE(roi ? "regions of interest" : "whole images");
    if (roi && !decoder->roi_available()) {
      GTEST_SKIP() << "nvJPEG decodes no regions of interest here: " << decoder->roi_off_reason();
    }
    std::vector<const uint8_t*> data;
    std::vector<size_t> sizes, pitch;
    std::vector<uint8_t*> dst;
    std::vector<at::Tensor> buffers;
    std::vector<CropDesc> descs(n);
    std::vector<NvjpegDecoder::Roi> rois;
    for (int i = 0; i < n; ++i) {
      const data::Box& box = crops[i].box;
      rois.push_back({box.x, box.y, box.w, box.h});
      data.push_back(files[i].data());
      sizes.push_back(files[i].size());
      const int w = roi ? box.w : infos[i].width, h = roi ? box.h : infos[i].height;
      buffers.push_back(at::zeros({int64_t(w) * h * 3}, dev.dtype(at::kByte)));
      dst.push_back(buffers.back().data_ptr<uint8_t>());
      pitch.push_back(size_t(3 * w));
      CropDesc& c = descs[i];
      c.src = reinterpret_cast<uint64_t>(dst.back());
      c.width = w;
      c.height = h;
      c.pitch = 3 * w;
      c.flip = crops[i].flip ? 1 : 0;
      c.x = roi ? 0.0f : float(box.x);
      c.y = roi ? 0.0f : float(box.y);
      c.w = float(box.w);
      c.h = float(box.h);
    }
    ASSERT_TRUE(decoder->decode(data, sizes, dst, pitch, stream, why, roi ? &rois : nullptr)) << why;
    at::Tensor d_descs = at::from_blob(descs.data(), {int64_t(sizeof(CropDesc)) * n}, at::kByte).to(at::kCUDA);
    at::Tensor out = at::empty({n, 3, kOut, kOut}, dev.dtype(at::kFloat));
    ASSERT_EQ(launch_crop_resize_normalize(reinterpret_cast<const CropDesc*>(d_descs.data_ptr<uint8_t>()), n, kOut,
                                           out.data_ptr<float>(), out.stride(0), out.stride(1), out.stride(2),
                                           out.stride(3), norm, stream),
              cudaSuccess);
    const at::Tensor diff = (out.cpu() - expected).abs() * (255.0 * 0.225);  // in 8-bit levels (at most)
    EXPECT_LT(diff.max().item<double>(), 12.0);
    EXPECT_LT(diff.mean().item<double>(), 1.0);
    if (!roi) {
      whole_out = out.cpu();
      continue;
    }
    // Against nvJPEG's own whole-image decode: the window's pixels are the same but for chroma upsampling at its
    // edges (the decoder sees no neighbour outside the window).
    const at::Tensor vs_whole = (out.cpu() - whole_out).abs() * (255.0 * 0.225);
    std::cout << "ROI against whole-image decode: max " << vs_whole.max().item<double>() << ", mean "
              << vs_whole.mean().item<double>() << " levels\n";
    EXPECT_LT(vs_whole.max().item<double>(), 12.0);
    EXPECT_LT(vs_whole.mean().item<double>(), 0.25);
  }
#endif
}

}  // namespace
}  // namespace gpubench::engine
