#include "cuda_graph.h"

#include <algorithm>

// capture_step and cuda_graphs_compiled: cuda/cuda_graph.cpp (the CUDA module), or cuda/without_cuda.cpp.

namespace gpubench::engine {

std::optional<int64_t> with_graph_working_set(std::optional<int64_t> allocated, const StepGraph* graph) {
  if (!allocated || graph == nullptr) return allocated;
  return std::max(*allocated, graph->working_set_bytes());
}

}  // namespace gpubench::engine
