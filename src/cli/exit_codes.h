#pragma once
// gpubench's exit codes, defined once: every command returns one of these, its --help lists the ones it can return,
// and docs/cli.md reproduces this table (a test checks they agree).

#include <stdexcept>
#include <string>
#include <vector>

namespace gpubench::cli {

enum ExitCode : int {
  kExitOk = 0,               ///< the command did what was asked
  kExitRunFailed = 1,        ///< a run, sweep point, scaling run or measurement failed (its record says why)
  kExitUsage = 2,            ///< bad flags, arguments, scenario or input, or an unusable output location; nothing ran
  kExitRegression = 3,        ///< compare or history --detect found a change for the worse
  kExitOutputNotWritten = 4,  ///< the work finished, but an output (record, store, --save file) is not where asked
  kExitNotSameScenario = 5,   ///< compare: a candidate's only baseline runs are another scenario (keys listed)
  kExitNoBaseline = 6,        ///< compare: no baseline run of a candidate's model at all
  kExitTooFewRuns = 7,        ///< history --detect: a series has fewer runs than detection needs
  kExitInconclusive = 8,      ///< compare: a difference host-bound runs cannot attribute to the GPU (repeat both sides)
  kExitInterrupted = 130      ///< db add: stopped by Ctrl-C or SIGTERM; what was stored is whole and said (128 + SIGINT)
};
/// The old name of 4, from when only `run` returned it.
inline constexpr ExitCode kExitRecordNotWritten = kExitOutputNotWritten;

struct ExitCodeInfo {
  int code;
  std::string meaning;
};
/// Every code with its meaning, in order.
const std::vector<ExitCodeInfo>& exit_code_table();
/// "Exit codes: 0 ok; 2 usage ...": the lines a command's --help ends with, for the codes it can return.
std::string exit_code_footer(const std::vector<int>& codes);

/// Bad input from the user (flags, arguments, files): exit 2, before any work.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
/// The work failed (a run, a measurement): exit 1.
class RunFailedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
/// The work finished but an output could not be written where asked: exit 4.
class OutputNotWritten : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The exit code for an exception that reached the framework (the one map from typed errors to codes).
int exit_code_for(const std::exception& e);

}  // namespace gpubench::cli
