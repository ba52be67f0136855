// Record reading on arbitrary bytes, as `compare` and `report` do with files they are given: the only acceptable
// outcomes are a record or a std::runtime_error naming the source. A record that is accepted must survive every
// computation the readers run on it (summaries, energy, comparison with itself) and its own write/read round trip.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "gpubench/core/analysis/compare.hpp"
#include "gpubench/core/record/record_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  gpubench::RunRecord r;
  try {
    r = gpubench::parse_record(text, "fuzz.json");
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).find("fuzz.json") == std::string::npos) __builtin_trap();
    return 0;
  }
  gpubench::RunRecord copy = r;
  gpubench::summarize_energy(copy);
  (void)gpubench::job_energy(r);
  gpubench::compute_drift(copy);
  const std::vector<gpubench::LoadedRecord> side{{"fuzz.json", r}};
  gpubench::CompareOptions options;
  options.resamples = 50;  // the bootstrap's cost, not its statistics, is what matters here
  (void)gpubench::compare_runs(side, side, options);
  const gpubench::RunRecord back = gpubench::parse_record(gpubench::json_text(r, 2), "fuzz.json");
  if (!(back == r)) __builtin_trap();  // what was accepted reads back the same
  return 0;
}
