#include "gpubench/data/jpeg.hpp"

#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <jpeglib.h>
#include <jerror.h>

namespace gpubench::data {

namespace {

/// libjpeg reports errors by calling error_exit, which must not return: we longjmp back to the function that
/// called setjmp, which then returns false. Nothing between the setjmp and the longjmp may own C++ resources.
struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

/// Warnings: a stream that ends early is truncated (PIL refuses those too), so it fails the decode; other recoverable
/// damage (extraneous bytes before a marker, ...) is decoded as PIL and libjpeg decode it.
void on_message(j_common_ptr cinfo, int level) {
  if (level == -1 && cinfo->err->msg_code == JWRN_JPEG_EOF) on_error(cinfo);
}

void install(ErrorManager& err, jpeg_decompress_struct& cinfo) {
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = on_error;
  err.pub.emit_message = on_message;
  err.message[0] = '\0';
}

std::string color_name(J_COLOR_SPACE c) {
  switch (c) {
    case JCS_GRAYSCALE: return "gray";
    case JCS_YCbCr: return "ycbcr";
    case JCS_RGB: return "rgb";
    case JCS_CMYK: return "cmyk";
    case JCS_YCCK: return "ycck";
    default: return "unknown";
  }
}

std::string subsampling_name(const jpeg_decompress_struct& c) {
  if (c.num_components == 1) return "gray";
  if (c.num_components != 3) return "other";
  const auto& y = c.comp_info[0];
  for (int i = 1; i < 3; ++i) {
    if (c.comp_info[i].h_samp_factor != 1 || c.comp_info[i].v_samp_factor != 1) return "other";
  }
  const int h = y.h_samp_factor, v = y.v_samp_factor;
  if (h == 1 && v == 1) return "444";
  if (h == 2 && v == 1) return "422";
  if (h == 2 && v == 2) return "420";
  if (h == 1 && v == 2) return "440";
  if (h == 4 && v == 1) return "411";
  if (h == 4 && v == 2) return "410";
  return "other";
}

void fill_info(const jpeg_decompress_struct& c, JpegInfo& info) {
  info.width = static_cast<int>(c.image_width);
  info.height = static_cast<int>(c.image_height);
  info.components = c.num_components;
  info.color = color_name(c.jpeg_color_space);
  info.progressive = c.progressive_mode != 0;
  info.arithmetic = c.arith_code != 0;
  info.subsampling = subsampling_name(c);
}

// Full-resolution images are bounded so a hostile header cannot ask for gigabytes (PIL's decompression-bomb limit
// is 89.5 Mpx; this is the same order).
constexpr uint64_t kMaxPixels = 1ull << 27;

/// The header, then (when `out` is given) the decode proper: only POD locals, so a longjmp out of libjpeg skips no
/// destructor. `out` lives in the caller.
bool decode_impl(const uint8_t* data, size_t size, const Box& want, int min_w, int min_h, DecodedWindow* out,
                 JpegInfo& info, char* error) {
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  install(err, cinfo);
  JSAMPROW row = nullptr;
  if (setjmp(err.jump) != 0) {
    std::snprintf(error, JMSG_LENGTH_MAX, "%s", err.message);
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  fill_info(cinfo, info);
  if (static_cast<uint64_t>(cinfo.image_width) * cinfo.image_height > kMaxPixels) {
    std::snprintf(error, JMSG_LENGTH_MAX, "image of %ux%u pixels exceeds the %llu-pixel limit", cinfo.image_width,
                  cinfo.image_height, static_cast<unsigned long long>(kMaxPixels));
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  if (out == nullptr) {  // header only
    jpeg_destroy_decompress(&cinfo);
    return true;
  }
  Box box = want;
  if (box.w <= 0 || box.h <= 0) box = Box{0, 0, static_cast<int>(cinfo.image_width), static_cast<int>(cinfo.image_height)};
  const bool four = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  cinfo.out_color_space = four ? JCS_CMYK : JCS_RGB;
  // DCT-domain downscale by M/8: the smallest M that keeps the window at least min_w x min_h, so the resize that
  // follows still only shrinks. Only 1/8, 1/4 and 1/2: libjpeg-turbo has SIMD code for those, and its plain-C
  // scaled IDCTs for 3/8 ... 7/8 measured slower than decoding at full size.
  int num = 8;
  if (min_w > 0 && min_h > 0) {
    for (int m : {1, 2, 4}) {
      if (static_cast<int64_t>(box.w) * m >= static_cast<int64_t>(min_w) * 8 &&
          static_cast<int64_t>(box.h) * m >= static_cast<int64_t>(min_h) * 8) {
        num = m;
        break;
      }
    }
  }
  cinfo.scale_num = static_cast<unsigned>(num);
  cinfo.scale_denom = 8;
  jpeg_start_decompress(&cinfo);
  const int ow = static_cast<int>(cinfo.output_width), oh = static_cast<int>(cinfo.output_height);
  // The window in output (scaled) pixels, widened to whole pixels and clamped.
  const double sc = static_cast<double>(ow) / static_cast<double>(cinfo.image_width);
  const double scy = static_cast<double>(oh) / static_cast<double>(cinfo.image_height);
  int x0 = static_cast<int>(box.x * sc), y0 = static_cast<int>(box.y * scy);
  int x1 = static_cast<int>(std::ceil((box.x + box.w) * sc)), y1 = static_cast<int>(std::ceil((box.y + box.h) * scy));
  x0 = x0 < 0 ? 0 : x0 > ow - 1 ? ow - 1 : x0;
  y0 = y0 < 0 ? 0 : y0 > oh - 1 ? oh - 1 : y0;
  x1 = x1 > ow ? ow : x1 <= x0 ? x0 + 1 : x1;
  y1 = y1 > oh ? oh : y1 <= y0 ? y0 + 1 : y1;
  JDIMENSION xoff = static_cast<JDIMENSION>(x0), cw = static_cast<JDIMENSION>(x1 - x0);
  if (x0 > 0 || x1 < ow) jpeg_crop_scanline(&cinfo, &xoff, &cw);  // widens to iMCU boundaries
  const int rows = y1 - y0, comps = cinfo.output_components;
  out->image.width = static_cast<int>(cw);
  out->image.height = rows;
  out->image.pixels.resize(static_cast<size_t>(cw) * static_cast<size_t>(rows) * 3);
  out->window = Window{box.x * sc - static_cast<double>(xoff), box.y * scy - static_cast<double>(y0), box.w * sc,
                      box.h * scy};
  out->scale = sc;
  if (y0 > 0) jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(y0));
  // One row buffer from libjpeg's pool (freed with the object), for CMYK which needs converting.
  if (comps != 3) {
    row = (*cinfo.mem->alloc_sarray)(reinterpret_cast<j_common_ptr>(&cinfo), JPOOL_IMAGE,
                                     cw * static_cast<JDIMENSION>(comps), 1)[0];
  }
  const bool inverted = cinfo.saw_Adobe_marker != 0;  // Adobe writes CMYK inverted
  for (int r = 0; r < rows; ++r) {
    uint8_t* dst = out->image.pixels.data() + static_cast<size_t>(r) * cw * 3;
    if (comps == 3) {
      JSAMPROW p = dst;
      if (jpeg_read_scanlines(&cinfo, &p, 1) != 1) ERREXIT(&cinfo, JERR_INPUT_EMPTY);
      continue;
    }
    if (jpeg_read_scanlines(&cinfo, &row, 1) != 1) ERREXIT(&cinfo, JERR_INPUT_EMPTY);
    for (JDIMENSION x = 0; x < cw; ++x) {
      const unsigned c = row[x * 4], m = row[x * 4 + 1], y = row[x * 4 + 2], k = row[x * 4 + 3];
      const unsigned nk = inverted ? k : 255 - k;
      dst[x * 3] = static_cast<uint8_t>(((inverted ? c : 255 - c) * nk + 127) / 255);
      dst[x * 3 + 1] = static_cast<uint8_t>(((inverted ? m : 255 - m) * nk + 127) / 255);
      dst[x * 3 + 2] = static_cast<uint8_t>(((inverted ? y : 255 - y) * nk + 127) / 255);
    }
  }
  jpeg_abort_decompress(&cinfo);  // the rows below the window are never decoded
  jpeg_destroy_decompress(&cinfo);
  return true;
}

}  // namespace

namespace {

bool checked_decode(const uint8_t* data, size_t size, const Box& window, int min_w, int min_h, DecodedWindow* out,
                    JpegInfo& info, std::string& error) {
  if (size < 4 || data[0] != 0xFF || data[1] != 0xD8) {
    error = size == 0 ? "empty file" : "not a JPEG (no start-of-image marker)";
    return false;
  }
  char msg[JMSG_LENGTH_MAX] = {};
  if (!decode_impl(data, size, window, min_w, min_h, out, info, msg)) {
    error = msg;
    return false;
  }
  return true;
}

}  // namespace

bool read_jpeg_info(const uint8_t* data, size_t size, JpegInfo& info, std::string& error) {
  return checked_decode(data, size, Box{}, 0, 0, nullptr, info, error);
}

bool decode_jpeg(const uint8_t* data, size_t size, const Box& window, int min_width, int min_height,
                 DecodedWindow& out, std::string& error) {
  JpegInfo info;
  return checked_decode(data, size, window, min_width, min_height, &out, info, error);
}

std::vector<uint8_t> encode_jpeg(const RgbImage& image, int quality) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr jerr;
  cinfo.err = jpeg_std_error(&jerr);  // encoding our own pixels: an error here is a bug, and exits loudly
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(image.width);
  cinfo.image_height = static_cast<JDIMENSION>(image.height);
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  cinfo.optimize_coding = TRUE;
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(image.pixels.data() + static_cast<size_t>(cinfo.next_scanline) * image.width * 3);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  std::vector<uint8_t> bytes(buffer, buffer + size);
  std::free(buffer);
  jpeg_destroy_compress(&cinfo);
  return bytes;
}

std::string jpeg_library_version() {
#ifdef LIBJPEG_TURBO_VERSION
#define GPUBENCH_STR2(x) #x
#define GPUBENCH_STR(x) GPUBENCH_STR2(x)
  return std::string("libjpeg-turbo ") + GPUBENCH_STR(LIBJPEG_TURBO_VERSION) + " (libjpeg API " +
         std::to_string(JPEG_LIB_VERSION) + ")";
#else
  return "libjpeg (API " + std::to_string(JPEG_LIB_VERSION) + ")";
#endif
}

}  // namespace gpubench::data
