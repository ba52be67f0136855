#pragma once
// Multi-head attention core shared by BERT and the UNet: fused SDPA kernels or the plain math form.

#include <ATen/ATen.h>

namespace gpubench::models {

/// softmax(q k^T / sqrt(d) [+ mask]) v over [batch, heads, tokens, head_dim] tensors.
/// `keep_mask`: optional boolean [batch, 1, 1, keys], true where a key may be attended to.
/// `math`: the explicit matmul/softmax/matmul form instead of at::scaled_dot_product_attention (for comparison, and
/// for backends without fused kernels). Dropout on the attention weights applies only when `dropout_p` > 0.
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& keep_mask,
                     double dropout_p, bool math);

/// [batch, tokens, heads*head_dim] -> [batch, heads, tokens, head_dim]
at::Tensor split_heads(const at::Tensor& x, int64_t heads);
/// [batch, heads, tokens, head_dim] -> [batch, tokens, heads*head_dim]
at::Tensor merge_heads(const at::Tensor& x);

}  // namespace gpubench::models
