// The resolver (core/scenario/resolve.cpp) on a catalog of its own: the device's defaults and the CPU bounds, the
// recipe's optimizer, the cross-key rules, the memory check, FP8's refusal, generation's checks, the record paths,
// and the documented environment read into the scenario.

#include "gpubench/core/scenario/resolve.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>

#include "common/temp_dir.h"
#include "gpubench/core/scenario/scenario_loader.hpp"
#include "gpubench/core/reference/device_table.hpp"

namespace gpubench {
namespace {

namespace fs = std::filesystem;

/// A model's integer key from `lo` to `hi`, `fallback` by default.
ModelOption int_key(const std::string& key, double lo, double hi, int64_t fallback) {
  ModelOption o;
  o.key = key;
  o.type = ModelOption::Type::kInt;
  o.min = lo;
  o.max = hi;
  o.default_value = fallback;
  return o;
}

/// An image model and a decoder, declared as the engine's registry declares its models.
ModelCatalog catalog() {
  ModelInfo image;
  image.name = "toy";
  image.sample_unit = "images";
  image.default_batch_size = 64;
  image.default_optimizer = "sgd";
  image.recipe.name = "sgd";
  image.recipe.lr = 0.2;
  image.channels_last = true;
  image.image_input = true;
  image.options = {int_key("width", 1, 4096, 8)};
  image.check = [](const Scenario& s) {
    if (s.option<int64_t>("width").value_or(8) % 2 != 0) throw std::invalid_argument("width must be even");
  };
  image.size = [](const Scenario& s) {
    ModelSize m;
    m.parameters = 1000 * s.option<int64_t>("width").value_or(8);
    m.activation_bytes_per_sample = 1e6;
    return m;
  };
  ModelInfo decoder;
  decoder.name = "tiny-lm";
  decoder.sample_unit = "sequences";
  decoder.default_batch_size = 8;
  decoder.default_optimizer = "adamw";
  decoder.recipe.name = "adamw";
  decoder.generates = true;
  decoder.options = {int_key("seq_len", 1, 1 << 20, 1024)};
  return {image, decoder};
}

DeviceFacts cpu() {
  DeviceFacts d;
  d.id = "cpu";
  d.type = "cpu";
  d.memory_bytes = int64_t{8} << 30;
  d.memory_source = "MemAvailable";
  return d;
}

DeviceFacts gpu(int capability = 90, int64_t memory = int64_t{80} << 30) {
  DeviceFacts d;
  d.id = "cuda:0";
  d.type = "cuda";
  d.name = "Test GPU";
  d.compute_capability = capability;
  d.memory_bytes = memory;
  d.memory_source = "total device memory";
  return d;
}

ResolveOptions no_output() {
  ResolveOptions o;
  o.choose_output = false;
  return o;
}

Scenario toy() {
  Scenario s;
  s.model = "toy";
  return s;
}

/// The key a ScenarioError names, or "" when `f` resolves.
template <typename F>
std::string refused_key(F f) {
  try {
    f();
  } catch (const ScenarioError& e) {
    return e.key();
  }
  return "";
}

TEST(ResolveTest, AMemoryLimitCapsTheEstimatesMemoryOnAGpuAndIsRefusedWhereNothingCanBeCapped) {
  ScenarioLoader loader(options_by_model(catalog()));
  Scenario s = toy();
  loader.apply_override("memory_limit", "12GiB", "--memory-limit", s);
  EXPECT_EQ(*s.memory_limit, int64_t{12} << 30);
  ResolvedScenario r = resolve_scenario(s, catalog(), gpu(), no_output());
  ASSERT_TRUE(r.memory.has_value());
  EXPECT_EQ(r.memory->available_bytes, int64_t{12} << 30);  // the estimate is checked against the cap
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
    return n.find("Memory capped at 12.0 GiB") != std::string::npos;
  }));
  EXPECT_EQ(refused_key([&] { resolve_scenario(s, catalog(), cpu(), no_output()); }), "memory_limit");
  Scenario above = toy();
  loader.apply_override("memory_limit", "96GiB", "--memory-limit", above);
  EXPECT_EQ(refused_key([&] { resolve_scenario(above, catalog(), gpu(), no_output()); }), "memory_limit");
  // An emulated card: its usable memory, as `gpubench fit` counts it.
  Scenario card = toy();
  loader.apply_override("emulate", "NVIDIA GeForce RTX 4070 Ti", "--emulate", card);
  EXPECT_EQ(card.emulate, "NVIDIA GeForce RTX 4070 Ti");
  r = resolve_scenario(card, catalog(), gpu(), no_output());
  EXPECT_EQ(*r.scenario.memory_limit, usable_memory_bytes(12));
  EXPECT_NE(r.memory->available_source.find("emulating NVIDIA GeForce RTX 4070 Ti"), std::string::npos);
  EXPECT_EQ(refused_key([&] { resolve_scenario(card, catalog(), cpu(), no_output()); }), "emulate");
  // The module's options: a build without it refuses the cap, naming the key.
  ResolveOptions portable = no_output();
  portable.cuda_module = false;
  EXPECT_EQ(refused_key([&] { resolve_scenario(card, catalog(), gpu(), portable); }), "emulate");
}

TEST(ResolveTest, SizesNeedTheirUnitAndUnknownCardsAreListed) {
  ScenarioLoader loader(options_by_model(catalog()));
  Scenario s = toy();
  loader.apply_override("memory_limit", "16GB", "--memory-limit", s);
  EXPECT_EQ(*s.memory_limit, int64_t{16000000000});
  loader.apply_override("memory_limit", "800MiB", "--memory-limit", s);
  EXPECT_EQ(*s.memory_limit, int64_t{800} << 20);
  for (const char* bad : {"12", "12 parsecs", "-1GiB", "1KiB", "GiB", "1e30GiB"}) {
    EXPECT_THROW(loader.apply_override("memory_limit", bad, "--memory-limit", s), ScenarioError) << bad;
  }
  try {
    loader.apply_override("emulate", "NVIDIA B200", "--emulate", s);
    FAIL() << "an unknown card was accepted";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("NVIDIA H200 SXM"), std::string::npos) << e.what();
  }
}

TEST(ResolveTest, OnTheCpuTheRunIsBoundedAndTheNoteSaysHow) {
  const ResolvedScenario r = resolve_scenario(toy(), catalog(), cpu(), no_output());
  EXPECT_EQ(r.scenario.batch_size, 16);
  EXPECT_EQ(r.scenario.warmup_steps, 2);
  EXPECT_EQ(r.scenario.time_budget_s, 30.0);
  EXPECT_EQ(r.scenario.device, "cpu");
  EXPECT_EQ(r.scenario.memory_format, "contiguous");
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("batch size 16 (GPU default 64)"), std::string::npos) << r.notes[0];
  EXPECT_NE(r.notes[0].find("not comparable with GPU numbers"), std::string::npos) << r.notes[0];
}

TEST(ResolveTest, OnAGpuTheModelsDefaultsHoldAndSetValuesAreLeftAlone) {
  Scenario s = toy();
  s.warmup_steps = 3;
  const ResolvedScenario r = resolve_scenario(s, catalog(), gpu(), no_output());
  EXPECT_EQ(r.scenario.batch_size, 64);
  EXPECT_EQ(r.scenario.warmup_steps, 3);
  EXPECT_FALSE(r.scenario.time_budget_s.has_value());
  EXPECT_EQ(r.scenario.memory_format, "channels_last");
  EXPECT_TRUE(r.notes.empty());
  EXPECT_EQ(r.scenario.option<int64_t>("width"), 8);  // the model's declared default, filled in
}

TEST(ResolveTest, TheRecipeFillsTheOptimizerOnlyWhenTheScenarioNamesTheSameOne) {
  ResolvedScenario r = resolve_scenario(toy(), catalog(), gpu(), no_output());
  EXPECT_EQ(r.scenario.optimizer.name, "sgd");
  EXPECT_EQ(r.scenario.optimizer.lr, 0.2);
  EXPECT_EQ(r.scenario.optimizer.implementation, "fused");
  Scenario adamw = toy();
  adamw.optimizer.name = "adamw";
  r = resolve_scenario(adamw, catalog(), gpu(), no_output());
  EXPECT_EQ(r.scenario.optimizer.lr, 1e-3);  // torch.optim.AdamW's, not the SGD recipe's 0.2
  EXPECT_FALSE(r.scenario.optimizer.momentum.has_value());
}

TEST(ResolveTest, ResolvingAResolvedScenarioChangesNothing) {
  const ResolvedScenario once = resolve_scenario(toy(), catalog(), gpu(), no_output());
  const ResolvedScenario twice = resolve_scenario(once.scenario, catalog(), gpu(), no_output());
  EXPECT_EQ(once.scenario, twice.scenario);
  EXPECT_EQ(once.precision, twice.precision);
}

TEST(ResolveTest, AmpIsFp16OnGpusAndBf16OnTheCpu) {
  Scenario s = toy();
  s.precision = "amp";
  EXPECT_EQ(resolve_scenario(s, catalog(), gpu(), no_output()).precision, "fp16");
  EXPECT_EQ(resolve_scenario(s, catalog(), cpu(), no_output()).precision, "bf16");
}

TEST(ResolveTest, RefusalsNameTheKeyToChange) {
  Scenario unknown = toy();
  unknown.model = "nope";
  EXPECT_EQ(refused_key([&] { resolve_scenario(unknown, catalog(), gpu(), no_output()); }), "model");
  Scenario odd = toy();
  odd.model_options["width"] = 7;
  EXPECT_EQ(refused_key([&] { resolve_scenario(odd, catalog(), gpu(), no_output()); }), "width");
  Scenario fp8 = toy();
  fp8.precision = "fp8";
  EXPECT_EQ(refused_key([&] { resolve_scenario(fp8, catalog(), gpu(80), no_output()); }), "precision");
  EXPECT_EQ(refused_key([&] { resolve_scenario(fp8, catalog(), gpu(90), no_output()); }), "");
  ResolveOptions validate = no_output();
  validate.refuse_unsupported = false;  // validate: a note instead
  const ResolvedScenario noted = resolve_scenario(fp8, catalog(), gpu(80), validate);
  ASSERT_FALSE(noted.notes.empty());
  EXPECT_NE(noted.notes.back().find("compute capability 8.0"), std::string::npos) << noted.notes.back();
}

TEST(ResolveTest, ABuildWithoutTheCudaModuleRefusesEveryOptionOnlyTheModuleRunsNamingEach) {
  ResolveOptions portable = no_output();
  portable.cuda_module = false;
  Scenario s = toy();
  EXPECT_NO_THROW(resolve_scenario(s, catalog(), gpu(), portable));  // nothing of the module asked for
  s.kernels = "fused";
  s.precision = "fp8";
  s.graph = true;
  s.data = "synthetic";
  s.decode = "gpu";  // decode matters for data: folder only
  std::vector<std::string> keys;
  try {
    resolve_scenario(s, catalog(), gpu(), portable);
    ADD_FAILURE() << "resolved";
  } catch (const ScenarioError& e) {
    for (const auto& one : e.all()) {
      keys.push_back(one.key());
      EXPECT_NE(one.problem().find("this build has no CUDA support"), std::string::npos) << one.problem();
    }
  }
  EXPECT_EQ(keys, (std::vector<std::string>{"kernels", "precision", "graph"}));
  Scenario mixed = toy();
  mixed.data = "folder";
  mixed.decode = "mixed";
  EXPECT_EQ(refused_key([&] { resolve_scenario(mixed, catalog(), gpu(), portable); }), "decode");
  // With the module the same scenario is not refused for it; validate (no refusals) notes what a run would refuse.
  EXPECT_EQ(refused_key([&] { resolve_scenario(s, catalog(), gpu(90), no_output()); }), "");
  portable.refuse_unsupported = false;
  const ResolvedScenario noted = resolve_scenario(s, catalog(), gpu(90), portable);
  EXPECT_EQ(std::count_if(noted.notes.begin(), noted.notes.end(),
                          [](const std::string& n) { return n.find("no CUDA support") != std::string::npos; }),
            3);
}

TEST(ResolveTest, AScenarioThatCannotFitIsRefusedOrNotedAsMemoryCheckSays) {
  Scenario big = toy();
  big.batch_size = 1 << 20;  // 1 MB of activations a sample: a TiB
  EXPECT_EQ(refused_key([&] { resolve_scenario(big, catalog(), gpu(), no_output()); }), "batch_size");
  big.memory_check = "warn";
  const ResolvedScenario r = resolve_scenario(big, catalog(), gpu(), no_output());
  ASSERT_TRUE(r.memory.has_value());
  EXPECT_FALSE(r.memory->fits());
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes.back().find("memory_check: warn"), std::string::npos) << r.notes.back();
}

TEST(ResolveTest, GenerationTakesADecoderWithinItsPositionsOnOneDevice) {
  Scenario s;
  s.model = "tiny-lm";
  s.mode = "generate";
  const ResolvedScenario r = resolve_scenario(s, catalog(), gpu(), no_output());
  EXPECT_EQ(r.scenario.batch_size, 1);
  EXPECT_EQ(r.scenario.prompt_tokens, 512);
  EXPECT_EQ(r.scenario.new_tokens, 128);
  EXPECT_EQ(r.scenario.epochs, 5);
  s.prompt_tokens = 200;
  s.new_tokens = 900;  // 1,100 positions, the model has 1,024
  s.origins["new_tokens"] = Origin{"f.yaml", 4, 13};  // the key the user set is the one named
  EXPECT_EQ(refused_key([&] { resolve_scenario(s, catalog(), gpu(), no_output()); }), "new_tokens");
  Scenario image = toy();
  image.mode = "generate";
  EXPECT_EQ(refused_key([&] { resolve_scenario(image, catalog(), gpu(), no_output()); }), "mode");
}

TEST(ResolveTest, TheRecordPathIsTheFirstFreeOneAndRepeatsNumberTheirs) {
  testing::TempDir tmp{"resolve"};
  const fs::path before = fs::current_path();
  fs::current_path(tmp.path());
  ResolveOptions three;
  three.repeats = 3;
  const ResolvedScenario r = resolve_scenario(toy(), catalog(), gpu(), three);
  ASSERT_EQ(r.record_paths.size(), 3u);
  EXPECT_EQ(r.scenario.output, "runs/toy_cuda-0_fp32_bs64.json");
  EXPECT_EQ(r.record_paths[1], "runs/toy_cuda-0_fp32_bs64_r2.json");
  fs::create_directories("runs");
  std::ofstream("runs/toy_cuda-0_fp32_bs64_r1.json") << "{}";
  EXPECT_EQ(resolve_scenario(toy(), catalog(), gpu(), three).scenario.output, "runs/toy_cuda-0_fp32_bs64_2.json");
  fs::current_path(before);
}

TEST(ResolveTest, DocumentedVariablesFillWhatFileAndFlagsLeaveOpenAndSayWhereTheyCameFrom) {
  const std::map<std::string, std::string> env{{"GPUBENCH_DECODE_RUN", "0"},
                                               {"GPUBENCH_PREFILL_GRAPH", "0"},
                                               {"GPUBENCH_DECODE_ATTN_CLUSTER", "4"},
                                               {"GPUBENCH_FAULT_INJECT", "oom-above-batch:2"},
                                               {"GPUBENCH_NVJPEG", "/opt/libnvjpeg.so"}};
  const auto getenv = [&env](const char* name) -> const char* {
    const auto it = env.find(name);
    return it != env.end() ? it->second.c_str() : nullptr;
  };
  Scenario s;
  s.kernel_options.prefill_graph = true;
  s.origins["kernel_options.prefill_graph"] = Origin{"command line --prefill-graph", 0, 0};
  apply_documented_environment(s, getenv);
  EXPECT_EQ(s.kernel_options.decode_run, KernelReach::kOff);
  EXPECT_EQ(s.origins["kernel_options.decode_run"].describe(), "environment GPUBENCH_DECODE_RUN");
  EXPECT_EQ(s.kernel_options.attention_cluster_splits, 4);
  EXPECT_TRUE(s.kernel_options.prefill_graph) << "a flag wins over the variable";
  EXPECT_EQ(s.kernel_options.decode_stream, KernelReach::kAuto) << "unset: the default";
  EXPECT_EQ(s.fault_inject, "oom-above-batch:2");
  EXPECT_EQ(s.nvjpeg_library, "/opt/libnvjpeg.so");
  // A malformed value is refused naming the variable and the key it sets.
  const auto bad = [](const char* name) -> const char* {
    return std::string(name) == "GPUBENCH_DECODE_ATTN_CLUSTER" ? "lots" : nullptr;
  };
  Scenario t;
  try {
    apply_documented_environment(t, bad);
    FAIL() << "expected a refusal";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(e.key(), "kernel_options.attention_cluster_splits");
    EXPECT_NE(std::string(e.what()).find("GPUBENCH_DECODE_ATTN_CLUSTER='lots'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpubench
