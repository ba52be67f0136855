#pragma once
// decode: auto's measurement (data/decode_choice.hpp, issue #62): after the warm-up, before the first timed epoch,
// the run times on this host and device the training step alone, the workers and nvJPEG delivering alone, and the
// step fed by the workers, by nvJPEG and by a split of the two; plan_decode picks the path from those rates and the
// pipeline is set to it (InputPipeline::apply_plan). A few seconds, untimed; the figures go to the record
// (data.decode_calibration) and the choice's reason to data.decode_reason.

#include <atomic>
#include <functional>

#include "device.h"
#include "gpubench/data/decode_choice.hpp"
#include "input_pipeline.h"
#include "models/registry.h"

namespace gpubench::engine {

struct CalibrationOptions {
  /// One training step on `batch` (a graph replay where the run captured one); empty for data_only runs.
  std::function<void()> step;
  /// A multi-process run: every rank runs every measurement with the same number of steps (the steps' collectives
  /// must meet), whatever its own figures say.
  bool same_steps_everywhere = false;
  const std::atomic<bool>* stop = nullptr;
};

/// Measures, chooses and applies. Returns the plan (its reason is in the record too); a run stopped during the
/// calibration returns an empty decode and leaves the pipeline as it was.
data::DecodePlan calibrate_decode(InputPipeline& input, Batch& batch, const ResolvedDevice& device,
                                  const CalibrationOptions& options);

}  // namespace gpubench::engine
