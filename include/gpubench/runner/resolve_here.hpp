#pragma once
// The resolver (core/scenario/resolve.hpp) bound to this machine: the engine's model catalog, the device this process
// would use, and the data layer's check of an image folder. What `run`, `validate --resolved` and `run --dry-run` call.

#include "gpubench/core/scenario/launch.hpp"
#include "gpubench/core/scenario/resolve.hpp"

namespace gpubench {

/// `requested` (loaded and checked) resolved here for the process `rank` is, in a job of `world_size` ranks that
/// writes `repeats` records; `check_data` scans a data folder (rank 0 does, for the job). Throws ScenarioError
/// naming the key (a folder that cannot feed the run names data_path). `this_run` false (validate, a sweep's or a
/// scaling study's check of its points): the memory estimate against this machine is a note, never a refusal, as a
/// file is valid whatever machine checks it. `runs_here` (a sweep's or a scaling study's points, which this machine
/// will run): what this device or build cannot do at all (a memory cap on the CPU, fused kernels without the CUDA
/// module) is refused even where the memory estimate stays a note.
ResolvedScenario resolve_here(const Scenario& requested, const RankInfo& rank, int world_size, int repeats,
                              bool check_data = true, bool this_run = true, bool runs_here = false);

/// Files and flags loaded (ScenarioLoader, the engine's model keys), then resolved here.
ResolvedScenario resolve_here(const ScenarioInputs& inputs, const RankInfo& rank, int world_size, int repeats,
                              bool check_data = true, bool this_run = true, bool runs_here = false);

}  // namespace gpubench
