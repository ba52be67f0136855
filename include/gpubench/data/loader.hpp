#pragma once
// The CPU side of the input pipeline: a pool of worker threads that read an ImageFolder's files in an epoch's
// shuffled order and fill a ring of batch slots, `prefetch` batches ahead of the consumer. In pixel mode each worker
// decodes (libjpeg-turbo, only the crop window, DCT-downscaled where the crop allows), crops, resizes and flips into
// the slot (interleaved RGB, out_size^2 x 3 bytes per sample); normalisation happens on the device. In bytes mode
// (GPU decode) workers only read and check the files and choose the crops; files the GPU decoder cannot take are
// decoded here into the pixel buffer instead. Unreadable or corrupt files are skipped: another file takes the
// sample's place, and the record counts them. Torch-free: the engine supplies the (pinned) buffer allocator.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpubench/data/augment.hpp"
#include "gpubench/data/image_folder.hpp"
#include "gpubench/data/jpeg.hpp"

namespace gpubench::data {

struct LoaderOptions {
  int workers = 4;
  int prefetch = 2;           ///< batch slots in the ring (batches decoded ahead of the consumer)
  int64_t batch_size = 1;
  int out_size = 224;         ///< side of the square training crop
  bool bytes_mode = false;    ///< GPU decode: read files and choose crops only
  uint64_t seed = 0;
  int rank = 0, world = 1;
  /// Bytes mode: whether the GPU decoder takes a file with this header (the others are decoded on the CPU).
  std::function<bool(const JpegInfo&, const uint8_t*, size_t)> gpu_can_decode;
  /// Host memory for the pixel buffers (the engine passes pinned memory); default: plain heap memory.
  std::function<std::shared_ptr<uint8_t>(size_t)> allocate;
};

/// One batch in a slot, valid between next() and release().
struct HostBatch {
  int64_t index = 0;                 ///< batch number within the epoch
  int64_t size = 0;                  ///< samples
  uint8_t* pixels = nullptr;         ///< [size, out_size, out_size, 3]; in bytes mode only the on_cpu samples
  std::vector<int64_t> labels;       ///< [size]
  // Bytes mode:
  std::vector<std::vector<uint8_t>> files;  ///< each sample's file (empty where on_cpu)
  std::vector<CropParams> crops;            ///< full-resolution crop and flip per sample
  std::vector<JpegInfo> infos;
  std::vector<uint8_t> on_cpu;              ///< 1: decoded on the CPU into `pixels` (the GPU decoder cannot take it,
                                            ///< or set_cpu_share gave it to the workers)
  std::vector<int64_t> sample_ids;          ///< index into the folder's samples, per slot entry
};

/// Counters since the last take_stats().
struct LoaderStats {
  int64_t images = 0;            ///< samples delivered
  double worker_busy_s = 0;      ///< summed over workers: time spent reading, decoding and augmenting
  int64_t bytes_read = 0;
  int64_t files_skipped = 0;     ///< unreadable or undecodable files met (each counted once per epoch it was met)
  int64_t cpu_decoded = 0;       ///< bytes mode: samples the GPU decoder could not take
  int64_t cpu_shared = 0;        ///< bytes mode: samples set_cpu_share gave the workers
};

/// A skipped file and why.
struct SkippedFile {
  std::string path, reason;
};

class FolderLoader {
 public:
  FolderLoader(const ImageFolder& folder, LoaderOptions options);
  ~FolderLoader();
  FolderLoader(const FolderLoader&) = delete;
  FolderLoader& operator=(const FolderLoader&) = delete;

  /// Starts producing `batches` batches of a new epoch. `epoch` keys the shuffle and the crops (any distinct value:
  /// warm-up and profile passes use their own); `take` samples of the folder are visited (an epoch's size over all
  /// ranks). Work still in flight for an earlier epoch is finished and dropped first, and the counters
  /// (take_stats) restart.
  void start_epoch(int64_t epoch, int64_t batches, int64_t take);
  /// The epoch's next batch, blocking until it is complete; nullptr after the last one. Throws std::runtime_error
  /// when the workers failed (e.g. every candidate file for a sample was unreadable).
  HostBatch* next();
  /// Hands the slot back (after its contents were copied to the device).
  void release(HostBatch* batch);
  /// Bytes mode: a sample the GPU decoder failed on is decoded here (into batch->pixels at `i`) or, when the file is
  /// corrupt, replaced by a copy of sample `fallback` (decoded here too) and counted as skipped. Returns false when
  /// neither could be decoded.
  bool decode_on_cpu(HostBatch& batch, int64_t i, int64_t fallback);

  /// Bytes mode (`decode: mixed`, and decode: auto's calibration): of each batch the workers claim from now on, the
  /// first `share` (rounded) of its samples are decoded here even where the GPU decoder could take them
  /// (data/decode_split.hpp). Default 0.
  void set_cpu_share(double share);

  /// Stops the workers and wakes a consumer blocked in next() (which then returns nullptr). The destructor does
  /// this too; call it first when another thread may be inside next().
  void shutdown();

  LoaderStats take_stats();
  /// The first skipped files (at most `max`), and the total count so far.
  std::vector<SkippedFile> skipped_files(size_t max = 10) const;
  int64_t skipped_total() const;

  const LoaderOptions& options() const { return options_; }
  size_t sample_bytes() const { return static_cast<size_t>(options_.out_size) * options_.out_size * 3; }

 private:
  struct State;
  void worker();
  bool process(int64_t epoch, int64_t pos, HostBatch& slot, int64_t i, LoaderStats& local);
  LoaderOptions options_;
  const ImageFolder& folder_;
  std::unique_ptr<State> st_;
};

/// Reads up to `max_files` files spread over the folder; throws DatasetError when none is a readable JPEG (a
/// folder of empty, truncated or non-JPEG files is refused before anything runs).
void probe_folder(const ImageFolder& folder, size_t max_files = 16);

/// Reads a regular file of at most `max_bytes` (FIFOs, devices and larger files are refused with a reason).
bool read_file(const std::string& path, std::vector<uint8_t>& bytes, std::string& error,
               size_t max_bytes = size_t{64} << 20);

/// Decodes one JPEG on the CPU and applies `crop` (window, resize to out_size, flip) into `dst`.
bool decode_and_augment(const std::vector<uint8_t>& bytes, const CropParams& crop, int out_size, uint8_t* dst,
                        std::string& error);

}  // namespace gpubench::data
