// Runs grouped by scenario identity: what the report shows one row and one bar for.

#include "gpubench/core/analysis/scenario_groups.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "gpubench/core/analysis/identity.hpp"

namespace gpubench {
namespace {

RunRecord run(const std::string& model, int64_t batch, double rate, const std::string& mode = "train") {
  RunRecord r;
  r.scenario.model = model;
  r.scenario.batch_size = batch;
  r.scenario.precision = "bf16";
  r.scenario.mode = mode;
  r.precision.resolved = "bf16";
  r.model.sample_unit = model == "resnet50" ? "images" : "sequences";
  r.environment.device_name = "NVIDIA H200";
  r.environment.device_type = "cuda";
  r.execution.mode = "eager";
  r.summary.samples_per_s = rate;
  r.summary.steps = rate > 0 ? 100 : 0;
  if (rate <= 0) r.status = RunStatus::kOom;
  return r;
}

std::vector<const RunRecord*> pointers(const std::vector<RunRecord>& v) {
  std::vector<const RunRecord*> out;
  for (const auto& r : v) out.push_back(&r);
  return out;
}

/// The digest behind identity ids (and generate's token digests) is FNV-1a 64, by its published test vectors.
TEST(ScenarioGroupsTest, IdsAreFnv1aDigests) {
  EXPECT_EQ(fnv1a_hex(""), "cbf29ce484222325");
  EXPECT_EQ(fnv1a_hex("a"), "af63dc4c8601ec8c");
  EXPECT_EQ(identity_id(nlohmann::json{{"model", "gpt2"}}), fnv1a_hex(R"({"model":"gpt2"})"));
}

TEST(ScenarioGroupsTest, SpreadHasAStudentTIntervalFromTwoRunsOn) {
  const RunSpread one = spread_of({4300});
  EXPECT_EQ(one.n, 1);
  EXPECT_DOUBLE_EQ(one.mean, 4300);
  EXPECT_FALSE(one.half_width_95.has_value());
  EXPECT_FALSE(one.cv_pct.has_value());
  const RunSpread three = spread_of({4800, 4850, 4900});
  EXPECT_DOUBLE_EQ(three.mean, 4850);
  ASSERT_TRUE(three.half_width_95.has_value());
  EXPECT_NEAR(*three.half_width_95, 4.3027 * 50 / std::sqrt(3.0), 0.01);  // t(0.975, 2 df) = 4.3027
  EXPECT_NEAR(*three.cv_pct, 50.0 / 4850 * 100, 1e-9);
  EXPECT_DOUBLE_EQ(three.min, 4800);
  EXPECT_DOUBLE_EQ(three.max, 4900);
  EXPECT_EQ(spread_of({}).n, 0);
}

TEST(ScenarioGroupsTest, RepeatsShareAGroupAndModesUnitsAndGpuCountsDoNot) {
  std::vector<RunRecord> runs{run("gpt2", 8, 198), run("resnet50", 256, 4800), run("gpt2", 1, 494, "inference"),
                              run("resnet50", 256, 4900), run("resnet50", 256, 0)};
  runs.push_back(run("resnet50", 256, 11886));
  runs.back().distributed = DistributedRecord{};
  runs.back().distributed->world_size = 2;
  const auto groups = group_by_scenario(pointers(runs));
  ASSERT_EQ(groups.size(), 4u);
  // Training first, then by unit, model and batch; inference last.
  EXPECT_EQ(groups[0].label, "resnet50 bs256 bf16 train eager, NVIDIA H200");
  EXPECT_EQ(groups[0].runs, (std::vector<size_t>{1, 3, 4}));  // the OOM run is a run of the scenario...
  EXPECT_EQ(groups[0].ok_runs, (std::vector<size_t>{1, 3}));  // ...with no throughput
  EXPECT_EQ(groups[0].throughput.n, 2);
  EXPECT_DOUBLE_EQ(groups[0].throughput.mean, 4850);
  EXPECT_EQ(groups[0].bounded_by, "capacity");  // 1 of 3 runs has a verdict: the OOM's
  EXPECT_EQ(groups[1].label, "resnet50 bs256 bf16 train eager, 2 GPUs, NVIDIA H200");
  EXPECT_EQ(groups[2].unit, "sequences/s");
  EXPECT_EQ(groups[2].mode, "train");
  EXPECT_EQ(groups[3].mode, "inference");
  EXPECT_EQ(groups[3].id, identity_id(scenario_identity(runs[2])));
}

TEST(ScenarioGroupsTest, LabelsThatCollideGetTheKeysInWhichTheirIdentitiesDiffer) {
  std::vector<RunRecord> runs{run("resnet50", 256, 6100), run("resnet50", 256, 6200), run("resnet50", 256, 6150)};
  runs[1].scenario.dataset_size = 25600;
  runs[2].scenario.dataset_size = 25600;
  runs[2].scenario.warmup_steps = 3;
  const auto groups = group_by_scenario(pointers(runs));
  ASSERT_EQ(groups.size(), 3u);
  std::vector<std::string> labels;
  for (const auto& g : groups) labels.push_back(g.label);
  const std::string base = "resnet50 bs256 bf16 train eager, NVIDIA H200 [";
  for (const auto& l : labels) {
    EXPECT_EQ(l.rfind(base, 0), 0u) << l;
    EXPECT_NE(l.find("dataset_size="), std::string::npos) << l;
    EXPECT_NE(l.find("warmup_steps="), std::string::npos) << l;
  }
  std::sort(labels.begin(), labels.end());
  EXPECT_EQ(std::unique(labels.begin(), labels.end()), labels.end()) << "every label distinct";
  // Equal identities keep equal labels; a label no other shares stays as it is.
  const auto same = distinct_labels({nlohmann::json{{"a", 1}}, nlohmann::json{{"a", 1}}, nlohmann::json{{"a", 2}}},
                                    {"x", "x", "y"});
  EXPECT_EQ(same, (std::vector<std::string>{"x", "x", "y"}));
  const auto nested = distinct_labels({nlohmann::json{{"optimizer", {{"lr", 0.1}}}},
                                       nlohmann::json{{"optimizer", {{"lr", 0.2}}}}},
                                      {"x", "x"});
  EXPECT_EQ(nested, (std::vector<std::string>{"x [optimizer.lr=0.1]", "x [optimizer.lr=0.2]"}));
}

}  // namespace
}  // namespace gpubench
