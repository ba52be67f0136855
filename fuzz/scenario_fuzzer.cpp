// Scenario loading on arbitrary bytes: the only acceptable outcomes are a scenario or a ScenarioError. Anything else
// (another exception, a crash, a sanitizer report, a hang past libFuzzer's timeout) is a finding.
// The first byte picks the format (even: YAML, odd: JSON); the rest is the file's text.

#include <cstddef>
#include <cstdint>
#include <string>

#include "gpubench/core/scenario/scenario_loader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string format = (data[0] & 1) != 0 ? "json" : "yaml";
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  // Declarations of each kind a registry makes (int, float, bool, choice; one key in two models with two ranges).
  using T = gpubench::ModelOption::Type;
  static const gpubench::ScenarioLoader loader(gpubench::ModelOptions{
      {"resnet50", {{"image_size", "--image-size", "side", T::kInt, 32, 4096, {}, 224}}},
      {"bert-base", {{"seq_len", "--seq-len", "tokens", T::kInt, 1, 512, {}, 128},
                     {"layers", "--layers", "layers", T::kInt, 1, 1024, {}, nullptr},
                     {"dropout", "--dropout", "p", T::kFloat, 0, 0.999, {}, nullptr},
                     {"attention", "--attention", "kernel", T::kChoice, 0, 0, {"sdpa", "math"}, "sdpa"},
                     {"gradient_checkpointing", "--gradient-checkpointing", "ckpt", T::kBool, 0, 0, {}, false}}},
      {"sd-unet", {{"latent_size", "--latent-size", "side", T::kInt, 8, 1024, {}, 64},
                   {"layers", "--layers", "resnets", T::kInt, 1, 8, {}, nullptr}}}});
  gpubench::Scenario s;
  try {
    loader.load_text(text, format, "fuzz." + format, s);
    loader.check(s);
    // A loaded scenario must survive its own record round trip.
    const nlohmann::json j = s;
    (void)j.get<gpubench::Scenario>();
  } catch (const gpubench::ScenarioError& e) {
    if (std::string(e.what()).find("fuzz.") != 0) __builtin_trap();  // every message names the file first
  }
  return 0;
}
