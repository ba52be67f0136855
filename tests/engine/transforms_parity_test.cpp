// The CPU decode path against torchvision itself (tests/reference/export_torchvision_transforms.py): crop, resize,
// flip and normalise for fixed parameters, and JPEG decoding of grayscale, CMYK and progressive files as PIL
// decodes them.

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gpubench/data/augment.hpp"
#include "gpubench/data/jpeg.hpp"
#include "gpubench/data/loader.hpp"
#include "input_pipeline.h"

namespace gpubench::engine {
namespace {

nlohmann::json reference() {
  std::ifstream in(std::string(GPUBENCH_REFERENCE_DIR) + "/transforms/transforms.json");
  if (!in) throw std::runtime_error("missing transforms.json (made by the transforms_parity_tests_export test)");
  return nlohmann::json::parse(in);
}

/// Largest absolute difference between our normalised crop and torchvision's, for one case.
double worst_difference(const data::RgbImage& img, const nlohmann::json& c, const std::string& which) {
  const int size = c["size"];
  std::vector<uint8_t> crop(static_cast<size_t>(size) * size * 3);
  data::resize_window(img, data::Window{c["left"].get<double>(), c["top"].get<double>(), c["width"].get<double>(),
                                        c["height"].get<double>()},
                      size, size, c["flip"].get<bool>(), crop.data());
  const at::Tensor u8 = at::from_blob(crop.data(), {1, size, size, 3}, at::kByte);
  at::Tensor out = at::empty({1, 3, size, size}, at::kFloat);
  normalize_into(u8, out);
  const std::vector<float> expected = c[which].get<std::vector<float>>();
  const at::Tensor ref = at::from_blob(const_cast<float*>(expected.data()), {1, 3, size, size}, at::kFloat);
  return (out - ref).abs().max().item<double>();
}

TEST(TransformsParity, CropResizeFlipNormaliseMatchTorchvisionForFixedParameters) {
  const nlohmann::json ref = reference();
  data::RgbImage img;
  img.width = ref["width"];
  img.height = ref["height"];
  img.pixels = ref["image"].get<std::vector<uint8_t>>();
  // One 8-bit level is 1 / (255 x 0.224) = 0.0175 after normalisation.
  const double level = 1.0 / (255.0 * 0.225);
  for (const auto& c : ref["cases"]) {
    SCOPED_TRACE("case " + c.dump().substr(0, 80));
    // uint8 tensors with antialias=True: the same weights in floating point, rounded once.
    EXPECT_LE(worst_difference(img, c, "tensor"), 1.01 * level);
    // PIL (the standard recipe): fixed-point weights and a rounding between the two passes; within 2 levels.
    EXPECT_LE(worst_difference(img, c, "pil"), 2.01 * level);
  }
}

TEST(TransformsParity, GrayscaleCmykAndProgressiveJpegsDecodeAsPilDecodesThem) {
  const nlohmann::json ref = reference();
  for (const std::string name : {"gray", "cmyk", "progressive"}) {
    SCOPED_TRACE(name);
    std::vector<uint8_t> bytes;
    std::string err;
    ASSERT_TRUE(data::read_file(std::string(GPUBENCH_REFERENCE_DIR) + "/transforms/" + name + ".jpg", bytes, err)) << err;
    data::DecodedWindow d;
    ASSERT_TRUE(data::decode_jpeg(bytes.data(), bytes.size(), data::Box{}, 0, 0, d, err)) << err;
    const auto& want = ref["decoded"][name];
    ASSERT_EQ(d.image.width, want["width"].get<int>());
    ASSERT_EQ(d.image.height, want["height"].get<int>());
    const std::vector<uint8_t> rgb = want["rgb"].get<std::vector<uint8_t>>();
    int worst = 0;
    for (size_t i = 0; i < rgb.size(); ++i) worst = std::max(worst, std::abs(int(rgb[i]) - int(d.image.pixels[i])));
    EXPECT_LE(worst, 1) << "largest difference from PIL's decoding, in 8-bit levels";
  }
}

}  // namespace
}  // namespace gpubench::engine
