#pragma once
// `kernels: fused`: the transformer workloads' fused operations as autograd functions. Each computes the same
// mathematics as its ATen composition (tests hold them to it) in fewer passes over memory: on CUDA with gpubench's
// kernels (fused_kernels.cu), elsewhere with ATen operations in one autograd node (the CPU form; the record says
// which ran).

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "gpubench/core/record/run_record.hpp"

namespace gpubench::engine::fused {

/// Whether gpubench's CUDA kernels were compiled into this build (nvcc was found).
bool cuda_kernels_compiled();

/// The LM head and its loss in one: mean over the counted tokens of cross_entropy(h @ weight^T, targets), ignoring
/// `ignore_index`, as transformers' ForCausalLMLoss computes it (fp32 softmax of the compute-dtype logits). The
/// logits are never kept in fp32: on CUDA, bf16/fp16 logits with the vocabulary padded to a multiple of 64 (so every
/// GEMM is aligned), the loss and its gradient by one kernel, in place; on the CPU, in chunks of `chunk_rows` tokens.
/// `h` [tokens, hidden], `weight` [vocab, hidden], `targets` [tokens]. Under autocast the GEMMs run in its dtype.
at::Tensor linear_cross_entropy(const at::Tensor& h, const at::Tensor& weight, const at::Tensor& targets,
                                int64_t ignore_index = -100, int64_t chunk_rows = 4096);

/// silu(gate) * up (Llama's MLP), one kernel forward and one backward on CUDA.
at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up);

/// Rotary embeddings on q [batch, seq, q_heads, head_dim] and k [batch, seq, k_heads, head_dim] (both contiguous)
/// with `cos`, `sin` [seq, head_dim]: x * cos + rotate_half(x) * sin for both, in one kernel each way on CUDA.
std::pair<at::Tensor, at::Tensor> rotary(const at::Tensor& q, const at::Tensor& k, const at::Tensor& cos,
                                         const at::Tensor& sin);

/// BERT's sub-layer output, LayerNorm(dropout(h @ weight^T + bias) + residual) with `gamma`, `beta`, `eps`, dropout
/// with probability `p` (0: none), as BertSelfOutput and BertOutput compute it. The result (and so the residual
/// stream) is in the compute dtype: autocast's, else the weight's. On CUDA the linear layer is cuBLAS with its bias in
/// the epilogue and the rest one kernel each way (dropout from the CUDA generator's Philox stream; the backward pass
/// also sums the gamma, beta and bias gradients); elsewhere, or for rows longer than the kernels take, ATen's
/// native_dropout, add and native_layer_norm in the same autograd node.
at::Tensor linear_dropout_add_layer_norm(const at::Tensor& h, const at::Tensor& weight, const at::Tensor& bias,
                                         const at::Tensor& residual, const at::Tensor& gamma, const at::Tensor& beta,
                                         double p, double eps);

/// The pre-LayerNorm form (the SD UNet's transformer blocks): {s, LayerNorm(s)} with the residual stream
/// s = residual + dropout(h @ weight^T + bias) (`bias` may be undefined), both in the compute dtype, by the same
/// kernels as linear_dropout_add_layer_norm; the backward pass adds the stream's own gradient in its one pass.
std::pair<at::Tensor, at::Tensor> linear_residual_layer_norm(const at::Tensor& h, const at::Tensor& weight,
                                                             const at::Tensor& bias, const at::Tensor& residual,
                                                             const at::Tensor& gamma, const at::Tensor& beta,
                                                             double p, double eps);

/// Llama's pre-norm step: {s, RMSNorm(s) * gamma} with the residual stream s = residual + y, both in the compute
/// dtype (autocast's, else gamma's), y and residual of one shape [..., n]. On CUDA one kernel each way (rows of up to
/// 8,192); elsewhere ATen's operations in the same autograd node.
std::pair<at::Tensor, at::Tensor> residual_rms_norm(const at::Tensor& y, const at::Tensor& residual,
                                                    const at::Tensor& gamma, double eps);

/// GPT-2's MLP sub-layer with the residual add and the next LayerNorm: {s, LayerNorm(s)} with the residual stream
/// s = residual + dropout(gelu_tanh(a w_fc^T + b_fc) w_proj^T + b_proj), both in the compute dtype. w_fc [inner, hidden]
/// and w_proj [hidden, inner] in either dense layout (GPT-2's Conv1D weights transposed are fine). On CUDA in
/// bf16/fp16: c_fc by cuBLASLt with bias and GELU in its epilogue, keeping the pre-activation; backward, GELU's
/// derivative and c_fc's bias gradient in the epilogue of the GEMM that gives c_fc's output gradient (DGELU_BGRAD);
/// the residual add and the LayerNorm by the same kernels as linear_residual_layer_norm. Where cuBLASLt declines, a
/// GEMM and gpubench's GELU kernels compute the same (the record says which ran).
std::pair<at::Tensor, at::Tensor> mlp_residual_layer_norm(const at::Tensor& a, const at::Tensor& w_fc,
                                                          const at::Tensor& b_fc, const at::Tensor& w_proj,
                                                          const at::Tensor& b_proj, const at::Tensor& residual,
                                                          const at::Tensor& gamma, const at::Tensor& beta, double p,
                                                          double eps);

/// GEGLU (diffusers' GEGLU after its projection): x [..., 2m] = (a, gate) -> a * gelu(gate) [..., m], exact GELU; one
/// kernel each way on CUDA.
at::Tensor geglu(const at::Tensor& x);

/// gelu(h @ weight^T + bias), exact (erf) or with `tanh_approx`, in the compute dtype: cuBLAS with the bias in its
/// epilogue and ATen's GELU forward; backward, GELU's gradient and the bias gradient in one kernel on CUDA.
at::Tensor linear_gelu(const at::Tensor& h, const at::Tensor& weight, const at::Tensor& bias, bool tanh_approx);

/// BERT's query, key and value projections of one input x [..., in] (weights [out_i, in], biases [out_i]), each in the
/// compute dtype. Forward, three cuBLAS GEMMs with the bias in the epilogue; backward, the input gradient accumulated
/// in one buffer by the three GEMMs (no adds), the weight gradients written in fp32, and on CUDA the bias gradients
/// by gpubench's column-sum kernel.
std::vector<at::Tensor> linear_qkv(const at::Tensor& x, const at::Tensor& wq, const at::Tensor& bq,
                                   const at::Tensor& wk, const at::Tensor& bk, const at::Tensor& wv,
                                   const at::Tensor& bv);

/// ResNet's batch-norm and ReLU, with the residual `z` added before the ReLU where defined (torchvision's
/// Bottleneck: relu(bn3(conv3(out)) + identity)): relu(batch_norm(x) + z). In training on CUDA, for channels-last
/// [N, C, H, W] tensors with C a multiple of 8 (bf16, fp16 or fp32; z of x's shape, dtype and layout), gpubench's
/// kernels (batch_norm_kernels.cu): statistics, then the output in one pass; backward, two passes giving the input's,
/// the residual's, the scale's and the shift's gradients. Running statistics as BatchNorm2d keeps them (momentum,
/// unbiased variance). Elsewhere (the CPU, evaluation, NCHW tensors) ATen's batch_norm, add and relu: the record
/// says which ran, and describe_after_run why a CUDA call did not take the kernels.
at::Tensor batch_norm_relu(const at::Tensor& x, const at::Tensor& z, const at::Tensor& weight, const at::Tensor& bias,
                           const at::Tensor& running_mean, const at::Tensor& running_var, bool training,
                           double momentum, double eps);

/// The downsample shortcuts' batch_norm(x) alone (no add, no ReLU), by the same kernels where they run.
at::Tensor batch_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                      const at::Tensor& running_mean, const at::Tensor& running_var, bool training, double momentum,
                      double eps);

/// ResNet's stem max pool (a kernel x kernel window at `stride`, `padding`; ATen's max_pool2d semantics, floor mode):
/// on CUDA for channels-last tensors with C a multiple of 8, gpubench's kernels, the forward pass keeping each
/// maximum's window position as one byte and the backward pass gathering each input's gradient from the windows that
/// chose it; elsewhere ATen's max_pool2d.
at::Tensor max_pool2d(const at::Tensor& x, int64_t kernel, int64_t stride, int64_t padding);

/// The first reason a training call of batch_norm_relu or batch_norm, or a call of max_pool2d, on a CUDA device ran
/// ATen's form in this run, or "" (describe_after_run).
std::string batch_norm_declined();
void forget_batch_norm_declined();  ///< (begin_run's part for ResNet's operations)

/// (Each computes and returns in compute_dtype (precision.h) of its weight: autocast's dtype, else the weight's.)

/// How each of `names` runs on `device` under `options` (the scenario's kernel_options), for the record
/// (execution.fusions): fusion_catalog.cpp.
std::vector<FusionRecord> describe(const std::vector<std::string>& names, const at::Device& device,
                                   const KernelOptions& options = {});

/// Before a run: forgets what earlier runs in this process found (the fallbacks describe_after_run reports are
/// this run's: `run --repeat` runs several in one process).
void begin_run();

/// After a run: adds to `fusions` what only running could tell (whether cuBLASLt took the MLP's epilogues, and if
/// not, why). Returns a note for the record where an operation ran other than described, else "".
std::string describe_after_run(std::vector<FusionRecord>& fusions);

}  // namespace gpubench::engine::fused
