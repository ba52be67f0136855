#pragma once
// An ImageFolder tree (one folder per class) read exactly as torchvision.datasets.ImageFolder reads it: classes are
// the sorted names of the root's sub-folders (label = position), files are walked recursively (following links) and
// sorted by (folder, name); here only JPEG files (.jpg/.jpeg, any case) count as images.

#include <atomic>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpubench::data {

/// A data set that cannot be used: missing folder, no classes, no images. The CLI exits 2 on it, before any run.
class DatasetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Sample {
  std::string path;
  int64_t label = 0;
};

struct ImageFolder {
  std::string root;
  std::vector<std::string> classes;  ///< sorted; a sample's label indexes this
  std::vector<Sample> samples;       ///< in torchvision's order
  int64_t other_files = 0;           ///< files that are not JPEGs by name (not used; counted so a reader knows)
  int64_t links_outside = 0;         ///< links (files or folders) leading out of `root`: skipped, counted
  /// What the data is, wherever it lies: the JPEGs' bytes in total, and a digest of the listing (each sample's path
  /// below `root` and its size, in sample order; FNV-1a 64, 16 hex digits). Two copies of one data set in different
  /// folders have the same digest; a file added, removed, renamed, relabelled or resized changes it.
  int64_t bytes = 0;
  std::string listing_digest;
};

/// How far a scan may go: a data folder is outside input in bulk, and a link to `/` must not walk the machine.
struct ScanLimits {
  int64_t max_entries = 20'000'000;   ///< directory entries looked at (ImageNet's train set has 1.28 million)
  double max_seconds = 300;           ///< wall time
  const std::atomic<bool>* stop = nullptr;  ///< set by SIGINT/SIGTERM: the scan ends with an error at once
};

/// Reads the tree at `root`. Links are followed only while they stay inside `root` (resolved); those leading out are
/// skipped and counted. Throws DatasetError naming the problem: a missing or unreadable folder, a root without class
/// folders, a class folder without JPEG files (torchvision refuses those too), no images at all, a limit passed, or
/// a stop request.
ImageFolder scan_image_folder(const std::string& root, const ScanLimits& limits = {});

/// The images one epoch of a run takes from `folder`: all of them, or `dataset_size` when set. Throws DatasetError
/// when dataset_size exceeds the folder, when the folder has more classes than the model's `num_classes`, or when an
/// epoch holds less than one `batch` per rank (`world` ranks). The one rule the resolver and the engine both apply.
int64_t images_per_epoch(const ImageFolder& folder, const std::optional<int64_t>& dataset_size, int64_t batch,
                         int world, int64_t num_classes, const std::string& model);

/// Whether a file name has a JPEG extension (.jpg, .jpeg, any case), as torchvision's extension test.
bool is_jpeg_name(const std::string& name);

/// The sample indices one rank visits in an epoch: a permutation of [0, n) drawn from (seed, epoch) (the same on
/// every rank), its first `take` entries (take <= n; the epoch's size), cut to a multiple of `world` and strided
/// (rank, rank + world, ...) as DistributedSampler does.
std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch, int64_t take, int rank = 0, int world = 1);

/// The fraction of the files' pages in the page cache (mincore over up to `max_files` of them, evenly spread);
/// nullopt-like -1 when none could be checked.
double page_cache_fraction(const std::vector<Sample>& samples, size_t max_files = 256);

}  // namespace gpubench::data
