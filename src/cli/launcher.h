#pragma once
// `gpubench run --nproc-per-node N`: starts N local ranks of this same command (torchrun's environment: RANK,
// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), forwards Ctrl-C, and when one rank dies stops the others and
// makes sure a record names the rank. Children die with the launcher (PR_SET_PDEATHSIG): no orphans.

#include <string>
#include <vector>

#include "gpubench/core/scenario/scenario.hpp"

namespace gpubench::cli {

struct LaunchPlan {
  int nproc = 1;
  std::vector<std::string> child_args;  ///< argv for each rank (without --nproc-per-node), argv[0] included
  Scenario scenario;                    ///< for the failure record the launcher may have to write
  std::string command_line;
  std::string store;                    ///< the results store as typed, for the ranks' GPUBENCH_DB (empty: none)
  double grace_s = 30;                  ///< after a rank fails, how long the others get to fail on their own
};

/// Runs the ranks to completion. Returns the exit code: rank 0's, or 1 if any rank failed.
int launch_local_ranks(const LaunchPlan& plan);

/// The environment variable through which rank 0 tells the launcher where its record goes.
inline constexpr const char* kRecordPathFileEnv = "GPUBENCH_RECORD_PATH_FILE";

}  // namespace gpubench::cli
