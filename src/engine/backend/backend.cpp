#include "backend/backend.h"

#include "device.h"

namespace gpubench::engine {

const char* backend_name(BackendKind kind) {
  switch (kind) {
    case BackendKind::kCpu: return "cpu";
    case BackendKind::kCuda: return "cuda";
    case BackendKind::kGeneric: return "generic";
  }
  return "generic";
}

std::shared_ptr<const Backend> make_backend(const ResolvedDevice& d) {
  if (d.device.is_cpu()) return make_cpu_backend(d);
  if (d.device.is_cuda()) {
    if (auto cuda = make_cuda_backend(d)) return cuda;  // HIP devices present as CUDA: without the module, generic
  }
  return make_generic_backend(d);
}

}  // namespace gpubench::engine
