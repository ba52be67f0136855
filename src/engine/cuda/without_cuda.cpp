// A build without gpubench's CUDA module (GPUBENCH_CUDA=OFF, or no nvcc): no CUDA backend. A device LibTorch presents
// as CUDA (a ROCm build's HIP devices, or a CUDA wheel's devices where the module was left out) takes the generic
// backend. The CUDA module's other entry points answer "not built" here.

#include <stdexcept>

#include "backend/backend.h"
#include "cuda/cuda_module.h"
#include "cuda/gpu_jpeg_stage.h"
#include "cuda/kernel_calls.h"
#include "cuda_graph.h"
#include "decode/decode_step_ops.h"
#include "fused/fused_ops.h"

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

namespace {
[[noreturn]] void no_module(const char* what) {
  throw std::logic_error(std::string(what) + ": called in a build without the CUDA module (launch::on_kernels is false)");
}
}  // namespace

// ---- the module's kernels (kernel_calls.h): launch::on_kernels never holds, so the callers run their ATen forms ----

bool fused::cuda_kernels_compiled() { return false; }

namespace fused::cuda_ops {

at::Tensor softmax_cross_entropy_grad(const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t, int64_t,
                                      const at::Tensor&, const at::Tensor&) {
  no_module("softmax_cross_entropy_grad");
}
at::Tensor swiglu_forward(const at::Tensor&, const at::Tensor&, bool) { no_module("swiglu_forward"); }
std::pair<at::Tensor, at::Tensor> swiglu_backward(const at::Tensor&, const at::Tensor&, const at::Tensor&, bool) {
  no_module("swiglu_backward");
}
std::pair<at::Tensor, at::Tensor> rotary(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                         bool, bool) {
  no_module("rotary");
}
bool layer_norm_rows(int64_t, bool) { return false; }
bool rms_norm_rows(int64_t, bool) { return false; }
at::Tensor column_sum(const at::Tensor&) { no_module("column_sum"); }
AddNormTensors dropout_add_layer_norm(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                      double, double) {
  no_module("dropout_add_layer_norm");
}
AddNormGradTensors dropout_add_layer_norm_backward(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                                   const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                                   const at::Tensor&, double) {
  no_module("dropout_add_layer_norm_backward");
}
std::pair<at::Tensor, at::Tensor> gelu_backward_bias(const at::Tensor&, const at::Tensor&, bool) {
  no_module("gelu_backward_bias");
}
RmsNormTensors add_rms_norm(const at::Tensor&, const at::Tensor&, const at::Tensor&, double, bool) {
  no_module("add_rms_norm");
}
std::pair<at::Tensor, at::Tensor> add_rms_norm_backward(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                                        const at::Tensor&, const at::Tensor&, bool) {
  no_module("add_rms_norm_backward");
}
at::Tensor geglu(const at::Tensor&) { no_module("geglu"); }
at::Tensor geglu_backward(const at::Tensor&, const at::Tensor&) { no_module("geglu_backward"); }
bool try_gemm_gelu_aux_bias(const at::Tensor&, const at::Tensor&, const at::Tensor&, at::Tensor&, at::Tensor&) {
  return false;
}
bool try_gemm_dgelu_bgrad(const at::Tensor&, const at::Tensor&, const at::Tensor&, at::Tensor&, at::Tensor&) {
  return false;
}
void begin_run() {}
std::string describe_after_run(std::vector<FusionRecord>& /*fusions*/) { return ""; }
std::string decode_choices_this_run(const std::string& /*name*/) { return ""; }

at::Tensor try_batch_norm_act(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                              const at::Tensor&, const at::Tensor&, bool, double, double, bool, std::string& why) {
  why.clear();
  return {};
}
at::Tensor try_max_pool2d(const at::Tensor&, int64_t, int64_t, int64_t, std::string& why) {
  why.clear();
  return {};
}

bool stream_capturing(const at::Tensor& /*t*/) { return false; }
void fp8_amax(const at::Tensor&, const at::Tensor&) { no_module("fp8_amax"); }
void fp8_cast(const at::Tensor&, bool, const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&) {
  no_module("fp8_cast");
}
bool fp8_cast_takes(const at::Tensor& /*x*/) { return false; }
Fp8CastTable fp8_cast_table(const std::vector<Fp8CastTarget>& /*targets*/) { no_module("fp8_cast_table"); }
void fp8_amax_cast_many(const Fp8CastTable&, const at::Tensor&) { no_module("fp8_amax_cast_many"); }

at::Tensor try_decode_linear(const at::Tensor&, const std::vector<at::Tensor>&, const at::Tensor&, DecodeAct,
                             const at::Tensor&, const DecodeNorm&) {
  return {};
}
bool try_decode_lm_head_greedy(const at::Tensor&, const at::Tensor&, const DecodeNorm&, const DecodeGreedy&) {
  return false;
}
at::Tensor try_decode_qkv_linear_to_cache(const at::Tensor&, const std::vector<at::Tensor>&, const at::Tensor&,
                                          const DecodeNorm&, int64_t, int64_t, const at::Tensor&, const at::Tensor&,
                                          const at::Tensor&, at::Tensor&, at::Tensor&, const at::Tensor&) {
  return {};
}
at::Tensor try_decode_norm(const at::Tensor&, const at::Tensor&, const at::Tensor&, double, bool) { return {}; }
at::Tensor try_decode_embed(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&) { return {}; }
at::Tensor try_decode_argmax(const at::Tensor&) { return {}; }
at::Tensor try_decode_attention(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t,
                                const at::Tensor&) {
  return {};
}
at::Tensor try_decode_qkv_attention(const at::Tensor&, int64_t, int64_t, const at::Tensor&, int64_t, at::Tensor&,
                                    at::Tensor&, const at::Tensor&) {
  return {};
}
at::Tensor try_decode_qkv_to_cache(const at::Tensor&, int64_t, int64_t, const at::Tensor&, const at::Tensor&,
                                   const at::Tensor&, at::Tensor&, at::Tensor&, const at::Tensor&) {
  return {};
}

}  // namespace fused::cuda_ops

// ---- the input pipeline's GPU stage (gpu_jpeg_stage.h): never opened ----------------------------------------------

std::unique_ptr<GpuJpegStage> GpuJpegStage::open(const Options& /*options*/, std::string& why) {
  why = "this gpubench was built without nvcc, so without the GPU crop kernel";
  return nullptr;
}

// ---- the whole decode step as one kernel (decode/decode_step_ops.h): never made ----------------------------------

namespace fused {
struct DecodeStep::State {};
DecodeStep::~DecodeStep() = default;
std::unique_ptr<DecodeStep> DecodeStep::make(const DecodeStepWeights& /*w*/, std::string* why) {
  if (why != nullptr) *why = "a build without gpubench's CUDA kernels";
  return nullptr;
}
at::Tensor DecodeStep::step(at::Tensor& /*token*/, const at::Tensor& /*pos*/, int64_t /*window*/) { return {}; }
const at::Tensor& DecodeStep::logits() const {
  static const at::Tensor none;
  return none;
}
}  // namespace fused

}  // namespace gpubench::engine
