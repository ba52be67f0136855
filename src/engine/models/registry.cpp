#include "models/registry.h"

#include <torch/nn/functional/loss.h>

#include <stdexcept>

#include "models/resnet.h"

namespace gpubench::engine {

namespace {

/// ImageNet-style classification: random normal images, uniform labels, cross-entropy.
class ImageClassification final : public Workload {
 public:
  ImageClassification(models::ResNet model, models::ResNetOptions options, int64_t image_size)
      : model_(std::move(model)), options_(options), image_size_(image_size) {}

  std::shared_ptr<torch::nn::Module> module() override { return model_.ptr(); }

  Batch make_batch(int64_t batch_size, const torch::TensorOptions& options, torch::Generator& gen) override {
    Batch b;
    b.inputs.push_back(at::randn({batch_size, 3, image_size_, image_size_}, gen, options.dtype(torch::kFloat)));
    b.target = at::randint(0, options_.num_classes, {batch_size}, gen, options.dtype(torch::kLong));
    return b;
  }

  torch::Tensor loss(const Batch& batch) override {
    return torch::nn::functional::cross_entropy(model_->forward(batch.inputs[0]), batch.target);
  }

  double train_flops_per_sample() const override {
    return 3.0 * 2.0 * static_cast<double>(models::resnet_forward_macs(options_, image_size_));
  }

  bool uses_images() const override { return true; }

 private:
  models::ResNet model_;
  models::ResNetOptions options_;
  int64_t image_size_;
};

}  // namespace

const std::vector<ModelEntry>& model_registry() {
  static const std::vector<ModelEntry> entries{
      {ModelInfo{"resnet50", "ResNet-50 v1.5 as torchvision's resnet50 (25.6M parameters), ImageNet-style",
                 "images", 256, "sgd"},
       [](const Scenario& s) -> std::unique_ptr<Workload> {
         models::ResNetOptions o;
         o.num_classes = s.num_classes;
         return std::make_unique<ImageClassification>(models::ResNet(o), o, s.image_size);
       }},
  };
  return entries;
}

const ModelEntry& find_model(const std::string& name) {
  std::string known;
  for (const auto& e : model_registry()) {
    if (e.info.name == name) return e;
    known += (known.empty() ? "" : ", ") + e.info.name;
  }
  throw std::invalid_argument("unknown model '" + name + "'; known models: " + known);
}

int64_t count_parameters(const torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) {
    if (p.requires_grad()) n += p.numel();
  }
  return n;
}

}  // namespace gpubench::engine
