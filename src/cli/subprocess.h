#pragma once
// Running this gpubench again as a child process (scaling and sweep points: each run gets a fresh device state).

#include <string>
#include <vector>

namespace gpubench::cli {

/// The variable through which a parent hands a `gpubench run` child its results store (sweep's points, scaling's
/// runs, the launcher's rank 0): an environment is private to its user, a command line is not, and a store URL can
/// hold a password. `run` takes it when --db is not given. Never recorded (host_facts.cpp).
inline constexpr const char* kStoreEnv = "GPUBENCH_DB";

/// Runs argv[0] (a path, or a program name looked up in PATH) with `args` (argv[0] included) and waits; the child's
/// kStoreEnv is `store` (typed, credentials included), or unset when `store` is empty. Returns its exit code,
/// 128+signal if a signal ended it, or -1 if it could not be started.
int run_child(const std::vector<std::string>& args, const std::string& store = "");

}  // namespace gpubench::cli
