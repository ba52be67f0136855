#include "models/resnet.h"

#include <torch/nn/init.h>

#include "fused/fused_ops.h"

namespace gpubench::models {

namespace {
torch::nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, k).stride(stride).padding(pad).bias(false));
}
int64_t conv_out(int64_t in, int64_t k, int64_t stride, int64_t pad) { return (in + 2 * pad - k) / stride + 1; }

/// relu(bn(x) (+ z)), or bn(x) alone where not `relu`: BatchNorm2d's forward (its batch counter, momentum and eps)
/// with the add and the ReLU, as one fused operation (engine/fused/fused_ops.h), or as the module and ATen's ops
/// where not `fused`.
torch::Tensor bn_relu(torch::nn::BatchNorm2d& bn, const torch::Tensor& x, const torch::Tensor& z, bool fused,
                      bool relu = true) {
  if (!fused) {
    torch::Tensor y = bn(x);
    if (z.defined()) y += z;
    return relu ? y.relu_() : y;
  }
  const auto& o = bn->options;
  const bool training = bn->is_training();
  if (training && o.track_running_stats()) bn->num_batches_tracked += 1;
  // torchvision's 0.1; without a momentum, BatchNorm2d's cumulative average (1 / batches seen; a host read)
  const double momentum = o.momentum() ? *o.momentum()
                          : training && o.track_running_stats()
                              ? 1.0 / bn->num_batches_tracked.item<double>()
                              : 0.0;
  const bool batch_stats = training || !o.track_running_stats();
  return relu ? engine::fused::batch_norm_relu(x, z, bn->weight, bn->bias, bn->running_mean, bn->running_var,
                                               batch_stats, momentum, o.eps())
              : engine::fused::batch_norm(x, bn->weight, bn->bias, bn->running_mean, bn->running_var, batch_stats,
                                          momentum, o.eps());
}
}  // namespace

BottleneckImpl::BottleneckImpl(int64_t inplanes, int64_t planes, int64_t stride, bool with_downsample, bool fused)
    : fused_(fused) {
  // Registration order = torchvision's attribute order, so parameters enumerate identically.
  conv1 = register_module("conv1", conv(inplanes, planes, 1, 1, 0));
  bn1 = register_module("bn1", torch::nn::BatchNorm2d(planes));
  conv2 = register_module("conv2", conv(planes, planes, 3, stride, 1));
  bn2 = register_module("bn2", torch::nn::BatchNorm2d(planes));
  conv3 = register_module("conv3", conv(planes, planes * kExpansion, 1, 1, 0));
  bn3 = register_module("bn3", torch::nn::BatchNorm2d(planes * kExpansion));
  if (with_downsample) {
    shortcut_conv_ = conv(inplanes, planes * kExpansion, 1, stride, 0);
    shortcut_bn_ = torch::nn::BatchNorm2d(planes * kExpansion);
    downsample = register_module("downsample", torch::nn::Sequential(shortcut_conv_, shortcut_bn_));
  }
}

torch::Tensor BottleneckImpl::forward(torch::Tensor x) {
  // downsample's forward: its batch-norm (no ReLU) by the same kernels as the others where fused
  const torch::Tensor identity =
      downsample ? bn_relu(shortcut_bn_, shortcut_conv_(x), {}, fused_, /*relu=*/false) : x;
  torch::Tensor out = bn_relu(bn1, conv1(x), {}, fused_);
  out = bn_relu(bn2, conv2(out), {}, fused_);
  return bn_relu(bn3, conv3(out), identity, fused_);
}

ResNetImpl::ResNetImpl(const ResNetOptions& options) : fused_(options.fused) {
  conv1 = register_module("conv1", conv(3, 64, 7, 2, 3));
  bn1 = register_module("bn1", torch::nn::BatchNorm2d(64));
  layer1 = make_stage(64, options.layers[0], 1, "layer1");
  layer2 = make_stage(128, options.layers[1], 2, "layer2");
  layer3 = make_stage(256, options.layers[2], 2, "layer3");
  layer4 = make_stage(512, options.layers[3], 2, "layer4");
  fc = register_module("fc", torch::nn::Linear(512 * BottleneckImpl::kExpansion, options.num_classes));

  // torchvision: kaiming_normal_(fan_out, relu) for convs, BN weight 1 / bias 0, Linear keeps its default init.
  torch::NoGradGuard no_grad;
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* c = m->as<torch::nn::Conv2dImpl>()) {
      torch::nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
    } else if (auto* b = m->as<torch::nn::BatchNorm2dImpl>()) {
      torch::nn::init::ones_(b->weight);
      torch::nn::init::zeros_(b->bias);
    }
  }
}

torch::nn::Sequential ResNetImpl::make_stage(int64_t planes, int64_t blocks, int64_t stride,
                                             const std::string& name) {
  torch::nn::Sequential stage;
  const bool down = stride != 1 || inplanes_ != planes * BottleneckImpl::kExpansion;
  stage->push_back(Bottleneck(inplanes_, planes, stride, down, fused_));
  inplanes_ = planes * BottleneckImpl::kExpansion;
  for (int64_t i = 1; i < blocks; ++i) stage->push_back(Bottleneck(inplanes_, planes, 1, false, fused_));
  return register_module(name, stage);
}

torch::Tensor ResNetImpl::forward(torch::Tensor x) {
  x = bn_relu(bn1, conv1(x), {}, fused_);
  x = fused_ ? engine::fused::max_pool2d(x, /*kernel=*/3, /*stride=*/2, /*padding=*/1)
             : torch::max_pool2d(x, /*kernel_size=*/3, /*stride=*/2, /*padding=*/1);
  x = layer4->forward(layer3->forward(layer2->forward(layer1->forward(x))));
  x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
  return at::linear(x, fc->weight, fc->bias);  // as nn.Linear (addmm), see layers.h
}

int64_t resnet_forward_macs(const ResNetOptions& options, int64_t image_size) {
  int64_t macs = 0;
  int64_t h = conv_out(image_size, 7, 2, 3);
  macs += 64 * 3 * 7 * 7 * h * h;
  h = conv_out(h, 3, 2, 1);  // max pool
  int64_t inplanes = 64;
  const std::array<int64_t, 4> planes{64, 128, 256, 512};
  for (size_t s = 0; s < 4; ++s) {
    const int64_t p = planes[s];
    const int64_t out_planes = p * BottleneckImpl::kExpansion;
    for (int64_t b = 0; b < options.layers[s]; ++b) {
      const int64_t stride = (b == 0 && s > 0) ? 2 : 1;
      const int64_t ho = conv_out(h, 3, stride, 1);
      macs += inplanes * p * h * h;          // 1x1 reduce, at the input resolution
      macs += p * p * 9 * ho * ho;           // 3x3, strided
      macs += p * out_planes * ho * ho;      // 1x1 expand
      if (b == 0) macs += inplanes * out_planes * ho * ho;  // 1x1 downsample shortcut
      h = ho;
      inplanes = out_planes;
    }
  }
  macs += inplanes * options.num_classes;  // fc
  return macs;
}

}  // namespace gpubench::models
