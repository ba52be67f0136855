// `gpubench report`: Markdown and HTML with charts, from a copied binary too.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <utility>
#include <vector>

#include "cli/cli_fixture.h"
#include "gpubench/core/record/record_io.hpp"

namespace gpubench {
namespace {

TEST_F(CliTest, ACopiedBinaryDrawsTheChartsAndFindsTelemetryBesideACommittedRecord) {
  // The binary alone, away from the build and source trees (its chart script is compiled in); the committed record's
  // trace_path is the H200 machine's absolute path, the CSV lies beside it.
  fs::create_directories(dir_ / "prefix" / "bin");
  fs::copy_file(GPUBENCH_BINARY, dir_ / "prefix" / "bin" / "gpubench");
  const std::string record =
      std::string(GPUBENCH_FIXTURES) + "/records/telemetry/telemetry_on_r1.json";
  const std::string copied = (dir_ / "prefix" / "bin" / "gpubench").string();
  const auto run_copy = [&](const std::string& args, const std::string& env) {
    const std::string cmd = env + " " + copied + " " + args + " > " + (dir_ / "out").string() + " 2> " +
                            (dir_ / "err").string();
    const int status = std::system(cmd.c_str());
    return Result{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir_ / "out"), slurp(dir_ / "err")};
  };
  const Result r = run_copy("report " + record + " --out " + (dir_ / "rep").string() + " --format json", "");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_NE(j["charts"].dump().find("telemetry.png"), std::string::npos) << r.out << r.err;
  // A script named by GPUBENCH_PLOT_SCRIPT that is not there: the report says which.
  const Result none = run_copy("report " + record + " --out " + (dir_ / "rep2").string(),
                               "GPUBENCH_PLOT_SCRIPT=" + (dir_ / "nowhere.py").string());
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_NE((none.out + none.err).find("nowhere.py"), std::string::npos) << none.out << none.err;
}

TEST_F(CliTest, ReportWritesMarkdownAndSelfContainedHtmlWithCharts) {
  const fs::path runs = dir_ / "runs";
  ASSERT_EQ(gpubench("run --config " + tiny() + " --epochs 2 --output " + (runs / "a.json").string()).exit_code, 0);
  const fs::path out = dir_ / "report";
  const Result r = gpubench("report " + runs.string() + " --out " + out.string() + " --title 'Tiny report'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string md = slurp(out / "report.md");
  EXPECT_NE(md.find("# Tiny report"), std::string::npos);
  EXPECT_NE(md.find("| resnet50 (image_size=32, num_classes=10) bs4 fp32 train eager | a.json | ok |"), std::string::npos) << md;
  EXPECT_NE(md.find("## Headline"), std::string::npos) << md;
  EXPECT_NE(md.find("](throughput.png)"), std::string::npos) << md << r.err;
  EXPECT_TRUE(fs::exists(out / "charts.json"));
  EXPECT_TRUE(fs::exists(out / "throughput.png"));
  const std::string html = slurp(out / "report.html");
  EXPECT_NE(html.find("data:image/png;base64,iVBOR"), std::string::npos);  // the PNG itself, embedded
  EXPECT_EQ(gpubench("report " + (dir_ / "nothing").string()).exit_code, 2);
}

}  // namespace
}  // namespace gpubench
