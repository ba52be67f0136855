// A build without gpubench's CUDA module (GPUBENCH_CUDA=OFF, or no nvcc): no CUDA backend. A device LibTorch presents
// as CUDA (a ROCm build's HIP devices, or a CUDA wheel's devices where the module was left out) takes the generic
// backend.

#include "backend/backend.h"

namespace gpubench::engine {

std::shared_ptr<const Backend> make_cuda_backend(const ResolvedDevice& /*d*/) { return nullptr; }

}  // namespace gpubench::engine
