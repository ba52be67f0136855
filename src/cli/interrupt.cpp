#include "cli/interrupt.h"

#include <csignal>

namespace gpubench::cli {

namespace {

std::atomic<bool> g_stop{false};

extern "C" void on_stop_signal(int sig) {
  if (g_stop.exchange(true)) {
    std::signal(sig, SIG_DFL);  // a second Ctrl-C ends the process at once
    std::raise(sig);
  }
}

}  // namespace

StopOnSignal::StopOnSignal() {
  g_stop = false;
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

StopOnSignal::~StopOnSignal() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

bool StopOnSignal::requested() const { return g_stop.load(); }

const std::atomic<bool>* StopOnSignal::flag() const { return &g_stop; }

}  // namespace gpubench::cli
