// Chrome-trace reading on arbitrary bytes, as `gpubench trace` does with files it is given: the only acceptable
// outcomes are a summary or an exception the command reports (a JSON parse error, or "not a Chrome trace"). Whatever
// events are accepted must summarise without overflow or a non-finite figure.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "gpubench/core/analysis/profile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::json j;
  std::vector<gpubench::ProfileEvent> events;
  try {
    j = nlohmann::json::parse(text);
    events = gpubench::events_from_chrome_trace(j);
  } catch (const nlohmann::json::exception&) {
    return 0;
  } catch (const std::runtime_error&) {
    return 0;
  }
  gpubench::ProfileInputs in;
  in.steps = std::max<int64_t>(1, gpubench::count_steps(events));
  in.model_flops_per_step = 1e12;
  in.peak_tflops = 989.4;
  in.timed_step_ms = 10.0;
  const gpubench::ProfileRecord p = gpubench::summarize_profile(events, in);
  for (double v : {p.wall_ms_per_step, p.busy_ms_per_step, p.idle_ms_per_step, p.busy_fraction, p.kernels_per_step}) {
    if (!std::isfinite(v) || v < 0) __builtin_trap();
  }
  if (p.busy_fraction > 1.0 + 1e-9) __builtin_trap();
  for (const auto& c : p.categories) {
    if (!std::isfinite(c.ms_per_step) || !std::isfinite(c.fraction) || c.fraction < 0 || c.fraction > 1.0 + 1e-9) {
      __builtin_trap();
    }
  }
  return 0;
}
