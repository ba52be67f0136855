#pragma once
// The resolver (core/scenario/resolve.hpp) bound to this machine: the engine's model catalog, the device this process
// would use, and the data layer's check of an image folder. What `run`, `validate --resolved` and `run --dry-run` call.

#include "gpubench/core/scenario/launch.hpp"
#include "gpubench/core/scenario/resolve.hpp"

namespace gpubench {

/// What a resolution is for, which decides what it refuses.
enum class ResolveFor {
  kThisRun,     ///< `run`: everything that cannot work here is refused, the memory estimate included
  kRunsHere,    ///< a sweep's or a scaling study's points, which this machine will run: what this device or build
                ///< cannot do at all (a memory cap on the CPU, fused kernels without the CUDA module) is refused; the
                ///< memory estimate is a note (an out-of-memory point is data)
  kCheckOnly,   ///< `validate`: notes only, as a file is valid whatever machine checks it
};

/// `requested` (loaded and checked) resolved here for the process `rank` is, in a job of `world_size` ranks that
/// writes `repeats` records; `check_data` scans a data folder (rank 0 does, for the job). Throws ScenarioError
/// naming the key (a folder that cannot feed the run names data_path).
ResolvedScenario resolve_here(const Scenario& requested, const RankInfo& rank, int world_size, int repeats,
                              bool check_data = true, ResolveFor purpose = ResolveFor::kThisRun);

/// The scenario's backend_library loaded (a no-op without one). Throws ScenarioError naming the key and why the
/// library cannot serve (missing, not a backend, crashed while loading).
void load_backend_library_of(const Scenario& s);

/// Files and flags loaded (ScenarioLoader, the engine's model keys), then resolved here.
ResolvedScenario resolve_here(const ScenarioInputs& inputs, const RankInfo& rank, int world_size, int repeats,
                              bool check_data = true, ResolveFor purpose = ResolveFor::kThisRun);

}  // namespace gpubench
