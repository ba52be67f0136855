// Every entry of seeds 000 and 004 names a runnable config under configs/published/recipes/, and that config, loaded
// and resolved as `gpubench run --config` would (the engine's model keys), is the publication's work: comparing a run
// of it with the entry finds no work difference. Only an entry gpubench cannot run (int8) says its config is the
// closest one, and it still reports "not the same work".

#include <gtest/gtest.h>

#include <filesystem>

#include "gpubench/core/analysis/published.hpp"
#include "gpubench/runner/resolve_here.hpp"

namespace gpubench {
namespace {

/// A record of the config's scenario as it would run on the publication's device (a CUDA GPU).
RunRecord run_of(const std::string& config, const PublishedReference& ref) {
  ScenarioInputs in;
  in.config = config;
  const ResolvedScenario rs = resolve_here(in, RankInfo{}, 1, 1, /*check_data=*/false);
  RunRecord r;
  r.scenario = rs.scenario;
  r.precision.resolved = resolved_precision(rs.scenario.precision, "cuda");
  r.environment.device_name = ref.device;
  r.environment.device_type = "cuda";
  r.status = RunStatus::kOk;
  r.summary.samples_per_s = 100;
  r.summary.steps_per_s = 3;
  if (rs.scenario.data == "folder") {
    DataRecord d;
    d.source = "folder";
    d.decode = "cpu";
    d.images = rs.scenario.dataset_size;
    r.data = d;
  }
  return r;
}

TEST(PublishedRecipesTest, EverySeedEntryHasARunnableConfigThatIsThePublicationsWork) {
  int entries = 0;
  for (const auto& ref : published_references()) {
    if (ref.id.rfind("seed000-", 0) != 0 && ref.id.rfind("seed004-", 0) != 0) continue;
    ++entries;
    SCOPED_TRACE(ref.id);
    ASSERT_FALSE(ref.config.empty());
    EXPECT_EQ(ref.recipe_command().rfind("gpubench run --config configs/published/recipes/", 0), 0u)
        << ref.recipe_command();
    const std::filesystem::path file = std::filesystem::path(GPUBENCH_SOURCE_DIR) / ref.config;
    ASSERT_TRUE(std::filesystem::exists(file)) << file;
    const PublishedComparison c = compare_with_published(ref, run_of(file.string(), ref));
    std::string work;
    for (const auto& w : c.work_differences) work += w + "\n";
    if (ref.config_note.empty()) {
      EXPECT_TRUE(c.same_work()) << work;
      ASSERT_TRUE(c.percent_of_published.has_value());
    } else {
      EXPECT_NE(work.find("gpubench has no " + ref.precision + " mode"), std::string::npos) << work;
    }
  }
  EXPECT_GE(entries, 14);
}

TEST(PublishedRecipesTest, AnotherRecipeIsNotTheSameWork) {
  const PublishedReference& ref = *find_published("seed000-rtx4090");
  RunRecord r = run_of(std::string(GPUBENCH_SOURCE_DIR) + "/" + ref.config, ref);
  // The README's main job: fp16 at batch 256 on synthetic data.
  r.scenario.batch_size = 256;
  r.precision.resolved = "fp16";
  r.data.reset();
  r.scenario.data = "synthetic";
  const PublishedComparison c = compare_with_published(ref, r);
  EXPECT_FALSE(c.same_work());
  std::string work;
  for (const auto& w : c.work_differences) work += w + "\n";
  for (const char* expected : {"batch size: 256 here, 128 published", "precision: fp16 here, fp32 published",
                               "data pipeline: one synthetic batch"}) {
    EXPECT_NE(work.find(expected), std::string::npos) << expected << "\n" << work;
  }
  EXPECT_EQ(work.find("device:"), std::string::npos) << work;  // another chip is the point, not another recipe
}

}  // namespace
}  // namespace gpubench
