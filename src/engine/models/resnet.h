#pragma once
// ResNet-50 exactly as torchvision's `resnet50` ("v1.5": stride on the 3x3 conv), with the same module names,
// so a torchvision state dict maps onto it key for key (tests/engine/torchvision_parity_test.cpp checks this).

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <array>
#include <cstdint>

namespace gpubench::models {

/// 1x1 -> 3x3 (stride here) -> 1x1 with expansion 4, plus an identity or 1x1-conv+BN shortcut.
class BottleneckImpl : public torch::nn::Module {
 public:
  static constexpr int64_t kExpansion = 4;
  /// `fused`: batch-norm + ReLU and batch-norm + residual add + ReLU as fused operations (kernels: fused).
  BottleneckImpl(int64_t inplanes, int64_t planes, int64_t stride, bool downsample, bool fused = false);
  torch::Tensor forward(torch::Tensor x);

 private:
  bool fused_ = false;
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr};
  torch::nn::Sequential downsample{nullptr};
  // The shortcut's two modules, held (not registered again) so forward runs them through bn_relu on both paths.
  torch::nn::Conv2d shortcut_conv_{nullptr};
  torch::nn::BatchNorm2d shortcut_bn_{nullptr};
};
TORCH_MODULE(Bottleneck);

/// Options for a ResNet built from bottleneck blocks.
struct ResNetOptions {
  std::array<int64_t, 4> layers{3, 4, 6, 3};  ///< blocks per stage (ResNet-50)
  int64_t num_classes = 1000;
  bool fused = false;  ///< kernels: fused: the BN + ReLU and BN + add + ReLU passes as fused operations
};

class ResNetImpl : public torch::nn::Module {
 public:
  explicit ResNetImpl(const ResNetOptions& options = {});
  torch::Tensor forward(torch::Tensor x);

 private:
  torch::nn::Sequential make_stage(int64_t planes, int64_t blocks, int64_t stride, const std::string& name);
  int64_t inplanes_ = 64;
  bool fused_ = false;
  torch::nn::Conv2d conv1{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr};
  torch::nn::Sequential layer1{nullptr}, layer2{nullptr}, layer3{nullptr}, layer4{nullptr};
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(ResNet);

/// Forward multiply-accumulates of a bottleneck ResNet on one square image (conv and fc; BN, ReLU and pooling
/// excluded, as in the published 4.09 GMACs for ResNet-50 at 224x224).
int64_t resnet_forward_macs(const ResNetOptions& options, int64_t image_size);

}  // namespace gpubench::models
