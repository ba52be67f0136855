#include "gpubench/core/scenario/launch.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace gpubench {

namespace {

int as_int(const EnvLookup& env, const std::string& name, int fallback, int min_value) {
  const auto v = env(name);
  if (!v) return fallback;
  try {
    size_t used = 0;
    const int x = std::stoi(*v, &used);
    if (used != v->size() || x < min_value) throw std::invalid_argument(*v);
    return x;
  } catch (const std::exception&) {
    throw std::runtime_error("environment variable " + name + "='" + *v + "' is not an integer >= " +
                             std::to_string(min_value));
  }
}

void check(const RankInfo& r, const std::string& rank_var, const std::string& size_var) {
  if (r.rank >= r.world_size) {
    throw std::runtime_error(rank_var + "=" + std::to_string(r.rank) + " is not below " + size_var + "=" +
                             std::to_string(r.world_size));
  }
  if (r.master_port < 1 || r.master_port > 65535) {
    throw std::runtime_error("MASTER_PORT=" + std::to_string(r.master_port) + " is not a TCP port");
  }
}

}  // namespace

std::string first_slurm_host(const std::string& nodelist) {
  const auto comma = nodelist.find(',');
  const auto bracket = nodelist.find('[');
  if (bracket == std::string::npos || (comma != std::string::npos && comma < bracket)) {
    return nodelist.substr(0, comma);
  }
  const std::string prefix = nodelist.substr(0, bracket);
  const auto end = nodelist.find_first_of(",-]", bracket + 1);
  return prefix + nodelist.substr(bracket + 1, end - bracket - 1);
}

std::string local_address_towards(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), "9", &hints, &found) != 0 || found == nullptr) return "";
  std::string address;
  for (const addrinfo* a = found; a != nullptr && address.empty(); a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype, 0);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    char text[INET6_ADDRSTRLEN] = {};
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      const void* raw = local.ss_family == AF_INET
                            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr)
                            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr);
      if (::inet_ntop(local.ss_family, raw, text, sizeof text) != nullptr) address = text;
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return address;
}

RankInfo rank_info_from_env(const EnvLookup& env) {
  RankInfo r;
  r.gloo_interface = env("GLOO_SOCKET_IFNAME").value_or("");  // PyTorch's own variable, whichever launcher
  if (env("RANK") && env("WORLD_SIZE")) {  // torchrun, or gpubench --nproc-per-node
    r.launcher = env("GPUBENCH_LAUNCHER").value_or("torchrun");
    r.rank = as_int(env, "RANK", 0, 0);
    r.world_size = as_int(env, "WORLD_SIZE", 1, 1);
    r.local_rank = as_int(env, "LOCAL_RANK", r.rank, 0);
    r.local_world_size = as_int(env, "LOCAL_WORLD_SIZE", r.world_size, 1);
    r.master_addr = env("MASTER_ADDR").value_or("127.0.0.1");
    r.master_port = as_int(env, "MASTER_PORT", 29500, 1);
    check(r, "RANK", "WORLD_SIZE");
    return r;
  }
  if (env("SLURM_PROCID") && env("SLURM_NTASKS")) {
    r.launcher = "slurm";
    r.rank = as_int(env, "SLURM_PROCID", 0, 0);
    r.world_size = as_int(env, "SLURM_NTASKS", 1, 1);
    r.local_rank = as_int(env, "SLURM_LOCALID", 0, 0);
    // SLURM_NTASKS_PER_NODE may read "4" or "4(x2)"; only its leading count matters here.
    const std::string per_node = env("SLURM_NTASKS_PER_NODE").value_or(std::to_string(r.world_size));
    r.local_world_size = std::max(1, std::atoi(per_node.c_str()));
    if (auto addr = env("MASTER_ADDR")) {
      r.master_addr = *addr;
    } else if (auto nodes = env("SLURM_STEP_NODELIST") ? env("SLURM_STEP_NODELIST") : env("SLURM_JOB_NODELIST")) {
      r.master_addr = first_slurm_host(*nodes);
    }
    r.master_port = as_int(env, "MASTER_PORT", 29500, 1);
    check(r, "SLURM_PROCID", "SLURM_NTASKS");
    return r;
  }
  if (env("OMPI_COMM_WORLD_RANK") && env("OMPI_COMM_WORLD_SIZE")) {
    r.launcher = "mpirun";
    r.rank = as_int(env, "OMPI_COMM_WORLD_RANK", 0, 0);
    r.world_size = as_int(env, "OMPI_COMM_WORLD_SIZE", 1, 1);
    r.local_rank = as_int(env, "OMPI_COMM_WORLD_LOCAL_RANK", 0, 0);
    r.local_world_size = as_int(env, "OMPI_COMM_WORLD_LOCAL_SIZE", r.world_size, 1);
    if (auto addr = env("MASTER_ADDR")) {
      r.master_addr = *addr;
    } else if (r.local_world_size < r.world_size) {
      throw std::runtime_error(
          "this mpirun job spans several nodes: set MASTER_ADDR to rank 0's host (mpirun -x MASTER_ADDR=host)");
    }
    r.master_port = as_int(env, "MASTER_PORT", 29500, 1);
    check(r, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE");
    return r;
  }
  return r;
}

RankInfo rank_info_from_process_env() {
  RankInfo r = rank_info_from_env([](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  });
  if (r.world_size > 1) {
    // Checked before anything is built: an unknown host would otherwise surface as LibTorch's rendezvous exception.
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int rc = r.master_addr.empty() ? EAI_NONAME : ::getaddrinfo(r.master_addr.c_str(), nullptr, &hints, &found);
    if (found != nullptr) ::freeaddrinfo(found);
    if (rc != 0) {
      throw std::runtime_error("MASTER_ADDR='" + r.master_addr + "' (rank 0's host, " + r.launcher +
                               "): cannot be resolved (" + ::gai_strerror(rc) +
                               "); set MASTER_ADDR to rank 0's host name or address");
    }
  }
  return r;
}

}  // namespace gpubench
