// kernel_options (core/scenario/kernel_options.cpp): one table read by the loader, the resolver, the record and the
// docs; the old variables read as the keys are; defaults are no scenario of their own.

#include "gpubench/core/scenario/kernel_options.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "common/temp_dir.h"
#include "gpubench/core/analysis/identity.hpp"
#include "gpubench/core/record/run_record.hpp"
#include "gpubench/core/scenario/scenario_loader.hpp"

namespace gpubench {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(KernelOptionsTest, EveryOptionIsAScenarioKeyWithAFlagAndAVariable) {
  std::set<std::string> keys, flags;
  for (const auto& k : all_scenario_keys({})) {
    keys.insert(k.key);
    flags.insert(k.flag);
  }
  std::set<std::string> envs;
  for (const auto& o : kernel_option_table()) {
    EXPECT_TRUE(keys.count("kernel_options." + o.name)) << o.name;
    std::string flag = "--" + o.name;
    std::replace(flag.begin(), flag.end(), '_', '-');
    EXPECT_TRUE(flags.count(flag)) << flag;
    EXPECT_EQ(o.env.rfind("GPUBENCH_", 0), 0u) << o.name;
    EXPECT_TRUE(envs.insert(o.env).second) << "two options read " << o.env;
    EXPECT_FALSE(o.help.empty()) << o.name;
    EXPECT_EQ(find_kernel_option(o.name), &o);
  }
  EXPECT_EQ(find_kernel_option("decode_warp_speed"), nullptr);
}

TEST(KernelOptionsTest, TheDocsPageListsEveryOptionWithItsVariable) {
  const std::string page = slurp(fs::path(GPUBENCH_SOURCE_DIR) / "docs" / "kernel-options.md");
  ASSERT_FALSE(page.empty());
  for (const auto& o : kernel_option_table()) {
    EXPECT_NE(page.find("| `" + o.name + "` |"), std::string::npos) << o.name << " has no row in kernel-options.md";
    EXPECT_NE(page.find("`" + o.env + "`"), std::string::npos) << o.env;
  }
}

TEST(KernelOptionsTest, FilesTakeANestedMapOrDottedKeysAndFlagsOverrideThem) {
  testing::TempDir tmp{"kernel-options"};
  const fs::path file = tmp.path() / "s.yaml";
  std::ofstream(file) << "model: resnet50\nkernels: fused\nkernel_options:\n  decode_run: off\n  attention_cluster_splits: 4\n"
                         "kernel_options.prefill_graph: false\n";
  const ScenarioLoader loader(std::vector<std::string>{"resnet50"});
  Scenario s;
  loader.load_file(file.string(), s);
  EXPECT_EQ(s.kernel_options.decode_run, KernelReach::kOff);
  EXPECT_EQ(s.kernel_options.attention_cluster_splits, 4);
  EXPECT_FALSE(s.kernel_options.prefill_graph);
  EXPECT_EQ(s.origins.at("kernel_options.decode_run").line, 4);
  loader.apply_override("kernel_options.decode_run", "on", "--decode-run", s);
  EXPECT_EQ(s.kernel_options.decode_run, KernelReach::kOn);
  // Bad values and unknown options name file, line and key.
  std::ofstream(file) << "kernel_options:\n  decode_run: sometimes\n";
  try {
    Scenario t;
    loader.load_file(file.string(), t);
    FAIL() << "expected an error";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(e.key(), "kernel_options.decode_run");
    EXPECT_EQ(e.origin().line, 2);
  }
  std::ofstream(file) << "kernel_options:\n  decode_ruin: off\n";
  try {
    Scenario t;
    loader.load_file(file.string(), t);
    FAIL() << "expected an error";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("decode_run"), std::string::npos) << "did you mean: " << e.what();
  }
  std::ofstream(file) << "kernel_options:\n  attention_cluster_splits: 17\n";
  Scenario t;
  EXPECT_THROW(loader.load_file(file.string(), t), ScenarioError);
}

TEST(KernelOptionsTest, TheOldVariablesReadAsBeforeAndBadValuesAreRefused) {
  const auto from = [](std::map<std::string, std::string> env) {
    return kernel_options_from_environment([env](const char* name) -> const char* {
      const auto it = env.find(name);
      return it != env.end() ? it->second.c_str() : nullptr;
    });
  };
  using Values = std::vector<std::pair<std::string, nlohmann::json>>;
  EXPECT_EQ(from({{"GPUBENCH_DECODE_STREAM", "0"}, {"GPUBENCH_DECODE_RUN", "1"}}),
            (Values{{"decode_run", "on"}, {"decode_stream", "off"}}));
  EXPECT_EQ(from({{"GPUBENCH_DECODE_STEP", "1"}, {"GPUBENCH_DECODE_EMBED", "0"}}),
            (Values{{"decode_embed", false}, {"decode_one_kernel", true}}));
  EXPECT_EQ(from({{"GPUBENCH_DECODE_ATTN_MIN_SPLIT", "128"}, {"GPUBENCH_FLASH_DECODE", ""}}),
            (Values{{"attention_min_split", 128}}));  // empty: unset
  for (const auto& [name, value] : std::map<std::string, std::string>{{"GPUBENCH_DECODE_RUN", "maybe"},
                                                                      {"GPUBENCH_PREFILL_GRAPH", "no"},
                                                                      {"GPUBENCH_DECODE_ATTN_CLUSTER", "-1"},
                                                                      {"GPUBENCH_DECODE_ATTN_MIN_SPLIT", "9e99"}}) {
    try {
      from({{name, value}});
      ADD_FAILURE() << name << "=" << value << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
}

TEST(KernelOptionsTest, RecordsKeepThemWhereTheyApplyAndDefaultsNameNoScenarioOfTheirOwn) {
  Scenario plain;
  EXPECT_FALSE(nlohmann::json(plain).contains("kernel_options")) << "a plain training record stays as it was";
  Scenario fused;
  fused.kernels = "fused";
  fused.kernel_options.decode_stream = KernelReach::kOn;
  fused.kernel_options.attention_min_split = 32;
  const nlohmann::json j = fused;
  ASSERT_TRUE(j.contains("kernel_options"));
  EXPECT_EQ(j["kernel_options"]["decode_stream"], "on");
  EXPECT_EQ(j.get<Scenario>(), fused);
  EXPECT_EQ(describe_non_defaults(fused.kernel_options), "decode_stream on, attention_min_split 32");
  EXPECT_EQ(describe_non_defaults(KernelOptions{}), "");
  // A record of a fused run written before kernel_options existed pairs with a new one that kept the defaults.
  RunRecord old_record, new_record;
  old_record.scenario.kernels = new_record.scenario.kernels = "fused";
  nlohmann::json old_scenario = new_record.scenario;
  old_scenario.erase("kernel_options");
  old_record.scenario = old_scenario.get<Scenario>();
  EXPECT_EQ(scenario_identity(old_record), scenario_identity(new_record));
  new_record.scenario.kernel_options.decode_run = KernelReach::kOff;
  const auto differ = identity_differences(scenario_identity(old_record), scenario_identity(new_record));
  ASSERT_FALSE(differ.empty());
  EXPECT_EQ(differ[0].rfind("kernel_options", 0), 0u) << differ[0];
  // A record whose options are the wrong type is refused, not half read.
  nlohmann::json broken = fused;
  broken["kernel_options"]["decode_pdl"] = "yes";
  EXPECT_THROW(broken.get<Scenario>(), std::runtime_error);
}

TEST(KernelOptionsTest, GenerationAndFp8KeysAreIdentityKeys) {
  // Two generate runs with different prompts, or FP8 runs with different scaling, are different scenarios.
  RunRecord a, b;
  a.scenario.mode = b.scenario.mode = "generate";
  a.scenario.prompt_tokens = 128;
  b.scenario.prompt_tokens = 512;
  a.model.scenario_keys = b.model.scenario_keys = {"seq_len"};
  EXPECT_NE(scenario_identity(a), scenario_identity(b));
  RunRecord c, d;
  c.scenario.precision = d.scenario.precision = "fp8";
  c.scenario.fp8_scaling = "tensor";
  d.scenario.fp8_scaling = "delayed";
  c.model.scenario_keys = d.model.scenario_keys = {"seq_len"};
  EXPECT_NE(scenario_identity(c), scenario_identity(d));
}

}  // namespace
}  // namespace gpubench
