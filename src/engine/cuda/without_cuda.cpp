// A build without gpubench's CUDA module (GPUBENCH_CUDA=OFF, or no nvcc): no CUDA backend. A device LibTorch presents
// as CUDA (a ROCm build's HIP devices, or a CUDA wheel's devices where the module was left out) takes the generic
// backend. The CUDA module's other entry points answer "not built" here.

#include <stdexcept>

#include "backend/backend.h"
#include "cuda/cuda_module.h"
#include "cuda_graph.h"

namespace gpubench::engine {

std::shared_ptr<const Backend> make_cuda_backend(const ResolvedDevice& /*d*/) { return nullptr; }

std::optional<CudaVersions> cuda_versions() { return std::nullopt; }
bool describe_cuda_device(int /*index*/, EnvironmentRecord& /*e*/) { return false; }
std::optional<DeviceInfo> cuda_device_info(int /*index*/) { return std::nullopt; }

void fused::set_decode_launch_options(bool /*programmatic*/, bool /*evict_first*/) {}

bool cuda_graphs_compiled() { return false; }

std::unique_ptr<StepGraph> capture_step(const std::function<at::Tensor()>& /*step*/, int /*side_warmup*/) {
  throw std::runtime_error("this gpubench was built without its CUDA module (GPUBENCH_CUDA=OFF)");
}

}  // namespace gpubench::engine
