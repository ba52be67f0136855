#pragma once
// Measurement switches: features on by default that an environment variable set to "0" turns off, to measure what
// they buy (GPUBENCH_DECODE_PDL=0, GPUBENCH_PREFILL_GRAPH=0, ...; docs/generate.md lists the decode ones).

#include <cstdlib>
#include <cstring>

namespace gpubench::engine {

/// Whether the environment variable `name` is "0".
inline bool switched_off(const char* name) {
  const char* e = std::getenv(name);
  return e != nullptr && std::strcmp(e, "0") == 0;
}

}  // namespace gpubench::engine
