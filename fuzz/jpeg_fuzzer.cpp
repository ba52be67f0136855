// JPEG reading on arbitrary bytes, as the input pipeline meets files in a data set: every outcome is a decoded
// window or an error string, never a crash, a hang or a read past the buffer. The first byte picks the mode:
//  even - the rest is a file: header, window decode (the window and the downscale target from the file's size), and
//         the augmentation of whatever decoded;
//  odd  - the rest makes a small image that is encoded, then damaged at fuzzer-chosen offsets and decoded, so the
//         fuzzer reaches deep into valid streams without a seed corpus.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gpubench/data/augment.hpp"
#include "gpubench/data/jpeg.hpp"

namespace {

void decode_and_crop(const uint8_t* data, size_t size, uint64_t salt) {
  using namespace gpubench::data;
  JpegInfo info;
  std::string err;
  if (!read_jpeg_info(data, size, info, err)) return;
  Rng rng(salt);
  const CropParams crop = random_resized_crop(std::max(1, info.width), std::max(1, info.height), rng);
  DecodedWindow d;
  const int target = 1 + static_cast<int>(salt % 64);
  if (!decode_jpeg(data, size, crop.box, target, target, d, err)) return;
  std::vector<uint8_t> out(static_cast<size_t>(target) * target * 3);
  resize_window(d.image, d.window, target, target, crop.flip, out.data());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpubench::data;
  if (size < 1) return 0;
  const uint64_t salt = size > 1 ? data[1] : 0;
  if ((data[0] & 1) == 0) {
    decode_and_crop(data + 1, size - 1, salt);
    return 0;
  }
  if (size < 6) return 0;
  RgbImage img;
  img.width = 1 + data[1] % 48;
  img.height = 1 + data[2] % 48;
  const int quality = 1 + data[3] % 100;
  img.pixels.resize(static_cast<size_t>(img.width) * img.height * 3);
  for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = size > 6 ? data[6 + i % (size - 6)] : 0;
  std::vector<uint8_t> jpeg = encode_jpeg(img, quality);
  // Damage: pairs (offset, value) from the tail of the input; then maybe truncate.
  for (size_t i = 6; i + 1 < size && i < 6 + 64; i += 2) jpeg[data[i] * 7919u % jpeg.size()] = data[i + 1];
  if (data[4] & 1) jpeg.resize(std::max<size_t>(1, jpeg.size() * data[5] / 256));
  decode_and_crop(jpeg.data(), jpeg.size(), salt);
  return 0;
}
