#include "models/unet.h"

#include <cmath>

#include "fused/fused_ops.h"
#include "models/layers.h"
#include "precision.h"

namespace gpubench::models {

namespace {
torch::nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride = 1) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, k).stride(stride).padding(k / 2));
}
torch::nn::GroupNorm group_norm(int64_t groups, int64_t c, double eps) {
  return torch::nn::GroupNorm(torch::nn::GroupNormOptions(groups, c).eps(eps));
}
torch::nn::Linear make_linear(int64_t in, int64_t out, bool bias = true) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}
}  // namespace

ResnetBlock2DImpl::ResnetBlock2DImpl(int64_t in, int64_t out, const UNetOptions& o) : dropout_(o.dropout) {
  norm1 = register_module("norm1", group_norm(o.groups, in, 1e-5));
  conv1 = register_module("conv1", conv(in, out, 3));
  time_emb_proj = register_module("time_emb_proj", make_linear(o.time_dim(), out));
  norm2 = register_module("norm2", group_norm(o.groups, out, 1e-5));
  conv2 = register_module("conv2", conv(out, out, 3));
  if (in != out) conv_shortcut = register_module("conv_shortcut", conv(in, out, 1));
}

torch::Tensor ResnetBlock2DImpl::forward(const torch::Tensor& x, const torch::Tensor& temb) {
  torch::Tensor h = conv1(torch::silu(norm1(x)));
  h = h + models::linear(time_emb_proj, torch::silu(temb)).unsqueeze(-1).unsqueeze(-1);
  h = torch::silu(norm2(h));
  if (dropout_ > 0) h = torch::dropout(h, dropout_, is_training());
  h = conv2(h);
  return (conv_shortcut ? conv_shortcut(x) : x) + h;
}

CrossAttentionImpl::CrossAttentionImpl(int64_t dim, int64_t context_dim, const UNetOptions& o)
    : heads_(o.heads), math_(o.math_attention) {
  to_q = register_module("to_q", make_linear(dim, dim, false));
  to_k = register_module("to_k", make_linear(context_dim, dim, false));
  to_v = register_module("to_v", make_linear(context_dim, dim, false));
  auto out = register_module("to_out", std::make_shared<torch::nn::Module>());
  to_out = out->register_module("0", make_linear(dim, dim));
}

torch::Tensor CrossAttentionImpl::attend(const torch::Tensor& x, const torch::Tensor& context) {
  const torch::Tensor& kv = context.defined() ? context : x;
  return merge_heads(attention(split_heads(models::linear(to_q, x), heads_),
                               split_heads(models::linear(to_k, kv), heads_),
                               split_heads(models::linear(to_v, kv), heads_), torch::Tensor(), 0.0, math_));
}

torch::Tensor CrossAttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& context) {
  return models::linear(to_out, attend(x, context));
}

Transformer2DImpl::Transformer2DImpl(int64_t dim, const UNetOptions& o) : fused_(o.fused) {
  norm = register_module("norm", group_norm(o.groups, dim, 1e-6));
  proj_in = register_module("proj_in", conv(dim, dim, 1));
  torch::nn::ModuleList blocks;
  auto block = std::make_shared<torch::nn::Module>();
  blocks->push_back(block);
  register_module("transformer_blocks", blocks);
  norm1 = block->register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
  attn1 = block->register_module("attn1", CrossAttention(dim, dim, o));
  norm2 = block->register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
  attn2 = block->register_module("attn2", CrossAttention(dim, o.cross_dim, o));
  norm3 = block->register_module("norm3", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})));
  auto ff = block->register_module("ff", std::make_shared<torch::nn::Module>());
  auto net = ff->register_module("net", std::make_shared<torch::nn::Module>());
  auto geglu = net->register_module("0", std::make_shared<torch::nn::Module>());
  ff_proj = geglu->register_module("proj", make_linear(dim, dim * 8));  // GEGLU: 4*dim hidden, x2 for the gate
  ff_out = net->register_module("2", make_linear(dim * 4, dim));
  proj_out = register_module("proj_out", conv(dim, dim, 1));
}

torch::Tensor Transformer2DImpl::forward(const torch::Tensor& x, const torch::Tensor& context) {
  const int64_t b = x.size(0), c = x.size(1), hgt = x.size(2), wid = x.size(3);
  torch::Tensor h = proj_in(norm(x));
  h = h.permute({0, 2, 3, 1}).reshape({b, hgt * wid, c});
  if (fused_) {
    // Each attention's output projection, the residual add and the next LayerNorm in one operation (the stream and
    // the next sub-layer's input, both in the compute dtype), and GEGLU in one.
    namespace f = engine::fused;
    const at::Tensor n1 = norm1(h).to(engine::compute_dtype(h));
    auto [h1, n2] = f::linear_residual_layer_norm(attn1->attend(n1, torch::Tensor()), attn1->to_out->weight,
                                                  attn1->to_out->bias, h, norm2->weight, norm2->bias, 0.0,
                                                  norm2->options.eps());
    auto [h2, n3] = f::linear_residual_layer_norm(attn2->attend(n2, context), attn2->to_out->weight,
                                                  attn2->to_out->bias, h1, norm3->weight, norm3->bias, 0.0,
                                                  norm3->options.eps());
    h = models::linear(ff_out, f::geglu(models::linear(ff_proj, n3))) + h2;
  } else {
    h = attn1(norm1(h), torch::Tensor()) + h;
    h = attn2(norm2(h), context) + h;
    const auto parts = models::linear(ff_proj, norm3(h)).chunk(2, -1);
    h = models::linear(ff_out, parts[0] * torch::gelu(parts[1])) + h;
  }
  h = h.reshape({b, hgt, wid, c}).permute({0, 3, 1, 2}).contiguous(x.suggest_memory_format());
  return proj_out(h) + x;
}

UNet2DConditionImpl::UNet2DConditionImpl(const UNetOptions& o) : o_(o) {
  const auto& ch = o.channels;
  const int64_t nblocks = static_cast<int64_t>(ch.size());
  conv_in = register_module("conv_in", conv(o.in_channels, ch[0], 3));
  auto temb = register_module("time_embedding", std::make_shared<torch::nn::Module>());
  linear_1 = temb->register_module("linear_1", make_linear(ch[0], o.time_dim()));
  linear_2 = temb->register_module("linear_2", make_linear(o.time_dim(), o.time_dim()));

  // Down: CrossAttnDownBlock2D x3 + DownBlock2D; a stride-2 downsampler after all but the last.
  torch::nn::ModuleList downs;
  std::vector<int64_t> skips{ch[0]};
  int64_t cin = ch[0];
  for (int64_t i = 0; i < nblocks; ++i) {
    UNetBlock blk;
    torch::nn::ModuleList resnets, attentions;
    for (int64_t j = 0; j < o.layers_per_block; ++j) {
      blk->resnets.push_back(ResnetBlock2D(cin, ch[i], o));
      resnets->push_back(blk->resnets.back());
      cin = ch[i];
      if (i < nblocks - 1) {
        blk->attentions.push_back(Transformer2D(ch[i], o));
        attentions->push_back(blk->attentions.back());
      }
      skips.push_back(ch[i]);
    }
    if (!blk->attentions.empty()) blk->register_module("attentions", attentions);
    blk->register_module("resnets", resnets);
    if (i < nblocks - 1) {
      torch::nn::ModuleList samplers;
      auto d = std::make_shared<torch::nn::Module>();
      blk->sampler = d->register_module("conv", conv(ch[i], ch[i], 3, 2));
      samplers->push_back(d);
      blk->register_module("downsamplers", samplers);
      skips.push_back(ch[i]);
    }
    down_.push_back(blk);
    downs->push_back(blk);
  }
  register_module("down_blocks", downs);

  // Mid: resnet -> attention -> resnet at the deepest width.
  mid_ = UNetBlock();
  const int64_t deep = ch.back();
  mid_->attentions.push_back(Transformer2D(deep, o));
  mid_->resnets = {ResnetBlock2D(deep, deep, o), ResnetBlock2D(deep, deep, o)};
  torch::nn::ModuleList mid_att, mid_res;
  mid_att->push_back(mid_->attentions[0]);
  for (auto& r : mid_->resnets) mid_res->push_back(r);
  mid_->register_module("attentions", mid_att);
  mid_->register_module("resnets", mid_res);
  register_module("mid_block", mid_);

  // Up: UpBlock2D + CrossAttnUpBlock2D x3, layers_per_block + 1 resnets each over concatenated skips; nearest x2 +
  // conv upsampler after all but the last.
  torch::nn::ModuleList ups;
  int64_t prev = ch.back();
  for (int64_t i = 0; i < nblocks; ++i) {
    const int64_t out = ch[static_cast<size_t>(nblocks - 1 - i)];
    UNetBlock blk;
    blk->upsample = true;
    torch::nn::ModuleList resnets, attentions;
    for (int64_t j = 0; j <= o.layers_per_block; ++j) {
      const int64_t skip = skips.back();
      skips.pop_back();
      blk->resnets.push_back(ResnetBlock2D((j == 0 ? prev : out) + skip, out, o));
      resnets->push_back(blk->resnets.back());
      if (i > 0) {
        blk->attentions.push_back(Transformer2D(out, o));
        attentions->push_back(blk->attentions.back());
      }
    }
    if (!blk->attentions.empty()) blk->register_module("attentions", attentions);
    blk->register_module("resnets", resnets);
    if (i < nblocks - 1) {
      torch::nn::ModuleList samplers;
      auto u = std::make_shared<torch::nn::Module>();
      blk->sampler = u->register_module("conv", conv(out, out, 3));
      samplers->push_back(u);
      blk->register_module("upsamplers", samplers);
    }
    prev = out;
    up_.push_back(blk);
    ups->push_back(blk);
  }
  register_module("up_blocks", ups);

  conv_norm_out = register_module("conv_norm_out", group_norm(o.groups, ch[0], 1e-5));
  conv_out = register_module("conv_out", conv(ch[0], o.out_channels, 3));
}

torch::Tensor UNet2DConditionImpl::time_embedding(const torch::Tensor& timesteps) {
  // diffusers' Timesteps(flip_sin_to_cos=True, downscale_freq_shift=0): [cos, sin] of t * 10000^(-i/half).
  const int64_t half = o_.channels[0] / 2;
  const torch::Tensor exponent =
      torch::arange(half, torch::TensorOptions().dtype(torch::kFloat).device(timesteps.device())) *
      (-std::log(10000.0) / static_cast<double>(half));
  const torch::Tensor args = timesteps.to(torch::kFloat).unsqueeze(1) * torch::exp(exponent).unsqueeze(0);
  const torch::Tensor emb = torch::cat({torch::cos(args), torch::sin(args)}, 1);
  return models::linear(linear_2, torch::silu(models::linear(linear_1, emb)));
}

torch::Tensor UNet2DConditionImpl::forward(const torch::Tensor& sample, const torch::Tensor& timesteps,
                                           const torch::Tensor& context) {
  const torch::Tensor temb = time_embedding(timesteps);
  torch::Tensor x = conv_in(sample);
  std::vector<torch::Tensor> skips{x};
  for (auto& blk : down_) {
    for (size_t j = 0; j < blk->resnets.size(); ++j) {
      x = run_block(
          [&blk, j](const std::vector<torch::Tensor>& in) {
            torch::Tensor h = blk->resnets[j](in[0], in[1]);
            return blk->attentions.empty() ? h : blk->attentions[j](h, in[2]);
          },
          {x, temb, context});
      skips.push_back(x);
    }
    if (blk->sampler) {
      x = blk->sampler(x);
      skips.push_back(x);
    }
  }
  x = run_block(
      [this](const std::vector<torch::Tensor>& in) {
        torch::Tensor h = mid_->resnets[0](in[0], in[1]);
        return mid_->resnets[1](mid_->attentions[0](h, in[2]), in[1]);
      },
      {x, temb, context});
  for (auto& blk : up_) {
    for (size_t j = 0; j < blk->resnets.size(); ++j) {
      const torch::Tensor skip = skips.back();
      skips.pop_back();
      x = run_block(
          [&blk, j](const std::vector<torch::Tensor>& in) {
            torch::Tensor h = blk->resnets[j](torch::cat({in[0], in[3]}, 1), in[1]);
            return blk->attentions.empty() ? h : blk->attentions[j](h, in[2]);
          },
          {x, temb, context, skip});
    }
    if (blk->sampler) {
      x = blk->sampler(torch::upsample_nearest2d(x, std::vector<int64_t>{x.size(2) * 2, x.size(3) * 2}));
    }
  }
  return conv_out(torch::silu(conv_norm_out(x)));
}

std::vector<std::pair<std::string, int64_t>> UNet2DConditionImpl::part_parameter_counts() const {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& child : named_children()) {
    const auto& kids = child.value()->named_children();
    const bool is_list = child.key() == "down_blocks" || child.key() == "up_blocks";
    if (is_list) {
      for (const auto& k : kids) {
        int64_t n = 0;
        for (const auto& p : k.value()->parameters()) n += p.numel();
        out.emplace_back(child.key() + "." + k.key(), n);
      }
    } else {
      int64_t n = 0;
      for (const auto& p : child.value()->parameters()) n += p.numel();
      out.emplace_back(child.key(), n);
    }
  }
  return out;
}

UNetMacs unet_forward_macs(const UNetOptions& o, int64_t latent, int64_t ctx_len) {
  UNetMacs m;
  auto conv_macs = [&m](double cin, double cout, double k, double side) { m.conv += cin * cout * k * k * side * side; };
  auto resnet = [&](double cin, double cout, double side) {
    conv_macs(cin, cout, 3, side);
    m.linear += static_cast<double>(o.time_dim()) * cout;
    conv_macs(cout, cout, 3, side);
    if (cin != cout) conv_macs(cin, cout, 1, side);
  };
  auto transformer = [&](double c, double side) {
    const double n = side * side, ctx = static_cast<double>(ctx_len), cd = static_cast<double>(o.cross_dim);
    conv_macs(c, c, 1, side);                          // proj_in
    m.linear += 4 * n * c * c;                         // self-attention q, k, v, out
    m.attention += 2 * n * n * c;                      // QK^T and AV
    m.linear += 2 * n * c * c + 2 * ctx * cd * c;      // cross-attention q, out; k, v from the context
    m.attention += 2 * n * ctx * c;
    m.linear += n * c * 8 * c + n * 4 * c * c;         // GEGLU feed-forward
    conv_macs(c, c, 1, side);                          // proj_out
  };
  const auto& ch = o.channels;
  const size_t nb = ch.size();
  double side = static_cast<double>(latent);
  conv_macs(static_cast<double>(o.in_channels), static_cast<double>(ch[0]), 3, side);
  m.linear += static_cast<double>(ch[0]) * o.time_dim() + static_cast<double>(o.time_dim()) * o.time_dim();
  std::vector<double> skips{static_cast<double>(ch[0])};
  double cin = static_cast<double>(ch[0]);
  for (size_t i = 0; i < nb; ++i) {
    const double c = static_cast<double>(ch[i]);
    for (int64_t j = 0; j < o.layers_per_block; ++j) {
      resnet(cin, c, side);
      cin = c;
      if (i < nb - 1) transformer(c, side);
      skips.push_back(c);
    }
    if (i < nb - 1) {
      side /= 2;
      conv_macs(c, c, 3, side);
      skips.push_back(c);
    }
  }
  const double deep = static_cast<double>(ch.back());
  resnet(deep, deep, side);
  transformer(deep, side);
  resnet(deep, deep, side);
  double prev = deep;
  for (size_t i = 0; i < nb; ++i) {
    const double c = static_cast<double>(ch[nb - 1 - i]);
    for (int64_t j = 0; j <= o.layers_per_block; ++j) {
      const double skip = skips.back();
      skips.pop_back();
      resnet((j == 0 ? prev : c) + skip, c, side);
      if (i > 0) transformer(c, side);
    }
    prev = c;
    if (i < nb - 1) {
      side *= 2;
      conv_macs(c, c, 3, side);
    }
  }
  conv_macs(static_cast<double>(ch[0]), static_cast<double>(o.out_channels), 3, side);
  return m;
}

}  // namespace gpubench::models
