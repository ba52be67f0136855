#pragma once
// The device table (configs/devices/devices.yaml, compiled in): dense peak throughput per math mode, memory, bandwidth,
// power and price of the devices in the published references plus the data-centre parts, each with its source.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpubench {

struct DeviceSpec {
  std::string name;                  ///< table name, e.g. "NVIDIA H200 SXM"
  std::vector<std::string> match;    ///< device names as drivers report them
  std::optional<double> fp32_tflops, tf32_tflops, bf16_tflops, fp16_tflops;  ///< dense peaks (TFLOP/s)
  std::optional<double> fp8_tflops;  ///< dense FP8 (e4m3/e5m2) tensor peak with FP32 accumulate (Ada, Hopper)
  std::optional<double> memory_gb, bandwidth_gbs, tdp_w;  ///< GB, GB/s, W
  std::optional<double> launch_price_usd, price_cny;
  std::string source;                ///< where the figures come from
  std::string notes;
  /// Ceilings measured on the device (`gpubench info --measure-peak`: a large dense matrix product per precision and
  /// a device copy), where someone measured them: what the bottleneck attribution takes as the achievable peak.
  std::optional<double> measured_fp32_tflops, measured_tf32_tflops, measured_bf16_tflops, measured_fp16_tflops,
      measured_fp8_tflops, measured_bandwidth_gbs;
  std::string measured_source;       ///< where and how they were measured

  /// The dense peak for a resolved precision (fp32 | tf32 | bf16 | fp16 | fp8), if the table has it.
  std::optional<double> peak_tflops(const std::string& precision) const;
  /// The measured ceiling for a resolved precision, if the table has one.
  std::optional<double> measured_peak_tflops(const std::string& precision) const;
};

/// What the driver and libraries hold on a card beside the caching allocator's blocks (the CUDA context, cuBLAS and
/// cuDNN workspaces), and the share of its nominal memory the driver keeps: usable = memory x 0.99 - 0.8 GiB
/// (docs/fit.md). What `gpubench fit` plans against and what `--emulate CARD` caps a run at.
inline constexpr double kContextGiB = 0.8;
inline constexpr double kVisibleMemoryFraction = 0.99;
/// A card's usable memory (bytes) from the table's memory (GiB).
int64_t usable_memory_bytes(double memory_gb);

/// Parses a table in the devices.yaml format; `source` names the file in errors (std::runtime_error).
std::vector<DeviceSpec> parse_device_table(const std::string& yaml_text, const std::string& source);
/// The compiled-in table.
const std::vector<DeviceSpec>& device_table();
/// Device names compare equal ignoring case ("NVIDIA H200" and "nvidia h200").
bool same_device_name(const std::string& a, const std::string& b);

/// The entry whose `match` list (or name) equals `device_name`, ignoring case; nullptr if none.
const DeviceSpec* find_device_spec(const std::string& device_name);

}  // namespace gpubench
