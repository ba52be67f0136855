// Whole-step CUDA graphs (cuda_graph.h), part of gpubench's CUDA module: capture on a side stream, replay on the
// compute stream. A build without the module has cuda/without_cuda.cpp's refusal instead.

#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>

#include <stdexcept>

#include "cuda_graph.h"

namespace gpubench::engine {

namespace {

class CudaStepGraph final : public StepGraph {
 public:
  const at::Tensor& replay() override {
    graph_.replay();
    return loss_;
  }
  void set_working_set(int64_t bytes) { working_set_bytes_ = bytes; }
  at::cuda::CUDAGraph graph_;
  at::Tensor loss_;
};

}  // namespace

bool cuda_graphs_compiled() { return true; }

std::unique_ptr<StepGraph> capture_step(const std::function<at::Tensor()>& step, int side_warmup) {
  auto g = std::make_unique<CudaStepGraph>();
  const at::cuda::CUDAStream main = at::cuda::getCurrentCUDAStream();
  const at::cuda::CUDAStream side = at::cuda::getStreamFromPool();
  at::cuda::CUDAEvent main_ready;
  main_ready.record(main);
  main_ready.block(side);
  const c10::DeviceIndex device = c10::cuda::current_device();
  c10::cuda::CUDACachingAllocator::resetPeakStats(device);  // the working set: the warm-up's and the capture's peak
  {
    const c10::cuda::CUDAStreamGuard guard(side);
    // Lazy initialisation tied to a stream (cuBLAS workspaces, AccumulateGrad's stream bookkeeping) happens here,
    // outside the capture.
    for (int i = 0; i < side_warmup; ++i) step();
    side.synchronize();
    c10::cuda::CUDACachingAllocator::emptyCache();  // eager blocks go back, the graph's pool starts clean
    g->graph_.capture_begin();
    try {
      g->loss_ = step();
      g->graph_.capture_end();
    } catch (...) {
      try {
        g->graph_.capture_end();  // leave the stream out of capture mode before the caller goes on eagerly
      } catch (...) {
      }
      throw;
    }
  }
  at::cuda::CUDAEvent side_done;
  side_done.record(side);
  side_done.block(main);
  g->set_working_set(c10::cuda::CUDACachingAllocator::getDeviceStats(device).allocated_bytes[0].peak);  // AGGREGATE
  return g;
}

}  // namespace gpubench::engine
