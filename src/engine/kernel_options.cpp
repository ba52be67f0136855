#include "kernel_options.h"

#include "decode/decode_ops.h"
#include "decode/decode_step_ops.h"
#include "models/decoder.h"

#include "cuda/cuda_module.h"

namespace gpubench::engine {

namespace {
fused::DecodeKernelMode mode(KernelReach r) {
  return r == KernelReach::kOff  ? fused::DecodeKernelMode::kOff
         : r == KernelReach::kOn ? fused::DecodeKernelMode::kEverywhere
                                 : fused::DecodeKernelMode::kWherePays;
}
}  // namespace

void apply_kernel_options(const KernelOptions& o) {
  fused::set_decode_run_mode(mode(o.decode_run));
  fused::set_decode_stream_mode(mode(o.decode_stream));
  fused::set_decode_greedy_tail(o.decode_greedy_tail);
  fused::set_decode_embed_kernel(o.decode_embed);
  fused::DecodeClusterSetting cluster;  // the batch limit stays the measured one (tests set it directly)
  cluster.limit = static_cast<int>(o.attention_cluster_splits);
  fused::set_decode_attention_cluster(cluster);
  fused::set_decode_attention_min_split(o.attention_min_split);
  fused::set_decode_step_enabled(o.decode_one_kernel);
  models::set_flash_decode_allowed(o.flash_decode);
  fused::set_decode_launch_options(o.decode_pdl, o.decode_evict_first);
}

}  // namespace gpubench::engine
