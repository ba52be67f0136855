// Scenario loading on arbitrary bytes: the only acceptable outcomes are a scenario or a ScenarioError. Anything else
// (another exception, a crash, a sanitizer report, a hang past libFuzzer's timeout) is a finding.
// The first byte picks the format (even: YAML, odd: JSON); the rest is the file's text.

#include <cstddef>
#include <cstdint>
#include <string>

#include "gpubench/core/scenario_loader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string format = (data[0] & 1) != 0 ? "json" : "yaml";
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  static const gpubench::ScenarioLoader loader(gpubench::ModelKeys{
      {"resnet50", {"image_size", "num_classes"}},
      {"bert-base", {"seq_len", "num_labels", "layers", "width", "heads", "dropout", "attention", "gradient_checkpointing"}},
      {"sd-unet", {"latent_size", "layers", "width", "heads", "dropout", "attention", "gradient_checkpointing"}}});
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
