#pragma once
// The subset of NVML's C ABI that gpubench uses, declared as nvml.h declares it (nvml.h is not on every build
// machine). Global names, as in nvml.h: the reader's function-pointer types and the tests' stand-in library then
// agree exactly (UBSan checks calls through function pointers against the callee's type).

#include <cstdint>

struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
using nvmlReturn_t = int;

struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};

/// nvmlValue_t / nvmlFieldValue_t: NVML's field-value query.
union nvmlValue_t {
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  long long sllVal;
  int siVal;
  unsigned short usVal;
};
struct nvmlFieldValue_t {
  uint32_t fieldId;
  uint32_t scopeId;
  int64_t timestamp;
  int64_t latencyUsec;
  int valueType;
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
};

/// nvmlProcessInfo_v2_t (= v3): what nvmlDeviceGetComputeRunningProcesses_v3 fills.
struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
