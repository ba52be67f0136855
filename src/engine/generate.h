#pragma once
// mode: generate: token-by-token decoding with a static KV cache, prefill then one greedy token per step, the decode
// step captured as CUDA graphs on CUDA devices. Each timed generation is one epoch of the record: its steps are the
// new tokens, its step times the inter-token latencies; the summary has prefill and decode tokens/s, time to first
// token, per-token latency percentiles, the KV cache and the decode roofline (docs/generate.md).

#include "gpubench/core/record/run_record.hpp"
#include "models/registry.h"
#include "trainer.h"

namespace gpubench::engine {

/// Runs the warm-up generations and the timed ones (`epochs` of them), filling `record`. `record.model` must
/// already be filled. Throws c10::OutOfMemoryError and other errors to the caller, as train() does.
void generate(const TrainingPlan& plan, Workload& workload, RunObserver& observer, RunRecord& record);

}  // namespace gpubench::engine
