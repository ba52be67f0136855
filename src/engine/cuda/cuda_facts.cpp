// The CUDA module's facts for records and `gpubench info` (cuda_module.h): the driver's and runtime's versions and
// each GPU's properties, from the CUDA runtime.

#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime_api.h>

#include <cstdio>

#include "cuda/cuda_module.h"

namespace gpubench::engine {

std::optional<CudaVersions> cuda_versions() {
  CudaVersions v;
  if (cudaDriverGetVersion(&v.driver) != cudaSuccess) v.driver = 0;
  if (cudaRuntimeGetVersion(&v.runtime) != cudaSuccess) v.runtime = 0;
  return v;
}

bool describe_cuda_device(int index, EnvironmentRecord& e) {
  const cudaDeviceProp* p = at::cuda::getDeviceProperties(index);
  e.device_name = p->name;
  e.device_memory_bytes = static_cast<int64_t>(p->totalGlobalMem);
  e.compute_capability = std::to_string(p->major) + "." + std::to_string(p->minor);
  e.multiprocessors = p->multiProcessorCount;
  char bus[32];
  std::snprintf(bus, sizeof bus, "%08x:%02x:%02x.0", p->pciDomainID, p->pciBusID, p->pciDeviceID);
  e.pci_bus_id = bus;
  return true;
}

std::optional<DeviceInfo> cuda_device_info(int index) {
  const cudaDeviceProp* p = at::cuda::getDeviceProperties(index);
  DeviceInfo d;
  d.name = p->name;
  d.memory_bytes = static_cast<int64_t>(p->totalGlobalMem);
  d.compute_capability = std::to_string(p->major) + "." + std::to_string(p->minor);
  return d;
}

}  // namespace gpubench::engine
