#include "models/layers.h"

#include "models/decoder.h"

#include <cmath>
#include <limits>

namespace gpubench::models {

at::Tensor linear(const torch::nn::Linear& l, const at::Tensor& x) {
  if (const engine::fp8::Plan* plan = engine::fp8::active_plan()) {
    if (engine::fp8::LinearState* state = plan->find(l.get())) {
      return engine::fp8::linear(x, l->weight, l->bias, plan->recipe(), state, plan->input_memo());
    }
  }
  return at::linear(x, l->weight, l->bias);
}

std::vector<engine::fp8::Plan::Layer> fp8_candidates(const torch::nn::Module& model) {
  std::vector<engine::fp8::Plan::Layer> out;
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    const torch::nn::Module* m = item.value().get();
    if (const auto* l = dynamic_cast<const torch::nn::LinearImpl*>(m)) {
      out.push_back({item.key(), l, l->weight.size(1), l->weight.size(0), l->weight});
    } else if (const auto* c = dynamic_cast<const Conv1DImpl*>(m)) {
      out.push_back({item.key(), c, c->weight.size(0), c->weight.size(1), c->weight.t()});
    }
  }
  return out;
}

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& keep_mask,
                     double dropout_p, bool math, bool causal) {
  const bool grouped = k.size(1) != q.size(1);
  if (!math) {
    return at::scaled_dot_product_attention(q, k, v, keep_mask.defined() ? std::optional<at::Tensor>(keep_mask)
                                                                           : std::nullopt,
                                            dropout_p, causal, std::nullopt, /*enable_gqa=*/grouped);
  }
  const int64_t groups = q.size(1) / k.size(1);
  const at::Tensor kk = grouped ? k.repeat_interleave(groups, 1) : k;
  const at::Tensor vv = grouped ? v.repeat_interleave(groups, 1) : v;
  at::Tensor scores = at::matmul(q, kk.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  const float minus_inf = -std::numeric_limits<float>::infinity();
  if (keep_mask.defined()) scores = scores.masked_fill(keep_mask.logical_not(), minus_inf);
  if (causal) {
    const at::Tensor future = at::ones({q.size(2), kk.size(2)}, q.options().dtype(at::kBool)).triu(1);
    scores = scores.masked_fill(future, minus_inf);
  }
  at::Tensor probs = at::softmax(scores, -1);
  if (dropout_p > 0) probs = at::dropout(probs, dropout_p, /*train=*/true);
  return at::matmul(probs, vv);
}

at::Tensor split_heads(const at::Tensor& x, int64_t heads) {
  return x.view({x.size(0), x.size(1), heads, x.size(2) / heads}).transpose(1, 2);
}

at::Tensor merge_heads(const at::Tensor& x) {
  return x.transpose(1, 2).reshape({x.size(0), x.size(2), x.size(1) * x.size(3)});
}

}  // namespace gpubench::models
