#include "decode_calibration.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "host_clock.h"
#include "step_timer.h"

namespace gpubench::engine {

namespace {

constexpr double kWindowS = 0.6;     ///< each measurement's timed span, about
constexpr int64_t kMinTimed = 8;     ///< steps or batches timed at least
constexpr int64_t kMaxTimed = 120;
constexpr int64_t kSettle = 2;       ///< batches fed before the timed span: the pipeline starts each pass empty
constexpr int64_t kFixedSteps = 16;  ///< multi-process runs: steps per measurement, the same on every rank
/// Pass keys of their own (warm-up and profile passes count down from -1, epochs up from 0).
constexpr int64_t kFirstKey = -1'000'000'000;

/// Seconds on the device between span_begin and span_end: the run's own step timer (CUDA events on the compute
/// stream, so the steps and the gaps in which the stream waited for its input count, whatever the host ran ahead).
void span_begin(StepTimer& timer) { timer.begin_epoch(1); }
double span_end(StepTimer& timer, const ResolvedDevice& device) {
  timer.mark();
  synchronize(device);
  const std::vector<double> ms = timer.end_epoch_ms();
  return ms.empty() ? 0.0 : ms.front() / 1e3;
}

class Calibrator {
 public:
  Calibrator(InputPipeline& input, Batch& batch, const ResolvedDevice& device, const CalibrationOptions& o)
      : input_(input),
        batch_(batch),
        device_(device),
        o_(o),
        size_(input.calibration_base().batch),
        timer_(make_step_timer(device)) {}

  bool stopped() const { return o_.stop != nullptr && o_.stop->load(); }

  /// The step alone on the batch it already has; sets how many steps each fed measurement times.
  double step_alone() {
    synchronize(device_);
    const auto t0 = Clock::now();
    o_.step();
    synchronize(device_);
    const double one = std::max(seconds_since(t0), 1e-6);
    steps_ = o_.same_steps_everywhere
                 ? kFixedSteps
                 : std::clamp<int64_t>(static_cast<int64_t>(std::ceil(kWindowS / one)), kMinTimed, kMaxTimed);
    span_begin(*timer_);
    for (int64_t i = 0; i < steps_; ++i) o_.step();
    return rate(steps_, span_end(*timer_, device_));
  }

  /// The step fed by the pipeline with the workers taking `share` of each batch (the rest nvJPEG's). With
  /// `feed` false (a rank that cannot run this path, in a multi-process run) the steps run on the batch they have,
  /// so that every rank's collectives still meet, and nothing is measured.
  double fed(double share, bool feed = true) {
    const int64_t n = std::min(steps_, input_.batches_per_pass() - kSettle);
    if (n < 3) return 0;
    if (!feed) {
      for (int64_t i = 0; i < kSettle + n; ++i) o_.step();
      return 0;
    }
    input_.start_fixed_pass(key_--, kSettle + n, share);
    for (int64_t i = 0; i < kSettle; ++i) {
      input_.feed(batch_);
      o_.step();
    }
    span_begin(*timer_);
    for (int64_t i = 0; i < n; ++i) {
      input_.feed(batch_);
      o_.step();
    }
    const double r = rate(n, span_end(*timer_, device_));
    input_.idle();
    return r;
  }

  /// The pipeline alone at `share`: batches taken as fast as they come, for about kWindowS.
  double alone(double share) {
    const int64_t pass = input_.batches_per_pass();
    if (pass < kSettle + 3) return 0;
    input_.start_fixed_pass(key_--, pass, share);
    for (int64_t i = 0; i < kSettle; ++i) input_.feed(batch_);
    synchronize(device_);
    const auto t0 = Clock::now();
    int64_t n = 0;
    while (kSettle + n < pass && (n < kMinTimed || seconds_since(t0) < kWindowS)) {
      input_.feed(batch_);
      ++n;
    }
    synchronize(device_);
    const double r = rate(n, seconds_since(t0));
    input_.idle();
    return r;
  }

 private:
  double rate(int64_t batches, double seconds) const {
    return seconds > 0 ? static_cast<double>(batches * size_) / seconds : 0.0;
  }

  InputPipeline& input_;
  Batch& batch_;
  const ResolvedDevice& device_;
  const CalibrationOptions& o_;
  const int64_t size_;
  std::unique_ptr<StepTimer> timer_;
  int64_t steps_ = kMinTimed;
  int64_t key_ = kFirstKey;
};

}  // namespace

data::DecodePlan calibrate_decode(InputPipeline& input, Batch& batch, const ResolvedDevice& device,
                                  const CalibrationOptions& options) {
  const auto t0 = Clock::now();
  Calibrator c(input, batch, device, options);
  data::DecodeRates r = input.calibration_base();
  r.data_only = !options.step;
  const bool same = options.same_steps_everywhere;
  input.idle();
  if (!r.data_only) r.step = c.step_alone();
  if (c.stopped()) return {};
  r.cpu = c.alone(1.0);
  if (r.gpu_usable && !c.stopped()) r.gpu = c.alone(0.0);
  if (!r.data_only && !c.stopped()) r.fed_cpu = c.fed(1.0);
  // Where the step fed by the workers keeps its own rate nothing else is needed (a multi-process run measures
  // everything anyway: its ranks must run the same steps); without nvJPEG there is nothing to compare them with.
  const bool cpu_keeps_up = r.fed_cpu >= (1 - data::kFedTie) * r.step;
  if (!r.data_only && (same || (!cpu_keeps_up && r.gpu_usable)) && !c.stopped()) {
    r.fed_gpu = c.fed(0.0, r.gpu_usable);
    const double share = r.gpu_usable ? data::mixed_start_share(r) : -1;
    const bool try_mixed = share >= data::kMinMixedShare && share < 1.0;
    if (try_mixed) r.mixed_share = share;
    if (try_mixed || same) r.fed_mixed = c.fed(try_mixed ? share : 1.0, try_mixed);
  }
  if (c.stopped()) return {};
  r.seconds = seconds_since(t0);
  const data::DecodePlan plan = data::plan_decode(r);
  input.apply_plan(r, plan);
  return plan;
}

}  // namespace gpubench::engine
