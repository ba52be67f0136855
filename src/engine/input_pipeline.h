#pragma once
// `data: folder`: the device side of the JPEG input pipeline. A prefetch thread takes the loader's host batches
// (data/loader.hpp), moves them to the device on a side stream and turns them into the model's input there:
//  - decode: cpu — workers decoded and augmented; the uint8 crops are copied from pinned memory and normalised;
//  - decode: gpu — nvJPEG decodes the files (hardware decoder where there is one) and one kernel crops, resizes,
//    flips and normalises the whole batch;
//  - decode: mixed — as gpu, with a share of each batch decoded by the workers instead (data/decode_split.hpp steers
//    it by whether this thread waits for them); the crop kernel takes both kinds of sample in one batch.
// The step copies the finished batch into its fixed input tensors (so CUDA graphs replay on fresh data) and the
// time it waited for it is the epoch's input wait.

#include <atomic>
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "device.h"
#include "gpubench/core/record/run_record.hpp"
#include "gpubench/core/scenario/scenario.hpp"
#include "gpubench/data/decode_choice.hpp"
#include "gpubench/data/image_folder.hpp"
#include "models/registry.h"

namespace gpubench::engine {

/// One pass's figures (an epoch, the warm-up, or the profiled steps).
struct InputPassStats {
  int64_t images = 0;
  double wait_s = 0;             ///< host time the step spent waiting for its batch
  /// Device time idle for input: on CUDA, the gaps on the compute stream between a step's end and the next batch's
  /// arrival (call after synchronising); on the CPU, wait_s.
  double device_wait_s = 0;
  double worker_busy_s = 0;      ///< loader workers' time, summed
  int64_t workers = 0;
  int64_t files_skipped = 0;
  int64_t cpu_decoded = 0;       ///< GPU decode: samples the decoder could not take
  int64_t cpu_shared = 0;        ///< decode: mixed: samples the split gave the workers
  double cpu_share_sum = 0;      ///< decode: mixed: the workers' share of each batch, summed over the pass
  int64_t cpu_share_batches = 0;
  double stage_busy_s = 0;       ///< the device stage (copy, GPU decode, crop kernel), one thread
  int64_t stage_images = 0;
  /// Images per second the pipeline could deliver if never blocked: the slower of the workers (images x workers /
  /// their busy time) and the device stage (images / its busy time).
  double loader_capacity_img_per_s() const {
    double c = worker_busy_s > 0 ? static_cast<double>(images) * static_cast<double>(workers) / worker_busy_s : 0.0;
    if (stage_busy_s > 0 && stage_images > 0) {
      const double stage = static_cast<double>(stage_images) / stage_busy_s;
      c = c > 0 ? std::min(c, stage) : stage;
    }
    return c;
  }
};

/// torchvision's ImageNet normalisation, in 0..255 units (the CPU path's normalize_into and the GPU stage's kernel).
inline constexpr float kImageNetMean[3] = {0.485f * 255, 0.456f * 255, 0.406f * 255};
inline constexpr float kImageNetStd[3] = {0.229f * 255, 0.224f * 255, 0.225f * 255};

/// Normalises uint8 NHWC crops into `out` (float NCHW, any memory format): (x - mean) / std per channel with
/// torchvision's ImageNet mean and std. What the CPU-decode path runs on the device.
at::Tensor normalize_into(const at::Tensor& u8_nhwc, at::Tensor& out);

class InputPipeline {
 public:
  /// Scans the folder and starts the workers; throws data::DatasetError (a data set that cannot be used) or
  /// std::runtime_error (decode: gpu where nvJPEG cannot run). `notes` gets what the user must know.
  InputPipeline(const Scenario& s, const ResolvedDevice& device, const Workload& workload, int64_t batch_size,
                int rank, int world, bool channels_last, std::vector<std::string>& notes,
                const std::atomic<bool>* stop = nullptr);
  ~InputPipeline();
  InputPipeline(const InputPipeline&) = delete;
  InputPipeline& operator=(const InputPipeline&) = delete;

  /// Images per epoch over all ranks (the folder, or dataset_size of it).
  int64_t epoch_images() const { return epoch_images_; }
  /// Starts a pass of `batches` batches keyed by `pass` (epoch index; warm-up and profile passes use negative keys).
  void start_pass(int64_t pass, int64_t batches);
  /// Puts the pass's next batch into `batch` (inputs[0] and target), on the current stream.
  void feed(Batch& batch);
  InputPassStats take_pass_stats();
  /// The share of the folder's pages in the page cache now (sampled; -1 when unknown).
  double page_cache() const;
  DataRecord describe() const;

  // decode: auto on a CUDA device (data/decode_choice.hpp): the run measures each path before its timed epochs
  // (decode_calibration.h drives it) and then sets the one it chose. Until then the pipeline can run them all: the
  // workers hand over files, nvJPEG is open, and the split gives the workers every sample.
  bool wants_calibration() const;
  /// What the calibration starts from: batch, workers, whether nvJPEG opened and its backend, or why not.
  data::DecodeRates calibration_base() const;
  /// Batches one pass over the folder holds on this rank.
  int64_t batches_per_pass() const;
  /// Starts a pass of `batches` batches (key `pass`) with the workers taking `cpu_share` of every batch and the
  /// split held there. A share below 1 needs nvJPEG open.
  void start_fixed_pass(int64_t pass, int64_t batches, double cpu_share);
  /// Ends the pass in progress: the workers and the device stage stop after what they are doing.
  void idle();
  /// Sets the path decode: auto chose (the CPU path rebuilds the loader to decode pixels, as decode: cpu does), the
  /// split's starting share, and the record's decode, decoder, decode_reason and decode_calibration.
  void apply_plan(const data::DecodeRates& rates, const data::DecodePlan& plan);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int64_t epoch_images_ = 0;
};

}  // namespace gpubench::engine
