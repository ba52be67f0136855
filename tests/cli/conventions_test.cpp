// The binary's conventions end to end: the scenario resolved once (validate --resolved, run --dry-run, the record),
// `--output -`, one output vocabulary, NO_COLOR, quiet repeats, and model rules refused before anything runs.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli/cli_fixture.h"
#include "gpubench/core/record/record_io.hpp"

namespace gpubench {
namespace {

namespace fs = std::filesystem;

TEST_F(CliTest, ARunsRecordScenarioIsWhatValidateResolvedPrinted) {
  const std::string out = (dir_ / "r.json").string();
  const Result v = gpubench("validate --resolved " + tiny() + " --epochs 1 --output " + out + " --format json");
  ASSERT_EQ(v.exit_code, 0) << v.err;
  const nlohmann::json resolved = nlohmann::json::parse(v.out);
  EXPECT_EQ(resolved["schema"], "gpubench.resolved_scenario");
  // Every key is concrete: the model's own keys, the device's defaults and the recipe's optimizer.
  const nlohmann::json& s = resolved["scenario"];
  EXPECT_EQ(s["device"], "cpu");
  EXPECT_EQ(s["batch_size"], 4);
  EXPECT_EQ(s["image_size"], 32);
  EXPECT_EQ(s["memory_format"], "contiguous");
  EXPECT_EQ(s["optimizer"]["momentum"], 0.9);
  EXPECT_EQ(s["optimizer"]["implementation"], "fused");
  EXPECT_EQ(s["output"], out);
  EXPECT_EQ(resolved["record_paths"], nlohmann::json::array({out}));
  EXPECT_NE(resolved["scenario_sources"]["batch_size"].get<std::string>().find("tiny_resnet.yaml:"), std::string::npos);

  const Result dry = gpubench("run --config " + tiny() + " --epochs 1 --output " + out + " --dry-run --format json");
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_EQ(nlohmann::json::parse(dry.out)["scenario"], s);
  EXPECT_FALSE(fs::exists(out)) << "a dry run trains nothing";

  const Result r = gpubench("run --config " + tiny() + " --epochs 1 --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json record = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(record["scenario"], s);
  EXPECT_EQ(record["scenario_sources"], resolved["scenario_sources"]);
  EXPECT_EQ(record["notes"][0], resolved["notes"][0]);  // the CPU note, as resolution wrote it
}

TEST_F(CliTest, KernelOptionsAreResolvedOnceShownWithTheirOriginAndRecorded) {
  if (!binary_has_cuda_module()) {
    GTEST_SKIP() << "the kernel options steer the CUDA module's kernels: this build refuses kernels: fused (builds_test)";
  }
  // A flag, a documented variable and a default, each shown with where it came from and kept in the record; the
  // fusions' notes name what steered them.
  const std::string out = (dir_ / "fused.json").string();
  const std::string args = "run --config " + tiny() + " --epochs 1 --kernels fused --decode-run off --output " + out;
  const Result dry = gpubench(args + " --dry-run --format json", "GPUBENCH_PREFILL_GRAPH=0");
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  const nlohmann::json resolved = nlohmann::json::parse(dry.out);
  const nlohmann::json& options = resolved["scenario"]["kernel_options"];
  EXPECT_EQ(options["decode_run"], "off");
  EXPECT_EQ(options["prefill_graph"], false);
  EXPECT_EQ(options["decode_stream"], "auto");
  EXPECT_EQ(resolved["scenario_sources"]["kernel_options.decode_run"], "command line --decode-run");
  EXPECT_EQ(resolved["scenario_sources"]["kernel_options.prefill_graph"], "environment GPUBENCH_PREFILL_GRAPH");
  EXPECT_FALSE(resolved["scenario_sources"].contains("kernel_options.decode_stream"));
  const Result r = gpubench(args, "GPUBENCH_PREFILL_GRAPH=0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json record = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(record["scenario"]["kernel_options"], options);
  // A malformed variable is a usage error naming it, before anything runs, and no record.
  const std::string bad = (dir_ / "bad.json").string();
  const Result refused = gpubench("run --config " + tiny() + " --kernels fused --output " + bad,
                                  "GPUBENCH_DECODE_ATTN_CLUSTER=lots");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("GPUBENCH_DECODE_ATTN_CLUSTER='lots'"), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(bad));
  // A plain run's record has no kernel options: it stays as records were.
  const std::string plain = (dir_ / "plain.json").string();
  ASSERT_EQ(gpubench("run --config " + tiny() + " --epochs 1 --output " + plain).exit_code, 0);
  EXPECT_FALSE(nlohmann::json::parse(slurp(plain))["scenario"].contains("kernel_options"));
}

TEST_F(CliTest, TheDefaultRecordPathIsTheOneValidateShows) {
  const std::string cwd = "cd " + dir_.string() + " && ";
  const Result v = gpubench("validate --resolved " + tiny() + " --epochs 1 --format json", cwd);
  ASSERT_EQ(v.exit_code, 0) << v.err;
  const std::string path = nlohmann::json::parse(v.out)["scenario"]["output"];
  EXPECT_EQ(path, "runs/resnet50_cpu_fp32_bs4.json");
  ASSERT_EQ(gpubench("run --config " + tiny() + " --epochs 1 -q", cwd).exit_code, 0);
  EXPECT_TRUE(fs::exists(dir_ / path));
  // Taken now: the next run (and validate) names the next free one.
  const Result again = gpubench("validate --resolved " + tiny() + " --format json", cwd);
  EXPECT_EQ(nlohmann::json::parse(again.out)["scenario"]["output"], "runs/resnet50_cpu_fp32_bs4_2.json");
}

TEST_F(CliTest, OutputDashWritesTheRecordToStandardOutputAndTheSummaryToStandardError) {
  const std::string cwd = "cd " + dir_.string() + " && ";
  const Result r = gpubench("run --config " + tiny() + " --epochs 1 --output -", cwd);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const RunRecord rec = parse_record(r.out, "standard output");
  EXPECT_EQ(rec.status, RunStatus::kOk);
  EXPECT_EQ(rec.scenario.output, "-");
  EXPECT_NE(r.err.find("record: standard output"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("images/s"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "-"));
  EXPECT_FALSE(fs::exists(dir_ / "runs"));
  EXPECT_EQ(gpubench("run --config " + tiny() + " --output - --repeats 2", cwd).exit_code, 2);
}

TEST_F(CliTest, OneOutputVocabularyAndUnknownExtensionsExitTwo) {
  const std::string rec = (dir_ / "r.json").string();
  ASSERT_EQ(gpubench("run --config " + tiny() + " --epochs 1 --out " + rec + " -q").exit_code, 0);  // --out = --output
  EXPECT_TRUE(fs::exists(rec));
  const Result xlsx = gpubench("export " + rec + " --out " + (dir_ / "e.xlsx").string());
  EXPECT_EQ(xlsx.exit_code, 2);
  EXPECT_NE(xlsx.err.find(".csv"), std::string::npos) << xlsx.err;
  EXPECT_FALSE(fs::exists(dir_ / "e.xlsx"));
  EXPECT_EQ(gpubench("export " + rec + " --out " + (dir_ / "e.dat").string() + " --format csv").exit_code, 0);
  for (const std::string& cmd : std::vector<std::string>{"list", "metrics", "info", "validate " + tiny(), "export " + rec, "trace --help"}) {
    const Result r = gpubench(cmd + " --format json");
    ASSERT_EQ(r.exit_code, 0) << cmd << ": " << r.err;
    if (cmd != "trace --help") EXPECT_NO_THROW((void)nlohmann::json::parse(r.out)) << cmd << ": " << r.out.substr(0, 300);
  }
  const Result saved = gpubench("metrics --save " + (dir_ / "m.md").string() + " --save csv:" + (dir_ / "m.txt").string());
  ASSERT_EQ(saved.exit_code, 0) << saved.err;
  EXPECT_NE(slurp(dir_ / "m.md").find("| samples_per_s |"), std::string::npos);
  EXPECT_EQ(slurp(dir_ / "m.txt").rfind("tag,unit,better", 0), 0u);
}

TEST_F(CliTest, ListPublishesEveryModelsKeysWithDefaultsAndRanges) {
  const Result r = gpubench("list --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "gpubench.models");
  std::map<std::string, nlohmann::json> models;
  for (const auto& m : j["models"]) models[m["name"]] = m;
  ASSERT_EQ(models.count("bert-base"), 1u);
  const nlohmann::json& bert = models["bert-base"];
  EXPECT_EQ(bert["default_batch_size"], 32);
  EXPECT_EQ(bert["gpu_defaults"]["seq_len"], 128);
  EXPECT_EQ(bert["gpu_defaults"]["optimizer"]["lr"], 2e-5);
  bool seq_len = false;
  for (const auto& k : bert["keys"]) {
    if (k["key"] != "seq_len") continue;
    seq_len = true;
    EXPECT_EQ(k["max"], 512);
    EXPECT_EQ(k["default"], 128);
  }
  EXPECT_TRUE(seq_len);
  EXPECT_EQ(models["resnet50"]["gpu_defaults"]["memory_format"], "channels_last");
  EXPECT_EQ(models["llama"]["gpu_defaults"]["kv_heads"], 4);
}

TEST_F(CliTest, QuietRepeatsPrintOneTableAndColourFollowsNoColor) {
  const std::string out = (dir_ / "q.json").string();
  const Result q = gpubench("run --config " + tiny() + " --epochs 1 --repeats 3 -q --output " + out);
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(q.out.find("epoch  steps"), std::string::npos) << q.out;  // no per-repeat tables
  EXPECT_NE(q.out.find("repeats: 3"), std::string::npos) << q.out;
  EXPECT_NE(q.out.find("q_r3.json"), std::string::npos) << q.out;
  EXPECT_EQ(q.err.find("[info]"), std::string::npos) << "quiet: nothing but warnings: " << q.err;
  // Under a terminal (script(1) gives one) the log has colour, unless NO_COLOR is set.
  if (std::system("command -v script > /dev/null 2>&1") != 0) GTEST_SKIP() << "script(1) is not installed";
  const std::string bad = "script -qec '" + std::string(GPUBENCH_BINARY) + " run --bach-size 8' /dev/null";
  std::system((bad + " > " + (dir_ / "tty.txt").string() + " 2>&1").c_str());
  std::system(("NO_COLOR=1 " + bad + " > " + (dir_ / "tty_nc.txt").string() + " 2>&1").c_str());
  EXPECT_NE(slurp(dir_ / "tty.txt").find("\033["), std::string::npos) << slurp(dir_ / "tty.txt");
  EXPECT_EQ(slurp(dir_ / "tty_nc.txt").find("\033["), std::string::npos) << slurp(dir_ / "tty_nc.txt");
  EXPECT_NE(slurp(dir_ / "tty_nc.txt").find("did you mean --batch-size"), std::string::npos) << slurp(dir_ / "tty_nc.txt");
}

TEST_F(CliTest, ImpossibleModelShapesAreRefusedBeforeAnythingRunsNamingTheKey) {
  struct Case {
    std::string flags, key;
  };
  for (const Case& c : std::vector<Case>{{"llama --layers 1 --hidden 64 --heads 4 --kv-heads 3", "heads"},
                                         {"llama --layers 1 --hidden 64 --heads 4 --kv-heads 8", "heads"},
                                         {"llama --layers 1 --hidden 60 --heads 4 --kv-heads 2", "hidden"},
                                         {"gpt2 --layers 1 --hidden 64 --heads 3", "hidden"},
                                         {"gpt2 --layers 1 --width 64 --heads 3", "hidden"},  // the alias: its key
                                         {"bert-base --layers 1 --hidden 64 --heads 3", "hidden"},
                                         {"sd-unet --layers 1 --width 64 --heads 3", "width"},
                                         {"gpt2 --data folder --data-path /tmp", "data"}}) {
    for (const std::string cmd : std::vector<std::string>{"run ", "run --dry-run "}) {
      const Result r = gpubench(cmd + c.flags + " --device cpu --output " + (dir_ / "x.json").string());
      EXPECT_EQ(r.exit_code, 2) << c.flags << ": " << r.err;
      EXPECT_NE(r.err.find("key '" + c.key + "'"), std::string::npos) << c.flags << ": " << r.err;
      EXPECT_EQ(r.err.find("building"), std::string::npos) << c.flags << ": nothing was built";
    }
  }
  EXPECT_FALSE(fs::exists(dir_ / "x.json"));
  std::ofstream(dir_ / "bad_heads.yaml") << "model: gpt2\nlayers: 1\nhidden: 64\nheads: 3\n";
  const Result v = gpubench("validate " + (dir_ / "bad_heads.yaml").string());
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_NE(v.err.find("bad_heads.yaml:3:9: key 'hidden'"), std::string::npos) << v.err;
}

}  // namespace
}  // namespace gpubench
