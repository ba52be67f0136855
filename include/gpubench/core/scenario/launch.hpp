#pragma once
// Who am I in a multi-process run? Rank, world size and rendezvous address from the environment that torchrun,
// SLURM (srun), Open MPI (mpirun) or gpubench's own --nproc-per-node launcher sets.

#include <functional>
#include <optional>
#include <string>

namespace gpubench {

struct RankInfo {
  int rank = 0, world_size = 1;
  int local_rank = 0, local_world_size = 1;  ///< among the ranks on this node; selects the GPU
  std::string master_addr = "127.0.0.1";    ///< rendezvous host (rank 0's TCPStore)
  int master_port = 29500;
  std::string launcher = "none";            ///< none | gpubench | torchrun | slurm | mpirun
  std::string gloo_interface;               ///< GLOO_SOCKET_IFNAME: the network interface Gloo uses (empty: routed)
  bool distributed() const { return world_size > 1; }
};

using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

/// Reads the launcher's variables, in this order: RANK/WORLD_SIZE (torchrun or gpubench; LOCAL_RANK,
/// LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), SLURM_PROCID/SLURM_NTASKS (SLURM_LOCALID, SLURM_NTASKS_PER_NODE,
/// the first host of SLURM_STEP_NODELIST or SLURM_JOB_NODELIST as master unless MASTER_ADDR is set),
/// OMPI_COMM_WORLD_RANK/SIZE (OMPI_COMM_WORLD_LOCAL_RANK/LOCAL_SIZE; MASTER_ADDR is required when the job spans
/// nodes). None of them: a single process. Throws std::runtime_error naming the variable that is malformed.
RankInfo rank_info_from_env(const EnvLookup& env);
/// The same, from this process's environment.
RankInfo rank_info_from_process_env();

/// This host's own address on the route to `host` (a name or an address): where its traffic to the rendezvous host
/// leaves from, so the address the other nodes can reach it at. "" when `host` does not resolve or has no route.
/// Sends nothing (a UDP socket is connected, never written to).
std::string local_address_towards(const std::string& host);

/// First host of a SLURM node list: "gpu[03-05,9],cpu1" -> "gpu03"; "node7" -> "node7".
std::string first_slurm_host(const std::string& nodelist);

}  // namespace gpubench
