#include "gpubench/data/decode_split.hpp"

#include <algorithm>
#include <cmath>

namespace gpubench::data {

DecodeSplit::DecodeSplit(double start) : share_(std::clamp(start, 0.0, 1.0)) {}

DecodeSplit DecodeSplit::held(double share) {
  DecodeSplit s(share);
  s.held_ = true;
  return s;
}

double DecodeSplit::update(double waited_s, int64_t queued_batches) {
  if (held_) return share_;
  const bool short_of_workers = waited_s > kWaitedS && queued_batches == 0;
  share_ = short_of_workers ? share_ * kBackOff : std::min(1.0, share_ + kRaise);
  return share_;
}

int64_t DecodeSplit::cpu_samples(double share, int64_t n) {
  return std::clamp<int64_t>(std::llround(std::clamp(share, 0.0, 1.0) * static_cast<double>(n)), 0, n);
}

}  // namespace gpubench::data
