#pragma once
// The command-line framework every gpubench command plugs into. A command is one file under src/cli/commands/: a
// class that declares its flags and arguments on its CLI11 subcommand and runs, plus a CommandSpec (name, summary,
// exit codes, default output format) that main.cpp's table lists. The framework adds what every command shares:
// --format and --save for the document it prints, -q/-v/--log-level, typed help with each command's exit codes,
// did-you-mean for misspelt flags and commands, and one map from typed errors to exit codes (exit_codes.h).

#include <CLI/CLI.hpp>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cli/exit_codes.h"
#include "cli/output.h"
#include "gpubench/core/io/files.hpp"

namespace gpubench {
struct Document;
}

namespace gpubench::cli {

/// What the framework hands a command when it runs.
struct Context {
  OutputOptions output;           ///< --format and --save, checked before the command runs
  std::vector<std::string> argv;  ///< this process's arguments, argv[0] included
  std::string command_line;       ///< the same, joined by spaces
  std::string self;               ///< this binary, for commands that run it again (sweep, scaling)
  int verbosity = 0;              ///< -1 quiet (-q), 0 normal, 1 verbose (-v)
  /// Where printed documents go: standard output, unless a command writes data there itself (`run --output -`),
  /// which then sets this to standard error before printing.
  std::FILE* document_stream = stdout;

  bool quiet() const { return verbosity < 0; }
  /// Prints `d` in --format (or the command's default) to document_stream and to every --save file. Throws
  /// OutputNotWritten when a destination cannot be written.
  void print(const Document& d) const;
};

class Command {
 public:
  virtual ~Command() = default;
  /// Declares the command's arguments and flags on its subcommand (CLI11), with typed help (`->type_name`).
  virtual void declare(CLI::App& cmd) = 0;
  /// Runs after parsing. Returns an exit code (exit_codes.h), or throws: UsageError and ScenarioError exit 2,
  /// OutputNotWritten 4, RunFailedError 1; anything else is reported and exits 2.
  virtual int run(Context& ctx) = 0;
  /// The files this command reads (inputs, stores) and writes (outputs) as parsed, before it runs: the framework
  /// adds --save's files and refuses (exit 2) an output that is an input, a store or another output. A command
  /// whose outputs are known only after it resolves its scenario (run) checks them itself with the same FileRoles.
  virtual void files(FileRoles& roles) const { (void)roles; }
  /// Whether what it prints has metrics (gauges) for `--format openmetrics` / `--save x.prom`; the framework refuses
  /// that format before any work for a command without (exit 2).
  virtual bool has_metrics() const { return false; }
};

struct CommandSpec {
  std::string name;     ///< as typed: `gpubench NAME`
  std::string summary;  ///< one line, for the command list
  std::vector<int> exit_codes;          ///< the codes it can return (0 included), for its --help
  std::string default_format = "console";  ///< what --format is when not given
  std::function<std::unique_ptr<Command>()> make;
};

/// Parses `argv` against `commands`, runs the one named and returns the process's exit code. Parse errors, unknown
/// commands and flags (with the closest match suggested) exit 2; --help and --version exit 0.
int run_cli(const std::vector<CommandSpec>& commands, int argc, char** argv);

/// A check for an unsigned 64-bit option (seeds): decimal digits only, at most 18446744073709551615. CLI11 itself
/// would wrap a larger or negative value into range.
CLI::Validator unsigned_64();

/// A whole-number option read in decimal, leading zeros dropped (CLI11 alone reads `010` as octal 8 and `0x10` as
/// 16). CLI11 runs a transform before every check, wherever it is chained, so a range check sees the decimal text.
CLI::Validator decimal_whole();

/// The closest of `choices` to `word` within a small edit distance, or "" (did-you-mean).
std::string closest_match(const std::string& word, const std::vector<std::string>& choices);

}  // namespace gpubench::cli
