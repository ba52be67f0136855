#pragma once
// The CUDA module's entry points that code outside src/engine/cuda/ calls. Each is defined twice: by the module
// (cuda/*.cpp, compiled with it) and by cuda/without_cuda.cpp (a build without it), so no caller branches on the
// build.

#include <optional>
#include <string>

#include "gpubench/core/record/run_record.hpp"
#include "gpubench/engine/engine.hpp"

namespace gpubench::engine {

/// The CUDA driver's and runtime's versions as CUDA reports them (13000 for 13.0; 0 where a query failed); empty
/// without the module.
struct CudaVersions {
  int driver = 0, runtime = 0;
};
std::optional<CudaVersions> cuda_versions();
/// GPU `index`'s name, memory, compute capability, multiprocessors and PCI bus id into `e`; false without the module.
bool describe_cuda_device(int index, EnvironmentRecord& e);
/// GPU `index` as `gpubench info` lists it (its id left to the caller); empty without the module.
std::optional<DeviceInfo> cuda_device_info(int index);

namespace fused {
/// The decode kernels' launch options for the runs that follow (decode/decode_kernels.h; a no-op without the module).
void set_decode_launch_options(bool programmatic, bool evict_first);
}  // namespace fused

}  // namespace gpubench::engine
