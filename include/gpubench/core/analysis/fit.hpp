#pragma once
// Will it fit? A scenario against the cards of the device table (or some of them), from the memory estimate
// (scenario/resolve.hpp) corrected by what the committed H200 records measured: each card's predicted peak, whether it
// fits, the largest batch that does, and where it does not, what makes it fit (gradient checkpointing, accumulation,
// a leaner precision, a shorter sequence) with what each costs where a record pair measured it. Needs no device.
// docs/fit.md explains the calibration and its bound.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpubench/core/record/record_io.hpp"
#include "gpubench/core/scenario/resolve.hpp"

namespace gpubench {

/// The correction from the estimate to a peak that the committed records never exceeded: peak allocated <=
/// slope x estimate + intercept, for one model, mode and kernel path (fitted on the H200's eager single-GPU records;
/// the slope from the largest run, the intercept the largest remainder). Kernel paths and modes without records
/// take the largest slope and intercept of all.
struct PeakCalibration {
  std::string model, mode, kernels;  ///< "" matches any (the fallback)
  double slope = 1.0;
  double intercept_gib = 0.0;
  int records = 0;  ///< committed records behind it (0: the fallback)
};

/// The calibration for a scenario (model, mode, kernel path).
const PeakCalibration& peak_calibration(const Scenario& s);
const std::vector<PeakCalibration>& peak_calibrations();

/// A remedy for a scenario that does not fit: what it changes, its predicted peak, and what it costs.
struct FitRemedy {
  std::string name;                 ///< checkpointing | accumulation | optimizer | precision | sequence
  std::string change;               ///< "gradient_checkpointing: true", "batch 8 x 4 accumulated", ...
  std::vector<std::pair<std::string, std::string>> keys;  ///< the scenario keys it sets
  int64_t predicted_bytes = 0;
  bool fits = false;
  /// Throughput with the remedy over throughput without (samples/s of the effective batch), from a pair of the
  /// records given (`--measured`) that differ only in the remedy's keys; unset: not measured.
  std::optional<double> throughput_ratio;
  std::string cost_source;          ///< the pair's records, or why there is none
};

struct FitCard {
  std::string device;               ///< the table's name
  int64_t memory_bytes = 0;         ///< the table's memory (GiB as the table gives it)
  int64_t usable_bytes = 0;         ///< what a run can allocate there (usable_memory_bytes, device_table.hpp;
                                    ///< no more than the scenario's memory_limit or emulated card allows)
  int64_t estimate_bytes = 0;       ///< the estimate (a lower bound: resolve.hpp)
  int64_t predicted_bytes = 0;      ///< the calibrated peak (an upper bound over the committed records)
  bool fits = false;
  int64_t largest_batch = 0;        ///< the largest batch size predicted to fit (0: not even 1)
  std::vector<FitRemedy> remedies;  ///< where it does not fit
};

struct FitResult {
  Scenario scenario;                ///< as resolved for a CUDA card
  std::string precision;            ///< resolved precision
  PeakCalibration calibration;
  /// The scenario's memory_limit (or its emulated card's usable memory): every card's usable memory is at most this,
  /// as `run --memory-limit`/`--emulate` would cap the allocator there.
  std::optional<int64_t> cap_bytes;
  std::string cap_source;           ///< "memory_limit" or "emulating <card>"
  std::vector<FitCard> cards;
};

/// `requested` (loaded) on each card of the device table named in `devices` (all with a memory size when empty;
/// a name that is no card throws std::invalid_argument listing them). `measured`: records whose pairs give remedy costs.
FitResult plan_fit(const Scenario& requested, const ModelCatalog& models, const std::vector<std::string>& devices,
                   const std::vector<LoadedRecord>& measured);

/// The calibrated peak (bytes) for a resolved scenario's estimate.
int64_t predicted_peak_bytes(const Scenario& s, const MemoryEstimate& m);


}  // namespace gpubench
