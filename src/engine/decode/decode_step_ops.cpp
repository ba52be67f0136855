#include "decode/decode_step_ops.h"

#include <atomic>

#include "gpubench/core/scenario/kernel_options.hpp"

namespace gpubench::engine::fused {

namespace {
std::atomic<bool>& enabled_slot() {
  static std::atomic<bool> on{KernelOptions{}.decode_one_kernel};
  return on;
}
}  // namespace

bool decode_step_enabled() { return enabled_slot().load(); }

void set_decode_step_enabled(bool on) { enabled_slot().store(on); }

}  // namespace gpubench::engine::fused
