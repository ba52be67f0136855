// `gpubench dataset make` and `run --data folder` end to end: a generated folder trains, and folders that cannot
// feed a run are refused with exit 2 before anything runs, naming the key and the problem.

#include <nlohmann/json.hpp>

#include "cli/cli_fixture.h"

namespace gpubench {
namespace {

class DataCliTest : public CliTest {
 protected:
  /// `gpubench dataset make` into dir_/name.
  std::string make(const std::string& name, int images, int classes = 3) {
    const std::string out = (dir_ / name).string();
    const Result r = gpubench("dataset make --images " + std::to_string(images) + " --classes " +
                              std::to_string(classes) + " --threads 2 --out " + out);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return out;
  }
};

TEST_F(DataCliTest, DatasetMakeThenAFolderRunTrainsAndRecordsThePipeline) {
  const std::string ds = make("set", 24);
  const Result again = gpubench("dataset make --images 4 --classes 2 --out " + ds);
  EXPECT_EQ(again.exit_code, 2);  // never writes into a folder that has files
  EXPECT_NE(again.err.find("not an empty folder"), std::string::npos) << again.err;
  const std::string out = (dir_ / "runs" / "folder.json").string();
  const Result r = gpubench("run --config " + tiny() + " --data folder --data-path " + ds +
                            " --data-workers 2 --dataset-size 24 --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["scenario"]["data"], "folder");
  EXPECT_EQ(j["data"]["images"], 24);
  EXPECT_EQ(j["data"]["decode"], "cpu");
  EXPECT_EQ(j["epochs"][0]["samples"], 24);
  bool wait = false;
  for (const auto& m : j["epochs"][0]["metrics"]) wait = wait || m["tag"] == "input_wait_fraction";
  EXPECT_TRUE(wait);
  EXPECT_NE(r.out.find("input wait"), std::string::npos) << r.out;  // the epoch table shows it
}

TEST_F(DataCliTest, TwoRanksEachTrainOnTheirShardOfTheFolder) {
  const std::string ds = make("set", 48);
  const std::string out = (dir_ / "runs" / "ddp.json").string();
  const Result r = gpubench("run --config " + tiny() + " --data folder --data-path " + ds +
                            " --data-workers 1 --dataset-size 48 --epochs 1 --nproc-per-node 2 --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(j["distributed"]["world_size"], 2);
  EXPECT_EQ(j["epochs"][0]["steps"], 6);     // 48 images / (2 ranks x batch 4)
  EXPECT_EQ(j["epochs"][0]["samples"], 48);  // one pass over the folder between them
  EXPECT_EQ(j["data"]["images"], 48);
}

TEST_F(DataCliTest, FoldersThatCannotFeedARunExitTwoBeforeAnythingRuns) {
  const std::string small = make("small", 6);
  fs::create_directories(dir_ / "noimages" / "cls");
  { std::ofstream(dir_ / "noimages" / "cls" / "a.png") << "x"; }
  fs::create_directories(dir_ / "corrupt" / "cls");
  for (int i = 0; i < 4; ++i) std::ofstream(dir_ / "corrupt" / "cls" / ("f" + std::to_string(i) + ".jpg")) << "nope";
  const std::string out = (dir_ / "runs" / "never.json").string();
  struct Case {
    std::string args, expect;
  };
  const std::vector<Case> cases = {
      {"--data folder --data-path " + (dir_ / "missing").string(), "does not exist"},
      {"--data folder --data-path " + (dir_ / "noimages").string(), "has no JPEG files"},
      {"--data folder --data-path " + (dir_ / "corrupt").string(), "is a readable JPEG"},
      {"--data folder --data-path " + small + " --batch-size 8 --grad-accumulation 1", "fewer than one batch"},
      {"--data folder --data-path " + small + " --dataset-size 100", "exceeds the 6 images"},
      {"--data folder", "needs data_path"},
      {"--data-path " + small, "applies to data: folder"},
      {"--data folder --data-path " + small + " --decode tpu", "decode"},
  };
  // tiny's scenario without its dataset_size: an epoch is then the whole folder.
  std::ifstream in(tiny());
  std::ofstream cfg(dir_ / "tiny_folder.yaml");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("dataset_size", 0) != 0) cfg << line << "\n";
  }
  cfg.close();
  for (const auto& c : cases) {
    const Result r = gpubench("run --config " + (dir_ / "tiny_folder.yaml").string() + " " + c.args + " --output " + out);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_FALSE(fs::exists(out)) << c.args;
  }
}

}  // namespace
}  // namespace gpubench
