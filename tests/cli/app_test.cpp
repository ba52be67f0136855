// The command-line framework in process: a command added in one file plus one table line, did-you-mean, typed help,
// per-command exit codes, output formats and extensions. Each call runs in a forked child (the framework prints to
// standard output and standard error), whose exit code and output come back.

#include <gtest/gtest.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/commands/commands.h"
#include "cli/exit_codes.h"
#include "common/temp_dir.h"
#include "gpubench/report/document.hpp"

namespace gpubench::cli {
namespace {

// ---- A command of the test's own: this class and its spec are the "one file" -----------------------------------

class HelloCommand final : public Command {
 public:
  void declare(CLI::App& cmd) override {
    cmd.add_option("NAME", name_, "Who to greet")->type_name("TEXT");
    cmd.add_option("--times", times_, "How often")->type_name("INT");
  }
  int run(Context& ctx) override {
    if (times_ < 1) throw UsageError("--times must be at least 1");
    Document d;
    d.kind = "hello";
    d.title = "hello";
    Table t;
    t.id = "greetings";
    t.add_column(Column::text("greeting", "greeting"));
    for (int i = 0; i < times_; ++i) t.rows.push_back({Cell::str("hello, " + name_)});
    d.table(std::move(t));
    d.data = {{"schema", "test.hello"}, {"name", name_}, {"times", times_}};
    ctx.print(d);
    return kExitOk;
  }

 private:
  std::string name_ = "world";
  int times_ = 1;
};

CommandSpec hello_command() {
  return {"hello", "Greet someone (a test command)", {kExitOk, kExitUsage}, "console",
          [] { return std::make_unique<HelloCommand>(); }};
}

// ---- Running the framework ------------------------------------------------------------------------------------

struct Outcome {
  int exit_code = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class AppTest : public ::testing::Test {
 protected:
  /// `args` (space-separated) through run_cli with `commands`, in a child process.
  Outcome cli(const std::vector<CommandSpec>& commands, const std::vector<std::string>& args) {
    const std::string out = (dir_.path() / "out").string(), err = (dir_.path() / "err").string();
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      std::freopen(out.c_str(), "w", stdout);
      std::freopen(err.c_str(), "w", stderr);
      spdlog::set_default_logger(spdlog::stderr_color_mt("test", spdlog::color_mode::never));
      spdlog::set_pattern("[%l] %v");
      std::vector<std::string> argv_s{"gpubench"};
      argv_s.insert(argv_s.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : argv_s) argv.push_back(a.data());
      const int rc = run_cli(commands, static_cast<int>(argv.size()), argv.data());
      std::fflush(nullptr);
      ::_exit(rc);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return Outcome{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
  }

  // The registration: the commands a binary offers, one line each. Adding `hello` is this one line.
  const std::vector<CommandSpec> table_{
      run_command(),
      compare_command(),
      list_command(),
      hello_command(),
  };
  testing::TempDir dir_{"app"};
};

TEST_F(AppTest, ACommandAddedInOneFileAndOneLineShowsInHelpAndPrintsEveryFormat) {
  const Outcome help = cli(table_, {"--help"});
  ASSERT_EQ(help.exit_code, 0) << help.err;
  EXPECT_NE(help.out.find("hello"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("Greet someone"), std::string::npos) << help.out;

  const Outcome own = cli(table_, {"hello", "--help"});
  ASSERT_EQ(own.exit_code, 0);
  EXPECT_NE(own.out.find("--times INT"), std::string::npos) << own.out;
  EXPECT_NE(own.out.find("--format"), std::string::npos) << own.out;  // the framework's, on every command
  EXPECT_NE(own.out.find("--save"), std::string::npos) << own.out;
  EXPECT_NE(own.out.find("  0  ok"), std::string::npos) << own.out;
  EXPECT_NE(own.out.find("  2  usage"), std::string::npos) << own.out;
  EXPECT_EQ(own.out.find("  3  a regression"), std::string::npos) << own.out;  // only the codes it can return

  const Outcome json = cli(table_, {"hello", "Ada", "--times", "2", "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["schema"], "test.hello");
  EXPECT_EQ(j["name"], "Ada");

  const std::string csv = (dir_.path() / "g.csv").string();
  const Outcome saved = cli(table_, {"hello", "Ada", "--save", csv, "--format", "md"});
  ASSERT_EQ(saved.exit_code, 0) << saved.err;
  EXPECT_NE(saved.out.find("| hello, Ada |"), std::string::npos) << saved.out;
  EXPECT_EQ(slurp(csv), "greeting\n\"hello, Ada\"\n");

  const Outcome bad = cli(table_, {"hello", "--times", "0"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--times must be at least 1"), std::string::npos) << bad.err;
}

TEST_F(AppTest, MisspeltCommandsAndFlagsGetTheClosestSuggested) {
  const Outcome cmd = cli(table_, {"helo"});
  EXPECT_EQ(cmd.exit_code, 2);
  EXPECT_NE(cmd.err.find("unknown command 'helo' (did you mean 'hello'?)"), std::string::npos) << cmd.err;
  const Outcome rn = cli(table_, {"rn", "resnet50"});
  EXPECT_EQ(rn.exit_code, 2);
  EXPECT_NE(rn.err.find("did you mean 'run'?"), std::string::npos) << rn.err;
  const Outcome flag = cli(table_, {"run", "--bach-size", "8"});
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_NE(flag.err.find("unknown flag --bach-size (did you mean --batch-size?)"), std::string::npos) << flag.err;
  const Outcome glued = cli(table_, {"hello", "--tims=3"});
  EXPECT_EQ(glued.exit_code, 2);
  EXPECT_NE(glued.err.find("did you mean --times?"), std::string::npos) << glued.err;
  const Outcome far = cli(table_, {"hello", "--zzzzzzzz"});
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_NE(far.err.find("unknown flag --zzzzzzzz"), std::string::npos) << far.err;
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;  // nothing close: no guess
  const Outcome stray = cli(table_, {"list", "extra"});
  EXPECT_EQ(stray.exit_code, 2);
  EXPECT_NE(stray.err.find("unexpected argument 'extra'"), std::string::npos) << stray.err;
}

TEST_F(AppTest, HelpIsTypedAndListsEachCommandsOwnExitCodes) {
  const Outcome run = cli(table_, {"run", "--help"});
  ASSERT_EQ(run.exit_code, 0);
  for (const char* typed : {"--batch-size INT", "--epochs INT", "--time-budget DURATION", "--lr NUMBER",
                            "--precision fp32|tf32|bf16|fp16|amp", "--mode train|inference", "--cuda-graph BOOL",
                            "--repeats INT", "--config FILE", "--output,--out FILE", "--attention sdpa|math"}) {
    EXPECT_NE(run.out.find(typed), std::string::npos) << typed;
  }
  for (const char* untyped : {"--batch-size TEXT", "--epochs TEXT", "--seed TEXT", "--profile TEXT"}) {
    EXPECT_EQ(run.out.find(untyped), std::string::npos) << untyped;
  }
  EXPECT_NE(run.out.find("  4  the work finished"), std::string::npos);
  EXPECT_EQ(run.out.find("  3  a regression"), std::string::npos) << "run never reports a regression";
  const Outcome compare = cli(table_, {"compare", "--help"});
  EXPECT_NE(compare.out.find("  3  a regression"), std::string::npos) << compare.out;
  EXPECT_NE(compare.out.find("  1  a run failed"), std::string::npos) << "a failed candidate run is exit 1";
  const Outcome list = cli(table_, {"list", "--help"});
  EXPECT_EQ(list.out.find("  1  a run failed"), std::string::npos) << list.out;
  EXPECT_EQ(list.out.find("  3  a regression"), std::string::npos) << list.out;
  // -q, -v and --log-level work on every command, before or after its name.
  EXPECT_EQ(cli(table_, {"-q", "hello"}).exit_code, 0);
  EXPECT_EQ(cli(table_, {"hello", "-q"}).exit_code, 0);
  EXPECT_EQ(cli(table_, {"hello", "--log-level", "debug"}).exit_code, 0);
  EXPECT_EQ(cli(table_, {"hello", "--log-level", "loud"}).exit_code, 2);
}

TEST_F(AppTest, UnknownFormatsAndExtensionsAreRefusedNamingTheKnownOnes) {
  const std::string xlsx = (dir_.path() / "g.xlsx").string();
  const Outcome ext = cli(table_, {"hello", "--save", xlsx});
  EXPECT_EQ(ext.exit_code, 2);
  EXPECT_NE(ext.err.find("'.xlsx' is not a format gpubench writes"), std::string::npos) << ext.err;
  EXPECT_NE(ext.err.find(".md .html .csv"), std::string::npos) << ext.err;
  EXPECT_FALSE(std::filesystem::exists(xlsx));
  const Outcome none = cli(table_, {"hello", "--save", (dir_.path() / "plain").string()});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("no extension"), std::string::npos) << none.err;
  const Outcome prefixed = cli(table_, {"hello", "--save", "csv:" + xlsx});  // FORMAT:FILE says it
  EXPECT_EQ(prefixed.exit_code, 0) << prefixed.err;
  EXPECT_EQ(slurp(xlsx), "greeting\n\"hello, world\"\n");
  const Outcome format = cli(table_, {"hello", "--format", "yaml"});
  EXPECT_EQ(format.exit_code, 2);
  EXPECT_NE(format.err.find("console, md, html, csv, jsonl, json, junit"), std::string::npos) << format.err;
  const Outcome empty = cli(table_, {"hello", "--save", ""});
  EXPECT_EQ(empty.exit_code, 2);
}

TEST_F(AppTest, TypedErrorsMapToTheirExitCodes) {
  EXPECT_EQ(exit_code_for(UsageError("x")), kExitUsage);
  EXPECT_EQ(exit_code_for(RunFailedError("x")), kExitRunFailed);
  EXPECT_EQ(exit_code_for(OutputNotWritten("x")), kExitOutputNotWritten);
  EXPECT_EQ(exit_code_for(std::runtime_error("a library's")), kExitUsage);
  // docs/cli.md has the one table, code for code.
  const std::string doc = slurp(std::string(GPUBENCH_SOURCE_DIR) + "/docs/cli.md");
  for (const auto& e : exit_code_table()) {
    EXPECT_NE(doc.find("| " + std::to_string(e.code) + " | " + e.meaning + " |"), std::string::npos)
        << "docs/cli.md lacks exit code " << e.code << ": " << e.meaning;
  }
}

}  // namespace
}  // namespace gpubench::cli
