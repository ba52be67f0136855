#pragma once
// `decode: mixed` (issue #32): each batch's samples split between libjpeg-turbo on the loader's workers and nvJPEG on
// the device, as DALI's "mixed" decoder does, so that neither has to deliver a fast GPU's whole rate. The CPU share
// is steered batch by batch from the one signal that says which side is short: the device stage waiting for the
// workers. While it does not wait, the workers take a little more (each image they decode costs the training step
// no GPU time); when it waits, they hand a part back to nvJPEG. The split starts with the workers taking every sample
// (kStart): since a worker's image costs the step nothing and an nvJPEG image costs it GPU time, the best split is the
// largest share the workers keep up with, and backing off from the top finds it within a few batches, where a climb
// from the middle takes 25 (H200, 15 workers: started at 0.5, fp16 ResNet-50 trained at 0.947-0.967 of synthetic
// against 0.979 on the workers alone, results/2026-12-02-h200-resnet-pipeline). Torch-free, so the rule is tested
// anywhere.

#include <cstdint>

namespace gpubench::data {

class DecodeSplit {
 public:
  static constexpr double kRaise = 0.02;        ///< share added after a batch the device stage did not wait for
  static constexpr double kBackOff = 0.85;      ///< share kept after a batch it waited for
  static constexpr double kWaitedS = 2e-4;      ///< a wait shorter than this is not one (a lock, a wake-up)
  static constexpr double kStart = 1.0;     ///< the workers take every sample until the device waits

  explicit DecodeSplit(double start = kStart);
  /// A split held at `share`: update() leaves it there (decode: auto's calibration times fixed splits).
  static DecodeSplit held(double share);

  /// After a batch: how long the device stage waited for the workers to finish it, and how many prepared batches
  /// were still queued for the training step when that wait ended. A wait while batches are queued is jitter the
  /// queue absorbs (the step never saw it), not a shortfall, and does not move the share back (call 2 on the H200:
  /// with 15 workers such waits held the share at 0.95 on average and cost fp16 ResNet-50 2.7 % against the
  /// workers alone). Returns the share of the next batches' samples the workers decode.
  double update(double waited_s, int64_t queued_batches = 0);
  double share() const { return share_; }
  /// Of a batch of `n` samples, how many the workers decode at `share` (the first ones; rounded).
  static int64_t cpu_samples(double share, int64_t n);

 private:
  double share_;
  bool held_ = false;
};

}  // namespace gpubench::data
