// Nothing a user types destroys their data (docs/hostile-input.md): outputs never replace inputs or the store, empty
// output names never fall back to a default place, impossible requests (model shapes, memory, a GPU decoder on the
// CPU, projections from the wrong records) exit 2 before anything runs.

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "cli/cli_fixture.h"

namespace gpubench {
namespace {

const std::string kRecords = std::string(GPUBENCH_FIXTURES) + "/records/arch-check/";
const std::string kScaling =
    std::string(GPUBENCH_FIXTURES) + "/records/ddp-scaling/";

class DataSafetyTest : public CliTest {
 protected:
  void SetUp() override {
    fs::copy_file(kRecords + "gpubench_amp_bs256_r1.json", dir_ / "a.json");
    fs::copy_file(kRecords + "gpubench_amp_bs256_r2.json", dir_ / "b.json");
    std::ofstream(dir_ / "t.json") << R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "sgemm", "ts": 10, "dur": 5},
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 20}]})";
    ASSERT_EQ(gpubench("db add " + p("s.db") + " " + p("a.json")).exit_code, 0);
  }
  std::string p(const std::string& name) const { return (dir_ / name).string(); }
  /// The exit code, and that `kept` files are byte for byte what they were.
  int unchanged_after(const std::string& args, const std::vector<std::string>& kept, std::string* err = nullptr) {
    std::vector<std::string> before;
    for (const auto& k : kept) before.push_back(slurp(dir_ / k));
    const Result r = gpubench(args);
    if (err != nullptr) *err = r.err;
    for (size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(slurp(dir_ / kept[i]), before[i]) << kept[i] << " after " << args;
    return r.exit_code;
  }
};

TEST_F(DataSafetyTest, AnOutputThatNamesAnInputOrTheStoreIsRefusedAndTheInputKept) {
  std::string err;
  EXPECT_EQ(unchanged_after("export " + p("a.json") + " --out " + p("a.json"), {"a.json"}, &err), 2);
  EXPECT_NE(err.find("never writes over"), std::string::npos) << err;
  EXPECT_EQ(unchanged_after("compare " + p("a.json") + " " + p("b.json") + " --json " + p("b.json"), {"b.json"}), 2);
  EXPECT_EQ(unchanged_after("compare " + p("a.json") + " " + p("b.json") + " --save md:" + p("a.json"), {"a.json"}), 2);
  EXPECT_EQ(unchanged_after("trace " + p("t.json") + " --save json:" + p("t.json"), {"t.json"}), 2);
  EXPECT_EQ(unchanged_after("history " + p("s.db") + " --save csv:" + p("s.db"), {"s.db"}), 2);
  EXPECT_EQ(unchanged_after("compare db:" + p("s.db") + ":last-3 " + p("b.json") + " --junit " + p("s.db"), {"s.db"}), 2);
  EXPECT_EQ(unchanged_after("export " + kRecords + " --out " + kRecords + "gpubench_amp_bs256_r1.json", {}), 2)
      << "a record inside a folder given as input";
  // Through a symbolic link and a hard link.
  ASSERT_EQ(::symlink(p("a.json").c_str(), p("link.json").c_str()), 0);
  ASSERT_EQ(::link(p("b.json").c_str(), p("hard.json").c_str()), 0);
  EXPECT_EQ(unchanged_after("export " + p("a.json") + " --out " + p("link.json"), {"a.json"}), 2);
  EXPECT_EQ(unchanged_after("export " + p("b.json") + " --out " + p("hard.json"), {"b.json"}), 2);
  // run: its record over the store it adds to, checked before anything trains.
  EXPECT_EQ(unchanged_after("run --config " + tiny() + " --output " + p("s.db") + " --db " + p("s.db"), {"s.db"}, &err), 2);
  EXPECT_NE(err.find("the results store"), std::string::npos) << err;
  fs::copy_file(tiny(), dir_ / "s.yaml");
  EXPECT_EQ(unchanged_after("run --config " + p("s.yaml") + " --output " + p("s.yaml"), {"s.yaml"}), 2);
  EXPECT_EQ(gpubench("run --config " + tiny() + " --output " + p("r.json") + " --telemetry-trace " + p("r.json")).exit_code, 2)
      << "two outputs, one file";
  const Result h = gpubench("history " + p("s.db"));
  EXPECT_EQ(h.exit_code, 0) << "the store still reads: " << h.err;
  // Different files pass.
  EXPECT_EQ(gpubench("export " + p("a.json") + " --out " + p("e.csv")).exit_code, 0);
}

TEST_F(DataSafetyTest, DbAddStreamsRecordsBoundsTheirSizeAndNeverMakesAStoreFromBadInput) {
  {
    std::ofstream big(dir_ / "big.json");
    big << "{\"schema_version\": 2, \"pad\": \"" << std::string((size_t{33} << 20), 'x') << "\"}";
  }
  std::ofstream(dir_ / "bad.json") << "{\"not\": \"a record\"}";
  Result r = gpubench("db add " + p("new.db") + " " + p("bad.json"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(fs::exists(dir_ / "new.db")) << "a store is made only for a record";
  fs::create_directories(dir_ / "folder");
  fs::copy_file(dir_ / "big.json", dir_ / "folder" / "big.json");
  fs::copy_file(dir_ / "a.json", dir_ / "folder" / "a.json");
  fs::copy_file(dir_ / "b.json", dir_ / "folder" / "b.json");
  r = gpubench("db add " + p("new.db") + " " + p("folder") + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["added"], 2);
  EXPECT_EQ(j["skipped"], 1);
  EXPECT_NE(r.err.find("at most 32 MiB"), std::string::npos) << r.err;
}

TEST_F(DataSafetyTest, EmptyOutputNamesAreUsageErrorsNeverADefaultPlace) {
  for (const std::string& args : std::vector<std::string>{"export " + p("a.json") + " --out ''", "compare " + p("a.json") + " " + p("b.json") + " --json ''",
                                 "compare " + p("a.json") + " " + p("b.json") + " --markdown ''",
                                 "report " + p("a.json") + " --out ''", "dataset make --out ''",
                                 "run --config " + tiny() + " --output ''", "run --config " + tiny() + " --telemetry-trace ''",
                                 "scaling --project '' " + kScaling + "resnet50_gpus1.json"}) {
    const Result r = gpubench(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
  }
  EXPECT_FALSE(fs::exists(dir_ / "runs")) << "no run started";
  // A device is not a store, and reading one leaves nothing beside it.
  EXPECT_EQ(gpubench("history /dev/zero").exit_code, 2);
  EXPECT_FALSE(fs::exists("/dev/zero-journal"));
  EXPECT_FALSE(fs::exists("/dev/zero-wal"));
}

TEST_F(DataSafetyTest, ProjectionsRefuseCpuRecordsOtherGpusAndUnphysicalLinks) {
  nlohmann::json one = nlohmann::json::parse(slurp(kScaling + "resnet50_gpus1.json"));
  nlohmann::json two = nlohmann::json::parse(slurp(kScaling + "resnet50_gpus2.json"));
  auto save = [this](const std::string& name, const nlohmann::json& j) { std::ofstream(dir_ / name) << j.dump(); };
  nlohmann::json cpu = one;
  cpu["environment"]["device_type"] = "cpu";
  save("cpu.json", cpu);
  Result r = gpubench("scaling --project 8 " + p("cpu.json"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not a GPU"), std::string::npos) << r.err;
  nlohmann::json a100 = two;
  a100["environment"]["device_name"] = "NVIDIA A100-SXM4-80GB";
  save("a100.json", a100);
  r = gpubench("scaling --project 8 --calibrate " + kScaling + "resnet50_gpus1.json " + p("a100.json"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot calibrate"), std::string::npos) << r.err;
  for (const std::string flag : {"--intra-bandwidth 1e-310", "--inter-latency -5", "--inter-bandwidth 1e300",
                                 "--gpus-per-node 100000"}) {
    EXPECT_EQ(gpubench("scaling --project 8 " + flag + " " + kScaling + "resnet50_gpus1.json").exit_code, 2) << flag;
  }
  // A 2-GPU step faster than the model's: no negative residual, no efficiency above 100 %.
  nlohmann::json fast = two;
  fast["summary"]["step_time"]["median_ms"] = 1.0;
  save("fast.json", fast);
  r = gpubench("scaling --project 2,8,64 --calibrate " + kScaling + "resnet50_gpus1.json " + p("fast.json") +
               " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  for (const auto& pt : j["points"]) EXPECT_LE(pt["efficiency"].get<double>(), 1.0) << pt.dump();
  EXPECT_NE(j["assumptions"].dump().find("not calibrated"), std::string::npos) << j["assumptions"].dump();
}

TEST_F(DataSafetyTest, ImpossibleRequestsExitTwoBeforeAnythingIsBuilt) {
  struct Case {
    std::string args, key;
  };
  ASSERT_EQ(gpubench("dataset make --out " + p("ds") + " --images 8 --classes 2 --threads 1 -q").exit_code, 0);
  const std::vector<Case> cases{
      {"llama --heads 4 --kv-heads 3", "kv_heads"},
      {"llama --heads 4 --kv-heads 8", "kv_heads"},
      {"llama --hidden 36 --heads 4", "hidden"},
      {"gpt2 --width 64 --heads 3", "hidden"},
      {"bert-base --hidden 64 --heads 3", "hidden"},
      {"sd-unet --width 64 --heads 3", "width"},
      {"gpt2 --data folder --data-path " + p("ds"), "data"},
      {"resnet50 --num-classes 2 --image-size 32 --data folder --data-path " + p("ds") + " --decode gpu --batch-size 2",
       "decode"},
      {"llama --batch-size 4096", "batch_size"},  // terabytes of activations: more than any host has
  };
  std::ofstream(dir_ / "base.yaml") << "epochs: 1\n";
  for (const auto& c : cases) {
    for (const std::string cmd : {"validate", "run --device cpu --dry-run ", "run --device cpu "}) {
      if (cmd == "validate" && c.key == "batch_size") continue;  // a file's validity does not depend on this host
      const std::string args =
          cmd == "validate" ? "validate " + p("base.yaml") + " --device cpu --model " + c.args : cmd + c.args;
      const Result r = gpubench(args + " --output " + p("never.json"));
      EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
      EXPECT_NE((r.err + r.out).find(c.key), std::string::npos) << args << "\n" << r.err << r.out;
    }
  }
  EXPECT_FALSE(fs::exists(dir_ / "never.json"));
  // validate checks the file, not this host: too big for it is a note.
  const Result v = gpubench("validate " + p("base.yaml") + " --device cpu --model llama --batch-size 4096 --format json");
  EXPECT_EQ(v.exit_code, 0) << v.err;
  const Result resolved = gpubench("validate " + p("base.yaml") + " --resolved --device cpu --model llama --batch-size 4096");
  EXPECT_NE(resolved.out.find("a run here is refused"), std::string::npos) << resolved.out;
  // The estimate is in the resolved scenario, and memory_check: warn lets a user run anyway.
  const Result w = gpubench("run llama --device cpu --batch-size 4096 --memory-check warn --dry-run --format json");
  ASSERT_EQ(w.exit_code, 0) << w.err;
  const nlohmann::json j = nlohmann::json::parse(w.out);
  const nlohmann::json& m = j.contains("resolved") ? j["resolved"]["memory_estimate"] : j["memory_estimate"];
  EXPECT_EQ(m["parameters"], 1100048384);
  EXPECT_GT(m["total_bytes"].get<double>(), m["available_bytes"].get<double>());
  EXPECT_NE(w.out.find("Memory: llama at batch size 4096"), std::string::npos);
}

}  // namespace
}  // namespace gpubench
