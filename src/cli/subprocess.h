#pragma once
// Running this gpubench again as a child process (scaling and sweep points: each run gets a fresh device state).

#include <string>
#include <vector>

namespace gpubench::cli {

/// Runs argv[0] (a path, or a program name looked up in PATH) with `args` (argv[0] included) and waits. Returns its exit code, 128+signal if a signal ended it,
/// or -1 if it could not be started.
int run_child(const std::vector<std::string>& args);

}  // namespace gpubench::cli
