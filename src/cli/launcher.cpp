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

}  // namespace

/// After rank 0 has ended, the seconds the other ranks get before they are stopped.
constexpr double kRank0GoneGraceS = 1.0;

int launch_local_ranks(const LaunchPlan& plan) {
  namespace fs = std::filesystem;
  const int port = free_port();
  char tmpl[] = "/tmp/gpubench-launch-XXXXXX";
  const int tfd = ::mkstemp(tmpl);
  if (tfd >= 0) ::close(tfd);
  const std::string path_file = tmpl;

  std::vector<char*> argv;
  for (const auto& a : plan.child_args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  spdlog::info("starting {} ranks on this node (rendezvous 127.0.0.1:{})", plan.nproc, port);
  const pid_t parent = ::getpid();
  std::vector<pid_t> pids(static_cast<size_t>(plan.nproc), -1);
  for (int r = 0; r < plan.nproc; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      spdlog::error("fork failed: {}", std::strerror(errno));
      for (pid_t p : pids) {
        if (p > 0) ::kill(p, SIGKILL);
      }
      return 1;
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

  struct sigaction sa {};
  sa.sa_handler = on_launcher_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  using Clock = std::chrono::steady_clock;
  std::vector<int> status(pids.size(), 0);
  std::vector<bool> done(pids.size(), false);
  int first_failed = -1, forwarded = 0;
  std::string stopped_note;  // ranks found stopped when the first rank failed
  Clock::time_point deadline = Clock::time_point::max();
  bool terminated = false;
  size_t remaining = pids.size();
  while (remaining > 0) {
    int st = 0;
    const pid_t pid = ::waitpid(-1, &st, WNOHANG);
    if (pid > 0) {
      for (size_t r = 0; r < pids.size(); ++r) {
        if (pids[r] != pid) continue;
        done[r] = true;
        status[r] = st;
        --remaining;
        if (failed(st) && first_failed < 0 && forwarded == 0) {
          first_failed = static_cast<int>(r);
          for (size_t k = 0; k < pids.size(); ++k) {  // a rank that hangs because it is stopped is the real cause
            if (!done[k] && !stopped_state(pids[k]).empty()) stopped_note += "rank " + std::to_string(k) + " was stopped (SIGSTOP); ";
          }
          // Rank 0 writes the record: when another rank fails first, rank 0 gets time to notice and say so. When
          // rank 0 itself is done, the others have nothing left to report (a hung or stopped rank never would):
          // they get a moment, then are stopped, so the launcher ends within --ddp-timeout and a few seconds.
          const double grace = r == 0 ? kRank0GoneGraceS : plan.grace_s;
          spdlog::error("rank {} {}; giving the other ranks {:.0f} s to stop", r, describe_exit(st), grace);
          deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace));
        }
      }
      continue;
    }
    // Ctrl-C: the first is passed on (ranks finish their epoch together and write a record); later ones kill.
    const int sigs = g_signals.load();
    if (sigs > forwarded) {
      for (size_t r = 0; r < pids.size(); ++r) {
        if (!done[r]) ::kill(pids[r], forwarded == 0 ? SIGINT : SIGKILL);
      }
      forwarded = sigs;
    }
    if (Clock::now() > deadline) {
      // With rank 0 gone nobody is left to write anything: the rest are killed outright (a stopped or hung rank
      // would not act on SIGTERM anyway). Otherwise SIGTERM first, then SIGKILL.
      if (first_failed == 0) terminated = true;
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

  std::string record_path;
  {
    std::ifstream in(path_file);
    std::getline(in, record_path);
  }
  fs::remove(path_file);
  const int rank0_code = WIFEXITED(status[0]) ? WEXITSTATUS(status[0]) : 1;
  // Nothing to add when all went well, after a forwarded Ctrl-C (the ranks wrote an `interrupted` record), or when
  // only rank 0 failed the ordinary way (its record says why).
  if (first_failed < 0 || forwarded > 0 || (first_failed == 0 && WIFEXITED(status[0]) && fs::exists(record_path))) {
    return first_failed < 0 || forwarded > 0 ? rank0_code : 1;
  }

  // A rank failed: make sure the record exists and names it.
  const std::string what =
      stopped_note + "rank " + std::to_string(first_failed) + " " + describe_exit(status[first_failed]);
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
  spdlog::error("{}", what);
  return 1;
}

}  // namespace gpubench::cli
