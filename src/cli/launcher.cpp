#include "cli/launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cli/subprocess.h"
#include "gpubench/core/record/record_io.hpp"

namespace gpubench::cli {

namespace {

std::atomic<int> g_signals{0};
extern "C" void on_launcher_signal(int) { g_signals.fetch_add(1); }

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 29500;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  int port = 29500;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "ended (status " + std::to_string(status) + ")";
}

bool failed(int status) { return !(WIFEXITED(status) && WEXITSTATUS(status) == 0); }

/// "stopped (SIGSTOP)" for a process the kernel reports as stopped, "" otherwise (/proc/<pid>/stat's state field).
std::string stopped_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  const auto paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return "";
  const char state = stat[paren + 2];
  return state == 'T' || state == 't' ? "stopped (SIGSTOP)" : "";
}

/// After rank 0 has ended, the seconds the other ranks get before they are stopped.
constexpr double kRank0GoneGraceS = 1.0;

/// Starts the ranks with torchrun's environment; returns their pids (empty when a fork failed: none is left running).
std::vector<pid_t> start_ranks(const LaunchPlan& plan, int port, const std::string& path_file) {
  std::vector<char*> argv;
  for (const auto& a : plan.child_args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  std::vector<pid_t> pids(static_cast<size_t>(plan.nproc), -1);
  for (int r = 0; r < plan.nproc; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      spdlog::error("fork failed: {}", std::strerror(errno));
      for (pid_t p : pids) {
        if (p > 0) ::kill(p, SIGKILL);
      }
      return {};
    }
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the launcher going away takes its ranks with it
      // Own process group: a terminal's Ctrl-C reaches only the launcher, which forwards it once (a rank that got
      // it twice, from the terminal and from the launcher, would take the second as "stop now").
      ::setpgid(0, 0);
      if (::getppid() != parent) ::_exit(1);
      ::setenv("RANK", std::to_string(r).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(plan.nproc).c_str(), 1);
      ::setenv("LOCAL_WORLD_SIZE", std::to_string(plan.nproc).c_str(), 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      ::setenv("GPUBENCH_LAUNCHER", "gpubench", 1);
      ::setenv(kRecordPathFileEnv, path_file.c_str(), 1);
      if (plan.store.empty()) {
        ::unsetenv(kStoreEnv);
      } else {
        ::setenv(kStoreEnv, plan.store.c_str(), 1);  // a password never goes on a command line
      }
      // N ranks on one host share its cores (CPU ranks would otherwise oversubscribe them), as torchrun does.
      if (::getenv("OMP_NUM_THREADS") == nullptr) {
        const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
        ::setenv("OMP_NUM_THREADS", std::to_string(std::max(1u, cores / static_cast<unsigned>(plan.nproc))).c_str(), 1);
      }
      ::execv("/proc/self/exe", argv.data());
      std::fprintf(stderr, "gpubench: could not start rank %d: %s\n", r, std::strerror(errno));
      ::_exit(127);
    }
    pids[static_cast<size_t>(r)] = pid;
  }
  return pids;
}

/// How the ranks ended.
struct Ending {
  std::vector<int> status;   ///< each rank's wait status
  int first_failed = -1;     ///< the first rank that failed on its own (not after a forwarded Ctrl-C)
  int forwarded = 0;         ///< Ctrl-Cs passed on
  std::string stopped_note;  ///< ranks found stopped when the first rank failed
};

/// Waits for every rank, forwarding Ctrl-C; once one fails, the others get `plan.grace_s` (1 s when rank 0 is the
/// one: nobody is left to write a record) to end on their own, then SIGTERM, then SIGKILL.
Ending supervise(const std::vector<pid_t>& pids, const LaunchPlan& plan) {
  struct sigaction sa {};
  sa.sa_handler = on_launcher_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  using Clock = std::chrono::steady_clock;
  Ending e;
  e.status.assign(pids.size(), 0);
  std::vector<bool> done(pids.size(), false);
  Clock::time_point deadline = Clock::time_point::max();
  bool terminated = false;
  size_t remaining = pids.size();
  while (remaining > 0) {
    int st = 0;
    const pid_t pid = ::waitpid(-1, &st, WNOHANG);
    if (pid > 0) {
      const auto it = std::find(pids.begin(), pids.end(), pid);
      if (it == pids.end()) continue;
      const auto r = static_cast<size_t>(it - pids.begin());
      done[r] = true;
      e.status[r] = st;
      --remaining;
      if (failed(st) && e.first_failed < 0 && e.forwarded == 0) {
        e.first_failed = static_cast<int>(r);
        for (size_t k = 0; k < pids.size(); ++k) {  // a rank that hangs because it is stopped is the real cause
          if (!done[k] && !stopped_state(pids[k]).empty()) e.stopped_note += "rank " + std::to_string(k) + " was stopped (SIGSTOP); ";
        }
        // Rank 0 writes the record: when another rank fails first, rank 0 gets time to notice and say so. When
        // rank 0 itself is done, the others have nothing left to report (a hung or stopped rank never would):
        // they get a moment, then are stopped, so the launcher ends within --ddp-timeout and a few seconds.
        const double grace = r == 0 ? kRank0GoneGraceS : plan.grace_s;
        spdlog::error("rank {} {}; giving the other ranks {:.0f} s to stop", r, describe_exit(st), grace);
        deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace));
      }
      continue;
    }
    // Ctrl-C: the first is passed on (ranks finish their epoch together and write a record); later ones kill.
    const int sigs = g_signals.load();
    if (sigs > e.forwarded) {
      for (size_t r = 0; r < pids.size(); ++r) {
        if (!done[r]) ::kill(pids[r], e.forwarded == 0 ? SIGINT : SIGKILL);
      }
      e.forwarded = sigs;
    }
    if (Clock::now() > deadline) {
      // With rank 0 gone nobody is left to write anything: the rest are killed outright (a stopped or hung rank
      // would not act on SIGTERM anyway). Otherwise SIGTERM first, then SIGKILL.
      if (e.first_failed == 0) terminated = true;
      for (size_t r = 0; r < pids.size(); ++r) {
        if (done[r]) continue;
        if (!terminated) ::kill(pids[r], SIGCONT);  // a stopped (SIGSTOP) rank acts on SIGTERM only once resumed
        ::kill(pids[r], terminated ? SIGKILL : SIGTERM);
      }
      if (!terminated) spdlog::error("stopping the remaining ranks");
      deadline = Clock::now() + std::chrono::seconds(2);
      terminated = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  return e;
}

/// A rank failed: makes sure the record at `record_path` exists and names it (rebuilt from rank 0's epochs stream
/// when rank 0 died before writing it).
void write_failure_record(const LaunchPlan& plan, const std::string& what, std::string record_path) {
  namespace fs = std::filesystem;
  if (record_path.empty()) record_path = plan.scenario.output.empty() ? "runs/launch_failed.json" : plan.scenario.output;
  try {
    RunRecord r;
    bool have = false;
    if (fs::exists(record_path)) {
      try {
        r = read_record(record_path);
        have = true;
      } catch (const std::exception&) {
      }
    }
    if (!have) {
      // Rank 0 died before writing its record: its epochs stream still has the header (environment, model) and
      // every finished epoch.
      const std::string stream = epochs_stream_path(record_path);
      if (auto recovered = recover_from_stream(stream)) {
        r = std::move(*recovered);
        r.notes.push_back("launcher: rebuilt from " + stream + " (" + std::to_string(r.epochs.size()) +
                          " finished epoch(s))");
      } else {
        r.scenario = plan.scenario;
        r.environment.command_line = plan.command_line;
      }
      r.status = RunStatus::kFailed;
      r.reason = what + "; rank 0 wrote no record, so this one comes from the launcher";
    } else if (r.status == RunStatus::kOk) {
      r.status = RunStatus::kFailed;
      r.reason = what;
    }
    r.notes.push_back("launcher: " + what + " first; the launcher stopped the ranks still running");
    write_record(record_path, r);
    std::error_code ec;
    fs::remove(epochs_stream_path(record_path), ec);  // folded into the record
    std::printf("record: %s\n", record_path.c_str());
  } catch (const std::exception& e) {
    spdlog::error("could not write the failure record {}: {}", record_path, e.what());
  }
}

}  // namespace

int launch_local_ranks(const LaunchPlan& plan) {
  namespace fs = std::filesystem;
  const int port = free_port();
  char tmpl[] = "/tmp/gpubench-launch-XXXXXX";
  const int tfd = ::mkstemp(tmpl);
  if (tfd >= 0) ::close(tfd);
  const std::string path_file = tmpl;
  spdlog::info("starting {} ranks on this node (rendezvous 127.0.0.1:{})", plan.nproc, port);
  const std::vector<pid_t> pids = start_ranks(plan, port, path_file);
  if (pids.empty()) return 1;
  const Ending e = supervise(pids, plan);
  std::string record_path;
  {
    std::ifstream in(path_file);
    std::getline(in, record_path);
  }
  fs::remove(path_file);
  const int rank0_code = WIFEXITED(e.status[0]) ? WEXITSTATUS(e.status[0]) : 1;
  // Nothing to add when all went well, after a forwarded Ctrl-C (the ranks wrote an `interrupted` record), or when
  // only rank 0 failed the ordinary way (its record says why).
  if (e.first_failed < 0 || e.forwarded > 0 || (e.first_failed == 0 && WIFEXITED(e.status[0]) && fs::exists(record_path))) {
    return e.first_failed < 0 || e.forwarded > 0 ? rank0_code : 1;
  }
  const std::string what = e.stopped_note + "rank " + std::to_string(e.first_failed) + " " +
                           describe_exit(e.status[static_cast<size_t>(e.first_failed)]);
  write_failure_record(plan, what, record_path);
  spdlog::error("{}", what);
  return 1;
}

}  // namespace gpubench::cli
