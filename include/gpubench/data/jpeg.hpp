#pragma once
// JPEG reading and writing on the CPU with libjpeg-turbo (its libjpeg API: partial decoding of a crop window and
// DCT-domain downscaling, which its TurboJPEG 2.x API lacks). Hostile bytes are expected: every failure is an
// error value, never an abort, a longjmp out of the caller or a read past the buffer.

#include <cstdint>
#include <string>
#include <vector>

namespace gpubench::data {

/// What the header says about a JPEG stream.
struct JpegInfo {
  int width = 0, height = 0;
  int components = 0;            ///< 1 (grayscale), 3 (YCbCr/RGB) or 4 (CMYK/YCCK)
  std::string color;             ///< "gray", "ycbcr", "rgb", "cmyk", "ycck", "unknown"
  bool progressive = false;
  bool arithmetic = false;       ///< arithmetic-coded (rare; nvJPEG's hardware decoder cannot)
  std::string subsampling;       ///< "444", "422", "420", "440", "411", "410", "gray" or "other"
};

/// A decoded image: interleaved 8-bit RGB, row-major, `width * 3` bytes per row.
struct RgbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;
};

/// A window of the full-resolution image, in pixels: x, y, width, height.
struct Box {
  int x = 0, y = 0, w = 0, h = 0;
};

/// A window in (possibly fractional) pixel coordinates: x, y, width, height.
struct Window {
  double x = 0, y = 0, w = 0, h = 0;
};

/// What a decode produced: the pixels of (at least) the requested window, possibly downscaled in the DCT domain.
struct DecodedWindow {
  RgbImage image;      ///< the decoded pixels
  Window window;       ///< the requested window in `image`'s coordinates (scaled by `scale`)
  double scale = 1.0;  ///< image pixels per full-resolution pixel (1, 1/2, 1/4 or 1/8)
};

/// Reads the header only. Returns false with `error` set when the bytes are not a JPEG libjpeg can read.
bool read_jpeg_info(const uint8_t* data, size_t size, JpegInfo& info, std::string& error);

/// Decodes to RGB (grayscale is replicated, CMYK and YCCK converted as Adobe writes them). Only rows and columns
/// covering `window` are decoded (libjpeg-turbo skips the others); `min_width`/`min_height` > 0 allow a DCT-domain
/// downscale (1/2, 1/4, 1/8) as long as the scaled window stays at least that large. A truncated or corrupt stream
/// is an error (as PIL treats it), not a grey-filled image. An empty window means the whole image.
bool decode_jpeg(const uint8_t* data, size_t size, const Box& window, int min_width, int min_height,
                 DecodedWindow& out, std::string& error);

/// Encodes RGB pixels as a baseline JPEG (4:2:0, the given quality 1..100, optimized Huffman tables).
std::vector<uint8_t> encode_jpeg(const RgbImage& image, int quality);

/// The libjpeg-turbo version this was built with, e.g. "libjpeg-turbo 2.1.5 (libjpeg API 62)".
std::string jpeg_library_version();

}  // namespace gpubench::data
