#include "gpubench/data/augment.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace gpubench::data {

CropParams random_resized_crop(int width, int height, Rng& rng, double scale_lo, double scale_hi, double ratio_lo,
                               double ratio_hi) {
  CropParams p;
  const double area = static_cast<double>(width) * height;
  const double log_lo = std::log(ratio_lo), log_hi = std::log(ratio_hi);
  bool found = false;
  for (int attempt = 0; attempt < 10 && !found; ++attempt) {
    const double target = area * rng.uniform(scale_lo, scale_hi);
    const double aspect = std::exp(rng.uniform(log_lo, log_hi));
    const int w = static_cast<int>(std::lround(std::sqrt(target * aspect)));
    const int h = static_cast<int>(std::lround(std::sqrt(target / aspect)));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      p.box = Box{static_cast<int>(rng.below(static_cast<uint64_t>(width - w + 1))),
                  static_cast<int>(rng.below(static_cast<uint64_t>(height - h + 1))), w, h};
      found = true;
    }
  }
  if (!found) {  // torchvision's fallback: the whole image, clipped to the nearest allowed aspect ratio
    const double in_ratio = static_cast<double>(width) / height;
    int w = width, h = height;
    if (in_ratio < ratio_lo) {
      h = static_cast<int>(std::lround(w / ratio_lo));
    } else if (in_ratio > ratio_hi) {
      w = static_cast<int>(std::lround(h * ratio_hi));
    }
    p.box = Box{(width - w) / 2, (height - h) / 2, w, h};
  }
  p.flip = rng.uniform(0, 1) < 0.5;
  return p;
}

namespace {

/// Per output index: the first source index and the normalised weights of the taps (torch's antialiased bilinear).
struct AxisWeights {
  std::vector<int> first, count;
  std::vector<float> weights;  ///< `taps` per output index
  int taps = 0;
};

AxisWeights axis_weights(double start, double length, int extent, int out) {
  AxisWeights a;
  const double scale = length / out;
  const double support = scale >= 1.0 ? scale : 1.0;
  const double invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
  a.taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  a.first.resize(static_cast<size_t>(out));
  a.count.resize(static_cast<size_t>(out));
  a.weights.assign(static_cast<size_t>(out) * a.taps, 0.0f);
  const int lo_bound = std::max(0, static_cast<int>(std::floor(start)));
  const int hi_bound = std::min(extent, static_cast<int>(std::ceil(start + length)));
  for (int i = 0; i < out; ++i) {
    const double center = scale * (i + 0.5);  // relative to the window's start
    int lo = lo_bound + std::max(0, static_cast<int>(std::floor(center - support + 0.5 + (start - lo_bound))));
    int hi = std::min(hi_bound, lo_bound + static_cast<int>(std::floor(center + support + 0.5 + (start - lo_bound))));
    hi = std::min(hi, lo + a.taps);
    if (hi <= lo) hi = std::min(lo + 1, extent), lo = hi - 1;
    double total = 0;
    float* w = &a.weights[static_cast<size_t>(i) * a.taps];
    for (int j = lo; j < hi; ++j) {
      const double x = (j + 0.5 - start - center) * invscale;
      const double v = std::max(0.0, 1.0 - std::abs(x));
      w[j - lo] = static_cast<float>(v);
      total += v;
    }
    if (total > 0) {
      for (int j = 0; j < hi - lo; ++j) w[j] = static_cast<float>(w[j] / total);
    } else {
      w[0] = 1.0f;
    }
    a.first[static_cast<size_t>(i)] = lo;
    a.count[static_cast<size_t>(i)] = hi - lo;
  }
  return a;
}

/// The horizontal pass over the vertically resized rows: each output pixel is `taps` weighted input pixels
/// (TAPS > 0: known at compile time; 0: `taps` at run time), rounded to the nearest level and clamped.
template <int TAPS>
void horizontal_pass(const std::vector<float>& mid, size_t mid_len, const std::vector<int>& first,
                     const std::vector<float>& wts, int out_w, int out_h, bool flip, uint8_t* dst, int taps = TAPS) {
  const size_t row_len = static_cast<size_t>(out_w) * 3;
  for (int y = 0; y < out_h; ++y) {
    const float* m = mid.data() + static_cast<size_t>(y) * mid_len;
    uint8_t* o = dst + static_cast<size_t>(y) * row_len;
    for (int x = 0; x < out_w; ++x) {
      const float* p = m + first[static_cast<size_t>(x)];
      const float* w = &wts[static_cast<size_t>(x) * static_cast<size_t>(TAPS > 0 ? TAPS : taps)];
      float s0 = 0, s1 = 0, s2 = 0;
      for (int k = 0; k < (TAPS > 0 ? TAPS : taps); ++k) {
        s0 += w[k] * p[3 * k];
        s1 += w[k] * p[3 * k + 1];
        s2 += w[k] * p[3 * k + 2];
      }
      const int ox = flip ? out_w - 1 - x : x;
      // Round half up on non-negative values, clamped to a level (torch rounds half to even: differs only at .5).
      o[ox * 3] = static_cast<uint8_t>(std::min(255.0f, std::max(0.0f, s0)) + 0.5f);
      o[ox * 3 + 1] = static_cast<uint8_t>(std::min(255.0f, std::max(0.0f, s1)) + 0.5f);
      o[ox * 3 + 2] = static_cast<uint8_t>(std::min(255.0f, std::max(0.0f, s2)) + 0.5f);
    }
  }
}

}  // namespace

void resize_window(const RgbImage& src, const Window& window, int out_w, int out_h, bool flip, uint8_t* dst) {
  const AxisWeights hx = axis_weights(window.x, window.w, src.width, out_w);
  const AxisWeights vy = axis_weights(window.y, window.h, src.height, out_h);
  // Columns the horizontal pass reads.
  int col_lo = src.width, col_hi = 0;
  for (int i = 0; i < out_w; ++i) {
    col_lo = std::min(col_lo, hx.first[static_cast<size_t>(i)]);
    col_hi = std::max(col_hi, hx.first[static_cast<size_t>(i)] + hx.count[static_cast<size_t>(i)]);
  }
  // Vertical pass first, over just those columns: long contiguous rows, which the compiler vectorises. Floats, no
  // intermediate rounding (as torch's float path).
  const size_t mid_len = static_cast<size_t>(col_hi - col_lo) * 3;
  thread_local std::vector<float> mid;  // reused: a fresh ~1 MB buffer per image costs page faults
  mid.assign(static_cast<size_t>(out_h) * mid_len, 0.0f);
  for (int y = 0; y < out_h; ++y) {
    const int first = vy.first[static_cast<size_t>(y)], n = vy.count[static_cast<size_t>(y)];
    const float* w = &vy.weights[static_cast<size_t>(y) * vy.taps];
    float* acc = mid.data() + static_cast<size_t>(y) * mid_len;
    for (int k = 0; k < n; ++k) {
      const uint8_t* in = src.pixels.data() + (static_cast<size_t>(first + k) * src.width + col_lo) * 3;
      const float wk = w[k];
      for (size_t i = 0; i < mid_len; ++i) acc[i] += wk * static_cast<float>(in[i]);
    }
  }
  // Horizontal pass with a fixed tap count per output (weights padded with zeros inside the read columns), so the
  // inner loop has a constant length.
  const int taps = std::min(hx.taps, col_hi - col_lo);
  std::vector<int> first(static_cast<size_t>(out_w));
  std::vector<float> wts(static_cast<size_t>(out_w) * taps, 0.0f);
  for (int x = 0; x < out_w; ++x) {
    const int f = hx.first[static_cast<size_t>(x)], n = hx.count[static_cast<size_t>(x)];
    const int start = std::min(f, col_hi - taps);  // keep start + taps inside the columns read
    first[static_cast<size_t>(x)] = (start - col_lo) * 3;
    for (int k = 0; k < n; ++k) wts[static_cast<size_t>(x) * taps + (f - start + k)] = hx.weights[static_cast<size_t>(x) * hx.taps + k];
  }
  const size_t row_len = static_cast<size_t>(out_w) * 3;
  switch (taps) {  // a constant tap count lets the compiler unroll the inner loop
    case 1: horizontal_pass<1>(mid, mid_len, first, wts, out_w, out_h, flip, dst); break;
    case 2: horizontal_pass<2>(mid, mid_len, first, wts, out_w, out_h, flip, dst); break;
    case 3: horizontal_pass<3>(mid, mid_len, first, wts, out_w, out_h, flip, dst); break;
    case 4: horizontal_pass<4>(mid, mid_len, first, wts, out_w, out_h, flip, dst); break;
    case 5: horizontal_pass<5>(mid, mid_len, first, wts, out_w, out_h, flip, dst); break;
    case 6: horizontal_pass<6>(mid, mid_len, first, wts, out_w, out_h, flip, dst); break;
    case 7: horizontal_pass<7>(mid, mid_len, first, wts, out_w, out_h, flip, dst); break;
    default: horizontal_pass<0>(mid, mid_len, first, wts, out_w, out_h, flip, dst, taps); break;
  }
  (void)row_len;
}

}  // namespace gpubench::data
