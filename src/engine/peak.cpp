// measure_peaks(): what this device actually reaches on a large dense matrix product per math mode and on a
// device-to-device copy. Used as the ceilings for devices the device table does not list.

#include <chrono>

#include "copy_rate.h"
#include "device.h"
#include "host_clock.h"
#include "gpubench/engine/engine.hpp"

namespace gpubench {

namespace {

/// Best-of-`reps` seconds for `fn`, the device synchronised around each timing.
template <typename Fn>
double best_seconds(const engine::ResolvedDevice& d, int reps, Fn&& fn) {
  fn();  // warm-up: cuBLAS heuristics, allocator
  engine::synchronize(d);
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = engine::Clock::now();
    fn();
    engine::synchronize(d);
    best = std::min(best, engine::seconds_since(t0));
  }
  return best;
}

}  // namespace

double engine::measure_copy_rate_gbs(const ResolvedDevice& d, int64_t bytes) {
  const at::Tensor src = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(d.device)).fill_(1);
  at::Tensor dst = at::empty_like(src);
  const double s = best_seconds(d, 5, [&] { dst.copy_(src); });
  return 2.0 * static_cast<double>(bytes) / s / 1e9;  // read + write
}

PeakMeasurement measure_peaks(const std::string& device_id) {
  const engine::ResolvedDevice d = engine::resolve_device(device_id);
  PeakMeasurement out;
  out.device = d.id;
  out.device_name = describe_environment(d.id).device_name;
  const bool cpu = d.device.is_cpu();
  const int64_t n = cpu ? 1024 : 8192;     // square GEMM side
  const int inner = cpu ? 2 : 20;          // products per timing, so launch gaps do not count
  auto& ctx = at::globalContext();
  const bool tf32_was = ctx.allowTF32CuBLAS();
  struct Mode {
    const char* name;
    at::ScalarType dtype;
    bool tf32;
  };
  for (const Mode& m : {Mode{"fp32", at::kFloat, false}, Mode{"tf32", at::kFloat, true}, Mode{"bf16", at::kBFloat16, false},
                        Mode{"fp16", at::kHalf, false}}) {
    if (cpu && m.tf32) continue;  // no TF32 on CPUs
    ctx.setAllowTF32CuBLAS(m.tf32);
    const auto opts = at::TensorOptions().dtype(m.dtype).device(d.device);
    const at::Tensor a = at::randn({n, n}, opts), b = at::randn({n, n}, opts);
    at::Tensor c = at::empty({n, n}, opts);
    const double s = best_seconds(d, 3, [&] {
      for (int i = 0; i < inner; ++i) at::mm_out(c, a, b);
    });
    out.tflops.emplace_back(m.name, 2.0 * static_cast<double>(n * n * n) * inner / s / 1e12);
  }
  ctx.setAllowTF32CuBLAS(tf32_was);
  const int64_t bytes = cpu ? (int64_t{256} << 20) : (int64_t{2} << 30);
  out.copy_gbs = engine::measure_copy_rate_gbs(d, bytes);
  out.method = "best of 3 timings of " + std::to_string(inner) + " " + std::to_string(n) + "x" + std::to_string(n) +
               " matrix products per mode; best of 5 copies of " + std::to_string(bytes >> 20) +
               " MiB (bytes read + written)";
  return out;
}

}  // namespace gpubench
