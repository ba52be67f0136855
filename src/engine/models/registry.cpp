#include "models/registry.h"

#include "gpubench/core/check.hpp"

#include <torch/nn/functional/loss.h>

#include <algorithm>
#include <stdexcept>

#include "checkpoint.h"
#include "models/bert.h"
#include "models/resnet.h"
#include "models/unet.h"

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

  bool prefers_channels_last() const override { return true; }
  int64_t image_size() const override { return image_size_; }
  int64_t num_classes() const override { return options_.num_classes; }

 private:
  models::ResNet model_;
  models::ResNetOptions options_;
  int64_t image_size_;
};

/// Fine-tuning a sequence classifier: random token ids (no padding), uniform labels, cross-entropy.
class SequenceClassification final : public Workload {
 public:
  SequenceClassification(const models::BertOptions& o, int64_t seq_len, bool checkpointing)
      : model_(o), options_(o), seq_len_(seq_len) {
    if (checkpointing) {
      auto* m = model_.get();
      m->run_layer = [m](size_t i, const torch::Tensor& x, const torch::Tensor& keep) {
        return checkpoint([m, i, keep](const std::vector<at::Tensor>& in) { return m->layers[i]->forward(in[0], keep); },
                          {x});
      };
    }
  }

  std::shared_ptr<torch::nn::Module> module() override { return model_.ptr(); }

  Batch make_batch(int64_t batch_size, const torch::TensorOptions& options, torch::Generator& gen) override {
    Batch b;
    // Ids from 1: id 0 is [PAD]. Full-length sequences, so no attention mask is needed (as transformers drops an
    // all-ones mask before its SDPA call).
    b.inputs.push_back(at::randint(1, options_.vocab_size, {batch_size, seq_len_}, gen, options.dtype(torch::kLong)));
    b.target = at::randint(0, options_.num_labels, {batch_size}, gen, options.dtype(torch::kLong));
    return b;
  }

  torch::Tensor loss(const Batch& batch) override {
    return torch::nn::functional::cross_entropy(model_->forward(batch.inputs[0]), batch.target);
  }

  double train_flops_per_sample() const override { return models::bert_train_flops_per_sequence(options_, seq_len_); }
  double attention_train_flops_per_sample() const override {
    return models::bert_attention_train_flops_per_sequence(options_, seq_len_);
  }
  bool prefers_channels_last() const override { return false; }
  int64_t tokens_per_sample() const override { return seq_len_; }

 private:
  models::BertForSequenceClassification model_;
  models::BertOptions options_;
  int64_t seq_len_;
};

/// The SD fine-tuning objective on precomputed latents: x_t = sqrt(a_t) x0 + sqrt(1 - a_t) eps with the
/// scaled-linear schedule, random t, a 77 x 768 text context, MSE between predicted and true noise.
class LatentDiffusion final : public Workload {
 public:
  LatentDiffusion(const models::UNetOptions& o, int64_t latent, bool checkpointing)
      : model_(o), options_(o), latent_(latent) {
    if (checkpointing) {
      model_->run_block = [](const models::UNet2DConditionImpl::Block& f, const std::vector<at::Tensor>& in) {
        return checkpoint(f, in);
      };
    }
  }

  std::shared_ptr<torch::nn::Module> module() override { return model_.ptr(); }

  Batch make_batch(int64_t batch_size, const torch::TensorOptions& options, torch::Generator& gen) override {
    const auto f = options.dtype(torch::kFloat);
    const at::Tensor x0 = at::randn({batch_size, options_.in_channels, latent_, latent_}, gen, f);
    const at::Tensor noise = at::randn(x0.sizes(), gen, f);
    const at::Tensor context = at::randn({batch_size, 77, options_.cross_dim}, gen, f);
    const at::Tensor t = at::randint(0, 1000, {batch_size}, gen, options.dtype(torch::kLong));
    const at::Tensor betas = at::pow(at::linspace(std::sqrt(0.00085), std::sqrt(0.012), 1000, f), 2);
    const at::Tensor alpha_bar = at::cumprod(1 - betas, 0).index_select(0, t).view({batch_size, 1, 1, 1});
    Batch b;
    b.inputs = {at::sqrt(alpha_bar) * x0 + at::sqrt(1 - alpha_bar) * noise, t, context};
    b.target = noise;
    return b;
  }

  torch::Tensor loss(const Batch& batch) override {
    const at::Tensor pred = model_->forward(batch.inputs[0], batch.inputs[1], batch.inputs[2]);
    return torch::nn::functional::mse_loss(pred.to(torch::kFloat), batch.target);  // in fp32, as diffusers does
  }

  double train_flops_per_sample() const override {
    return 3.0 * 2.0 * models::unet_forward_macs(options_, latent_).total();
  }
  double attention_train_flops_per_sample() const override {
    return 3.0 * 2.0 * models::unet_forward_macs(options_, latent_).attention;
  }
  bool prefers_channels_last() const override { return false; }  // diffusers' training scripts keep NCHW

 private:
  models::UNet2DCondition model_;
  models::UNetOptions options_;
  int64_t latent_;
};

OptimizerSettings adamw(double lr, double weight_decay) {
  OptimizerSettings o;
  o.name = "adamw";
  o.lr = lr;
  o.weight_decay = weight_decay;
  return o;
}

// The models' own keys. Each declaration says the key's type, range, default and help; the loader validates files
// and flags by it, `--help` lists it under the model, and the engine fills in the default before the factory runs.
using Type = ModelOption::Type;

ModelOption int_option(std::string key, std::string flag, std::string help, int64_t lo, int64_t hi,
                       nlohmann::json def) {
  return ModelOption{std::move(key), std::move(flag), std::move(help), Type::kInt, static_cast<double>(lo),
                     static_cast<double>(hi), {}, std::move(def)};
}

// Keys bert-base and sd-unet share: reduced models for tests, the attention kernel, memory for time.
ModelOption attention_option() {
  return ModelOption{"attention", "--attention", "sdpa (fused kernels, default) | math (explicit softmax attention)",
                     Type::kChoice, 0, 0, {"sdpa", "math"}, "sdpa"};
}
ModelOption dropout_option() {
  return ModelOption{"dropout", "--dropout", "override the model's dropout probability, in [0, 0.999]",
                     Type::kFloat, 0, 0.999, {}, nullptr};
}
ModelOption checkpointing_option() {
  return ModelOption{"gradient_checkpointing", "--gradient-checkpointing",
                     "recompute each transformer layer / UNet block in backward to save memory (true/false)",
                     Type::kBool, 0, 0, {}, false};
}
ModelOption heads_option() {
  return int_option("heads", "--heads", "reduced model: attention heads", 1, 1024, nullptr);
}

/// A key the model declares with a default: always present once defaults are filled in.
template <typename T>
T required(const Scenario& s, const std::string& key) {
  const std::optional<T> v = s.option<T>(key);
  GPUBENCH_CHECK(v.has_value(), "model key '" + key + "' has no value although the model declares a default");
  return *v;
}

using Factory = std::function<std::unique_ptr<Workload>(const Scenario&)>;

/// A registry entry whose factory always sees the scenario resolved for its model (resolve_model_options): the
/// engine calls it so, and so may tests and library callers that call the factory directly.
ModelEntry entry(ModelInfo info, OptimizerSettings optimizer, Factory make) {
  ModelInfo described = info;
  return ModelEntry{std::move(described), std::move(optimizer),
                    [info = std::move(info), make = std::move(make)](const Scenario& s) {
                      return make(resolve_model_options(info, s));
                    }};
}

}  // namespace

Scenario resolve_model_options(const ModelInfo& info, Scenario s) {
  const std::vector<std::string> own = info.option_keys();
  for (const auto& [key, value] : s.model_options) {
    if (std::find(own.begin(), own.end(), key) == own.end()) {
      throw std::invalid_argument("key '" + key + "' is not a key of " + info.name);
    }
  }
  for (const auto& o : info.options) s.model_options.emplace(o.key, o.default_value);
  return s;
}

Batch slice_batch(const Batch& b, int64_t start, int64_t length) {
  Batch out;
  for (const auto& t : b.inputs) out.inputs.push_back(t.narrow(0, start, length));
  out.target = b.target.narrow(0, start, length);
  return out;
}

const std::vector<ModelEntry>& model_registry() {
  static const std::vector<ModelEntry> entries{
      entry(ModelInfo{"resnet50", "ResNet-50 v1.5 as torchvision's resnet50 (25.6M parameters), ImageNet-style",
                 "images", 256, "sgd",
                 {int_option("image_size", "--image-size", "input side in pixels (default 224)", 32, 4096, 224),
                  int_option("num_classes", "--num-classes", "number of classes (default 1000)", 2, 1 << 24, 1000)}},
       OptimizerSettings{"sgd", 0.1, 0.9, 1e-4, false, std::nullopt, std::nullopt, std::nullopt, ""},
       [](const Scenario& s) -> std::unique_ptr<Workload> {
         models::ResNetOptions o;
         o.num_classes = required<int64_t>(s, "num_classes");
         return std::make_unique<ImageClassification>(models::ResNet(o), o, required<int64_t>(s, "image_size"));
       }),
      entry(ModelInfo{"bert-base", "BERT-base fine-tuning as transformers' BertForSequenceClassification (109.5M parameters)",
                 "sequences", 32, "adamw",
                 {int_option("seq_len", "--seq-len", "tokens per sequence (default 128; at most 512)", 1, 512, 128),
                  int_option("num_labels", "--num-labels", "number of labels (default 2)", 2, 1 << 20, 2),
                  int_option("layers", "--layers", "reduced model: transformer layers (default 12)", 1, 1024, nullptr),
                  int_option("width", "--width", "reduced model: hidden size (default 768)", 8, 1 << 16, nullptr),
                  heads_option(), dropout_option(), attention_option(), checkpointing_option()}},
       adamw(2e-5, 0.01),
       [](const Scenario& s) -> std::unique_ptr<Workload> {
         models::BertOptions o;
         o.layers = s.option<int64_t>("layers").value_or(o.layers);
         o.hidden = s.option<int64_t>("width").value_or(o.hidden);
         o.intermediate = 4 * o.hidden;
         o.heads = s.option<int64_t>("heads").value_or(o.heads);
         o.num_labels = required<int64_t>(s, "num_labels");
         o.dropout = s.option<double>("dropout").value_or(o.dropout);
         o.math_attention = s.option<std::string>("attention") == "math";
         if (o.hidden % o.heads != 0) {
           throw std::invalid_argument("bert-base: width " + std::to_string(o.hidden) + " is not divisible by " +
                                       std::to_string(o.heads) + " heads");
         }
         const int64_t seq_len = required<int64_t>(s, "seq_len");
         if (seq_len > o.max_positions) {
           throw std::invalid_argument("bert-base: seq_len " + std::to_string(seq_len) + " exceeds its " +
                                       std::to_string(o.max_positions) + " positions");
         }
         return std::make_unique<SequenceClassification>(o, seq_len, required<bool>(s, "gradient_checkpointing"));
       }),
      entry(ModelInfo{"sd-unet", "Stable Diffusion v1.5 UNet as diffusers' UNet2DConditionModel (859.5M parameters), "
                            "latent-space fine-tuning",
                 "images", 16, "adamw",
                 {int_option("latent_size", "--latent-size",
                             "latent side, a multiple of 8; 64 for 512-px images (default 64)", 8, 1024, 64),
                  int_option("layers", "--layers", "reduced model: resnets per block (default 2)", 1, 1024, nullptr),
                  int_option("width", "--width", "reduced model: first block's channels (default 320)", 8, 1 << 16,
                             nullptr),
                  heads_option(), dropout_option(), attention_option(), checkpointing_option()}},
       adamw(1e-4, 1e-2),
       [](const Scenario& s) -> std::unique_ptr<Workload> {
         models::UNetOptions o;
         if (const auto w = s.option<int64_t>("width")) o.channels = {*w, 2 * *w, 4 * *w, 4 * *w};
         o.layers_per_block = s.option<int64_t>("layers").value_or(o.layers_per_block);
         o.heads = s.option<int64_t>("heads").value_or(o.heads);
         o.dropout = s.option<double>("dropout").value_or(o.dropout);
         o.math_attention = s.option<std::string>("attention") == "math";
         if (o.channels[0] % o.groups != 0 || o.channels[0] % o.heads != 0) {
           throw std::invalid_argument("sd-unet: width " + std::to_string(o.channels[0]) +
                                       " must be divisible by 32 (GroupNorm groups) and by the head count");
         }
         const int64_t latent = required<int64_t>(s, "latent_size");
         if (latent % 8 != 0) {
           throw std::invalid_argument("sd-unet: latent_size must be a multiple of 8 (three 2x downsamplings)");
         }
         return std::make_unique<LatentDiffusion>(o, latent, required<bool>(s, "gradient_checkpointing"));
       }),
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
