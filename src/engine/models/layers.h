#pragma once
// Layers shared by the models: linear layers as PyTorch's nn.Linear computes them, and the multi-head attention core
// (fused SDPA kernels or the plain math form).

#include <ATen/ATen.h>
#include <torch/nn/modules/linear.h>

#include <vector>

#include "fp8.h"

namespace gpubench::models {

/// `l`'s affine map as Python's nn.Linear computes it: at::linear, which folds a 3-D input into one addmm (bias
/// fused, AddmmBackward). The C++ frontend's Linear::forward instead does matmul and then `+= bias` for inputs of more
/// than two dimensions; on BERT-base bs 128 that cost 5.8 ms a step in strided fp32 gradient adds (docs/performance.md,
/// 2026-11-30), so the models call this, never `l(x)`. A layer that the thread's FP8 plan converts (fp8.h) runs
/// through fp8::linear instead.
at::Tensor linear(const torch::nn::Linear& l, const at::Tensor& x);

/// The Linear modules (and GPT-2's Conv1D ones) of `model`, with their names and shapes, for an FP8 plan.
std::vector<engine::fp8::Plan::Layer> fp8_candidates(const torch::nn::Module& model);

/// softmax(q k^T / sqrt(d) [+ mask]) v over [batch, heads, tokens, head_dim] tensors.
/// `keep_mask`: optional boolean [batch, 1, 1, keys], true where a key may be attended to.
/// `math`: the explicit matmul/softmax/matmul form instead of at::scaled_dot_product_attention (for comparison, and
/// for backends without fused kernels). Dropout on the attention weights applies only when `dropout_p` > 0.
/// `causal`: query i attends to keys 0..i only (decoders; no mask tensor is built for SDPA). Grouped-query attention
/// (k and v with fewer heads than q, a divisor of them) goes to SDPA's enable_gqa, or repeats k/v in the math form.
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& keep_mask,
                     double dropout_p, bool math, bool causal = false);

/// [batch, tokens, heads*head_dim] -> [batch, heads, tokens, head_dim]
at::Tensor split_heads(const at::Tensor& x, int64_t heads);
/// [batch, heads, tokens, head_dim] -> [batch, tokens, heads*head_dim]
at::Tensor merge_heads(const at::Tensor& x);

}  // namespace gpubench::models
