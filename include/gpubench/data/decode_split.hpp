#pragma once
// `decode: mixed` (issue #32): each batch's samples split between libjpeg-turbo on the loader's workers and nvJPEG on
// the device, as DALI's "mixed" decoder does, so that neither has to deliver a fast GPU's whole rate. The CPU share
// is steered batch by batch from the one signal that says which side is short: the device stage waiting for the
// workers. While it does not wait, the workers take a little more (each image they decode costs the training step
// no GPU time); when it waits, they hand a part back to nvJPEG. Torch-free, so the rule is tested anywhere.

#include <cstdint>

namespace gpubench::data {

class DecodeSplit {
 public:
  static constexpr double kRaise = 0.02;        ///< share added after a batch the device stage did not wait for
  static constexpr double kBackOff = 0.85;      ///< share kept after a batch it waited for
  static constexpr double kWaitedS = 2e-4;      ///< a wait shorter than this is not one (a lock, a wake-up)
  static constexpr double kStart = 0.5;

  explicit DecodeSplit(double start = kStart);

  /// After a batch: how long the device stage waited for the workers to finish it. Returns the share of the next
  /// batches' samples the workers decode.
  double update(double waited_s);
  double share() const { return share_; }
  /// Of a batch of `n` samples, how many the workers decode at `share` (the first ones; rounded).
  static int64_t cpu_samples(double share, int64_t n);

 private:
  double share_;
};

}  // namespace gpubench::data
