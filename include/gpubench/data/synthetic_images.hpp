#pragma once
// `gpubench dataset make`: an ImageNet-like JPEG folder for machines that cannot download ImageNet. Images are
// natural-image-like (a 1/f "pink" noise field, smooth colour gradients, textured shapes with hard edges and a
// little sensor noise; not white noise), with ImageNet's typical sizes (mostly 500 px on the long side, 4:3 and
// 3:2), saved at quality 90 with 4:2:0 chroma, so file sizes and decode cost are in ImageNet's range. Deterministic
// for a seed: image i depends only on (seed, i).

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "gpubench/data/jpeg.hpp"

namespace gpubench::data {

struct SynthOptions {
  int64_t images = 1000;
  int64_t classes = 100;
  uint64_t seed = 0;
  int quality = 90;
  int threads = 0;  ///< 0: all cores
  const std::atomic<bool>* stop = nullptr;  ///< set (Ctrl-C): stop early and fail as any failure does
};

/// What was written.
struct SynthStats {
  int64_t images = 0, classes = 0;
  int64_t bytes_total = 0, bytes_median = 0, bytes_min = 0, bytes_max = 0;
  double mean_width = 0, mean_height = 0;
  double bits_per_pixel = 0;  ///< compressed bits per pixel, over all images
  double seconds = 0;
};

/// Image `index` of the set (its pixels only).
RgbImage synthetic_image(uint64_t seed, int64_t index, int64_t label, int64_t classes);

/// The class folder name for a label: "n" + 8 digits, like ImageNet's WordNet ids.
std::string synthetic_class_name(int64_t label);

/// Writes the tree under `out` (created; must not exist or be empty): out/<class>/<class>_<index>.JPEG, plus
/// out/dataset.json with the options and these statistics. Throws std::invalid_argument before writing anything (bad
/// options, a folder that is not empty or cannot be made and written), std::runtime_error (naming the path) when the
/// writing fails, having removed everything it wrote (no `.part` file, no half data set: `out` is as it was).
/// `progress(done, total)` is called now and then from the calling thread.
SynthStats make_synthetic_dataset(const std::string& out, const SynthOptions& options,
                                  const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace gpubench::data
