#pragma once
// The Stable Diffusion v1.5 UNet as diffusers' UNet2DConditionModel with the SD 1.5 config (859,520,964 parameters),
// module names matching its state dict: conv_in, time_embedding, down_blocks, mid_block, up_blocks, conv_norm_out,
// conv_out.

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <array>
#include <functional>

namespace gpubench::models {

struct UNetOptions {
  std::array<int64_t, 4> channels{320, 640, 1280, 1280};  ///< block_out_channels
  int64_t layers_per_block = 2;
  int64_t heads = 8;            ///< SD 1.5's attention_head_dim=8 is the head count; head dim = C / 8
  int64_t cross_dim = 768;      ///< text-encoder width (77 x 768 context)
  int64_t in_channels = 4, out_channels = 4;
  int64_t groups = 32;
  double dropout = 0.0;         ///< resnet dropout (0 in SD training configs)
  bool math_attention = false;
  /// kernels: fused: the transformer blocks' output projections with the residual add and the next LayerNorm, and
  /// GEGLU, as gpubench's fused operations (fused/fused_ops.h)
  bool fused = false;
  int64_t time_dim() const { return channels[0] * 4; }
};

class ResnetBlock2DImpl : public torch::nn::Module {
 public:
  ResnetBlock2DImpl(int64_t in, int64_t out, const UNetOptions& o);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& temb);

 private:
  torch::nn::GroupNorm norm1{nullptr}, norm2{nullptr};
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv_shortcut{nullptr};
  torch::nn::Linear time_emb_proj{nullptr};
  double dropout_;
};
TORCH_MODULE(ResnetBlock2D);

/// diffusers' Attention with to_q/to_k/to_v (no bias) and to_out.0 (bias); cross-attention when `context` is given.
class CrossAttentionImpl : public torch::nn::Module {
 public:
  CrossAttentionImpl(int64_t dim, int64_t context_dim, const UNetOptions& o);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& context);
  /// The attention before the output projection (to_out): [batch, tokens, dim].
  torch::Tensor attend(const torch::Tensor& x, const torch::Tensor& context);
  torch::nn::Linear to_out{nullptr};

 private:
  torch::nn::Linear to_q{nullptr}, to_k{nullptr}, to_v{nullptr};
  int64_t heads_;
  bool math_;
};
TORCH_MODULE(CrossAttention);

/// GroupNorm -> 1x1 proj_in -> BasicTransformerBlock (self-attn, cross-attn, GEGLU feed-forward) -> 1x1 proj_out
/// -> + input.
class Transformer2DImpl : public torch::nn::Module {
 public:
  Transformer2DImpl(int64_t dim, const UNetOptions& o);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& context);

 private:
  torch::nn::GroupNorm norm{nullptr};
  torch::nn::Conv2d proj_in{nullptr}, proj_out{nullptr};
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr}, norm3{nullptr};
  CrossAttention attn1{nullptr}, attn2{nullptr};
  torch::nn::Linear ff_proj{nullptr}, ff_out{nullptr};
  bool fused_;
};
TORCH_MODULE(Transformer2D);

/// A down, mid or up block: resnets, optional attentions, optional down/upsampler.
class UNetBlockImpl : public torch::nn::Module {
 public:
  std::vector<ResnetBlock2D> resnets;
  std::vector<Transformer2D> attentions;
  torch::nn::Conv2d sampler{nullptr};  ///< downsamplers.0.conv (stride 2) or upsamplers.0.conv (after nearest x2)
  bool upsample = false;
};
TORCH_MODULE(UNetBlock);

class UNet2DConditionImpl : public torch::nn::Module {
 public:
  explicit UNet2DConditionImpl(const UNetOptions& o = {});
  /// Predicted noise for latents `sample` [B,4,H,W] at integer `timesteps` [B] with text `context` [B,77,768].
  torch::Tensor forward(const torch::Tensor& sample, const torch::Tensor& timesteps, const torch::Tensor& context);

  /// Parameter count of each top-level part, in diffusers' order (for tests against MODELS.md).
  std::vector<std::pair<std::string, int64_t>> part_parameter_counts() const;

  /// A resnet (+ attention) unit of the UNet as a function of the tensors it reads.
  using Block = std::function<torch::Tensor(const std::vector<torch::Tensor>&)>;
  /// How each unit is run: directly by default; the registry swaps in gradient checkpointing.
  std::function<torch::Tensor(const Block&, const std::vector<torch::Tensor>&)> run_block =
      [](const Block& f, const std::vector<torch::Tensor>& in) { return f(in); };

 private:
  torch::Tensor time_embedding(const torch::Tensor& timesteps);
  UNetOptions o_;
  torch::nn::Conv2d conv_in{nullptr}, conv_out{nullptr};
  torch::nn::Linear linear_1{nullptr}, linear_2{nullptr};
  torch::nn::GroupNorm conv_norm_out{nullptr};
  std::vector<UNetBlock> down_, up_;
  UNetBlock mid_{nullptr};
};
TORCH_MODULE(UNet2DCondition);

/// Analytic forward multiply-accumulates for one latent of side `latent` with a 77-token context, split by kind.
struct UNetMacs {
  double conv = 0, linear = 0, attention = 0;
  double total() const { return conv + linear + attention; }
};
UNetMacs unet_forward_macs(const UNetOptions& o, int64_t latent, int64_t context_len = 77);

}  // namespace gpubench::models
