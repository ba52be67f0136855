#pragma once
// Ctrl-C and SIGTERM as a request to stop: what run (the record says `interrupted`), db add (what is stored is said)
// and dataset make (what was written is removed) do with them, one mechanism for the three.

#include <atomic>

namespace gpubench::cli {

/// While it lives, SIGINT and SIGTERM set requested() instead of ending the process; a second one ends it at once
/// (the default action). The default handlers come back when it goes. One at a time in a process.
class StopOnSignal {
 public:
  StopOnSignal();
  ~StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;

  bool requested() const;
  /// The flag itself, for code that polls it (the engine's RunOptions::stop_requested, the data set's writers).
  const std::atomic<bool>* flag() const;
};

}  // namespace gpubench::cli
