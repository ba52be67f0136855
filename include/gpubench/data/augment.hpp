#pragma once
// The ImageNet training augmentation, as torchvision defines it: RandomResizedCrop(224, scale=(0.08, 1),
// ratio=(3/4, 4/3)) with bilinear antialiased resizing, then a random horizontal flip; normalisation happens on the
// device. Random choices come from a counter-based generator keyed by (seed, epoch, sample), so a sample's crop does
// not depend on which worker thread decodes it.

#include <cstdint>

#include "gpubench/data/jpeg.hpp"

namespace gpubench::data {

/// splitmix64: small, fast, and good enough for crops and shuffles; one stream per (seed, epoch, sample).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  Rng(uint64_t seed, uint64_t a, uint64_t b) : state_(mix(mix(seed ^ 0x9E3779B97F4A7C15ull) ^ a) ^ (b * 0xD1B54A32D192ED03ull)) {}
  uint64_t next() {
    state_ += 0x9E3779B97F4A7C15ull;
    return mix(state_);
  }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Uniform integer in [0, n), n > 0 (Lemire's method, without bias worth mentioning at these sizes).
  uint64_t below(uint64_t n) {
    __extension__ using U128 = unsigned __int128;
    return static_cast<uint64_t>((static_cast<U128>(next()) * n) >> 64);
  }

 private:
  static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t state_;
};

/// One sample's random choices.
struct CropParams {
  Box box;            ///< the crop, in full-resolution pixels
  bool flip = false;  ///< mirror left-right
};

/// torchvision's RandomResizedCrop.get_params (ten tries, then the centre crop at the nearest allowed ratio) and
/// RandomHorizontalFlip(0.5), drawn from `rng`.
CropParams random_resized_crop(int width, int height, Rng& rng, double scale_lo = 0.08, double scale_hi = 1.0,
                               double ratio_lo = 3.0 / 4.0, double ratio_hi = 4.0 / 3.0);

/// Resizes `window` of `src` to out_w x out_h with bilinear antialiasing exactly as torch's
/// interpolate(mode="bilinear", antialias=True, align_corners=False) computes its weights (a triangle filter
/// widened by the downscale factor, never reading outside the window), optionally mirrored, into `dst`
/// (interleaved RGB, out_w * 3 bytes per row), rounding to the nearest level.
void resize_window(const RgbImage& src, const Window& window, int out_w, int out_h, bool flip, uint8_t* dst);

}  // namespace gpubench::data
