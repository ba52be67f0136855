#pragma once
// The device's copy rate: best of a few device-to-device copies of a large buffer, bytes read + written per second.
// `gpubench info --measure-peak` reports it as the device's memory ceiling; mode: generate's roofline divides by it.

#include <cstdint>

#include "device.h"

namespace gpubench::engine {

/// GB/s (1e9 bytes) read + written, best of five copies of `bytes` after one untimed copy.
double measure_copy_rate_gbs(const ResolvedDevice& d, int64_t bytes);

}  // namespace gpubench::engine
