#include <gtest/gtest.h>

#include <torch/cuda.h>
#include <torch/torch.h>

#include <optional>

#include "fused/fused_ops.h"
#include "models/registry.h"
#include "models/resnet.h"
#include "precision.h"

namespace gpubench::engine {
namespace {

int64_t numel_of(const torch::nn::Module& m) { return count_parameters(m); }

TEST(ResNet50Test, HasTorchvisionsParameterCountPerStageAndInTotal) {
  models::ResNet net;
  EXPECT_EQ(numel_of(*net), 25'557'032);
  std::map<std::string, int64_t> per_top;
  for (const auto& p : net->named_parameters()) per_top[p.key().substr(0, p.key().find('.'))] += p.value().numel();
  EXPECT_EQ(per_top["conv1"], 9'408);
  EXPECT_EQ(per_top["bn1"], 128);
  EXPECT_EQ(per_top["layer1"], 215'808);
  EXPECT_EQ(per_top["layer2"], 1'219'584);
  EXPECT_EQ(per_top["layer3"], 7'098'368);
  EXPECT_EQ(per_top["layer4"], 14'964'736);
  EXPECT_EQ(per_top["fc"], 2'049'000);
}

TEST(ResNet50Test, Has53ConvolutionsAnd53BatchNormsWithTorchDefaults) {
  models::ResNet net;
  int convs = 0, bns = 0;
  for (const auto& m : net->modules(false)) {
    if (auto* c = m->as<torch::nn::Conv2dImpl>()) {
      ++convs;
      EXPECT_FALSE(c->options.bias());
    }
    if (auto* b = m->as<torch::nn::BatchNorm2dImpl>()) {
      ++bns;
      EXPECT_DOUBLE_EQ(b->options.eps(), 1e-5);
      EXPECT_DOUBLE_EQ(*b->options.momentum(), 0.1);
    }
  }
  EXPECT_EQ(convs, 53);
  EXPECT_EQ(bns, 53);
}

TEST(ResNet50Test, StrideSitsOnTheThreeByThreeConvolution) {
  models::ResNet net;
  const auto params = net->named_modules();
  auto* conv1 = params["layer2.0.conv1"]->as<torch::nn::Conv2dImpl>();
  auto* conv2 = params["layer2.0.conv2"]->as<torch::nn::Conv2dImpl>();
  ASSERT_NE(conv1, nullptr);
  ASSERT_NE(conv2, nullptr);
  EXPECT_EQ(conv1->options.stride()->at(0), 1);
  EXPECT_EQ(conv2->options.stride()->at(0), 2);  // v1.5
}

TEST(ResNet50Test, OutputHasOneLogitPerClass) {
  models::ResNetOptions o;
  o.num_classes = 10;
  models::ResNet net(o);
  net->eval();
  torch::NoGradGuard no_grad;
  const auto y = net->forward(torch::randn({2, 3, 64, 64}));
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{2, 10}));
}

TEST(ResNet50Test, ConvolutionsUseKaimingFanOutInitialisation) {
  torch::manual_seed(0);
  models::ResNet net;
  const auto w = net->named_parameters()["layer3.0.conv2.weight"];  // 256x256x3x3: fan_out = 256*9
  EXPECT_NEAR(w.std().item<double>(), std::sqrt(2.0 / (256 * 9)), 0.02 * std::sqrt(2.0 / (256 * 9)));
}

TEST(ResNet50Test, AnalyticFlopsMatchThePublishedCount) {
  EXPECT_EQ(models::resnet_forward_macs({}, 224), 4'089'184'256);
  Scenario s;
  auto w = find_model("resnet50").make(s);
  EXPECT_DOUBLE_EQ(w->train_flops_per_sample(), 3.0 * 2.0 * 4'089'184'256.0);
}

double rel_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).norm().item<double>() /
         (b.to(at::kDouble).norm().item<double>() + 1e-30);
}

/// Two ResNet-50s with the same weights, `kernels: fused` and not.
std::pair<models::ResNet, models::ResNet> twin_resnets(int64_t classes, const at::Device& device) {
  models::ResNetOptions o;
  o.num_classes = classes;
  torch::manual_seed(21);
  models::ResNet plain(o);
  o.fused = true;
  models::ResNet fused(o);
  {
    const torch::NoGradGuard no_grad;
    const auto from = plain->named_parameters();
    for (auto& p : fused->named_parameters()) p.value().copy_(from[p.key()]);
  }
  plain->to(device);
  fused->to(device);
  return {plain, fused};
}

/// Where gpubench's kernels do not run (the CPU here), the fused path is BatchNorm2d's own computation with the add
/// and the ReLU: the same outputs, gradients, running statistics and batch counts, bit for bit.
TEST(ResNet50Test, TheFusedPathComputesWhatTheModulesDoWhereItRunsAten) {
  auto [plain, fused] = twin_resnets(10, at::kCPU);
  const at::Tensor x = torch::randn({2, 3, 64, 64}).contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor y1 = plain->forward(x), y2 = fused->forward(x);
  EXPECT_TRUE(at::equal(y1, y2));
  y1.square().sum().backward();
  y2.square().sum().backward();
  const auto b1 = plain->named_buffers(), b2 = fused->named_buffers();
  for (const auto& b : b1) EXPECT_TRUE(at::equal(b.value(), b2[b.key()])) << b.key();
  EXPECT_EQ(b2["bn1.num_batches_tracked"].item<int64_t>(), 1);
  const auto g1 = plain->named_parameters();
  for (const auto& p : fused->named_parameters()) EXPECT_TRUE(at::equal(p.value().grad(), g1[p.key()].grad())) << p.key();
  plain->eval();
  fused->eval();
  const torch::NoGradGuard no_grad;
  EXPECT_TRUE(at::equal(plain->forward(x), fused->forward(x))) << "evaluation: the running statistics";
}

/// The kernels against ATen's batch_norm (+ add) (+ relu) computed in fp32 from the same inputs (each rounded to the
/// tested dtype first): the output, the running statistics, and the gradients of the input, the residual, the scale
/// and the shift, in fp32, bf16 and fp16, over ResNet's channel counts (64 at 56 x 56: many row splits; 2048 at
/// 7 x 7: many channel blocks), 24 (three channel lanes a block) and an input whose mean is 30 deviations from zero
/// (the statistics' shift); with the ReLU (and the residual) and without both (the shortcuts' batch_norm). The fp32
/// reference, not ATen's own bf16 path: that one rounds the normalised output before adding the residual, which moves
/// ReLU's mask near zero (the kernels round once). An NCHW tensor takes ATen's form and says why.
TEST(ResNet50Test, FusedBatchNormKernelsMatchAtenOnTheGpu_CUDA) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  if (!fused::cuda_kernels_compiled()) GTEST_SKIP() << "built without gpubench's kernels";
  fused::begin_run();  // the fallbacks asked about below are this test's
  const auto cuda = torch::TensorOptions().device(at::kCUDA);
  struct Case {
    std::vector<int64_t> shape;
    double offset;
  };
  const std::vector<Case> cases = {{{8, 64, 56, 56}, 0.5}, {{3, 2048, 7, 7}, 0.5}, {{2, 24, 9, 11}, 0.5},
                                   {{4, 128, 14, 14}, 60.0}};
  for (const auto dt : {at::kFloat, at::kBFloat16, at::kHalf}) {
    const double tol = dt == at::kFloat ? 1e-4 : dt == at::kHalf ? 4e-3 : 2e-2;
    for (const auto& [shape, offset] : cases) {
      // relu(bn(x)), relu(bn(x) + z), bn(x); the far-off mean without the ReLU only: the statistics are what it
      // tests, and the kernels' x scale + shift form carries fp32 errors of ~4e-6 in the output there (see
      // batch_norm_apply), which move a few outputs across zero and turn their whole gradient on or off under
      // the ReLU (2026-12-02 call 2: d shift 0.7 % off at fp32).
      for (const int form : offset > 1.0 ? std::vector<int>{2} : std::vector<int>{0, 1, 2}) {
        const bool residual = form == 1, relu = form != 2;
        torch::manual_seed(5);
        const int64_t c = shape[1];
        const auto cl = at::MemoryFormat::ChannelsLast;
        const at::Tensor x0 = (torch::randn(shape, cuda) * 2 + offset).to(dt).contiguous(cl);
        const at::Tensor z0 = torch::randn(shape, cuda).to(dt).contiguous(cl);
        const at::Tensor w0 = torch::rand({c}, cuda) + 0.5, b0 = torch::randn({c}, cuda);
        const at::Tensor dy = torch::randn(shape, cuda).to(dt).contiguous(cl);
        const at::Tensor rm0 = torch::randn({c}, cuda) * 0.1, rv0 = torch::rand({c}, cuda) + 1.0;
        std::vector<at::Tensor> got, ref;
        for (const bool kernels : {true, false}) {
          const at::ScalarType run = kernels ? dt : at::kFloat;
          // (clones: a same-dtype .to() returns the tensor itself, and the two paths must not share a leaf)
          at::Tensor x = x0.to(run).clone().requires_grad_(true), z = z0.to(run).clone().requires_grad_(true);
          at::Tensor w = w0.clone().requires_grad_(true), b = b0.clone().requires_grad_(true);
          at::Tensor rm = rm0.clone(), rv = rv0.clone();  // the same running statistics before, both paths
          at::Tensor y;
          if (kernels) {
            y = relu ? fused::batch_norm_relu(x, residual ? z : at::Tensor(), w, b, rm, rv, true, 0.1, 1e-5)
                     : fused::batch_norm(x, w, b, rm, rv, true, 0.1, 1e-5);
          } else {
            y = at::batch_norm(x, w, b, rm, rv, true, 0.1, 1e-5, true);
            if (residual) y = y + z;
            if (relu) y = y.relu();
          }
          y.backward(dy.to(run).contiguous(cl));
          std::vector<at::Tensor> out = {y.to(at::kFloat), rm, rv, x.grad().to(at::kFloat),
                                         residual ? z.grad().to(at::kFloat) : at::zeros({1}, cuda), w.grad(),
                                         b.grad()};
          (kernels ? got : ref) = std::move(out);
        }
        const char* names[] = {"output", "running mean", "running var", "d input", "d residual", "d scale", "d shift"};
        for (size_t i = 0; i < got.size(); ++i) {
          EXPECT_LT(rel_diff(got[i], ref[i]), tol) << names[i] << " " << c10::toString(dt) << " C " << c << " offset "
                                                   << offset << (residual ? " with residual" : "")
                                                   << (relu ? "" : " without ReLU");
        }
      }
    }
  }
  EXPECT_EQ(fused::batch_norm_declined(), "") << "every call above took the kernels";
  // (The reason is kept until the next begin_run: this NCHW call sets it for what follows in this process.)
  const at::Tensor nchw = torch::randn({2, 16, 4, 4}, cuda);
  const at::Tensor w = torch::ones({16}, cuda), b = torch::zeros({16}, cuda);
  const at::Tensor y = fused::batch_norm_relu(nchw, {}, w, b, {}, {}, true, 0.1, 1e-5);
  EXPECT_LT(rel_diff(y, at::batch_norm(nchw, w, b, {}, {}, true, 0.1, 1e-5, true).relu()), 1e-6);
  EXPECT_NE(fused::batch_norm_declined().find("channels-last"), std::string::npos) << fused::batch_norm_declined();
}

/// The max-pool kernels against ATen's max_pool2d on channels-last tensors: outputs and input gradients equal bit for
/// bit (the maximum is exact, ties go to the first in scan order, and the gradients are summed in fp32 in ATen's
/// order), on the stem's shape, an odd-sized input, a post-ReLU input full of ties (zeros), and a NaN.
TEST(ResNet50Test, MaxPoolKernelsEqualAtensOnTheGpu_CUDA) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  if (!fused::cuda_kernels_compiled()) GTEST_SKIP() << "built without gpubench's kernels";
  fused::begin_run();
  const auto cuda = torch::TensorOptions().device(at::kCUDA);
  for (const auto dt : {at::kFloat, at::kBFloat16, at::kHalf}) {
    for (const auto& shape : std::vector<std::vector<int64_t>>{{16, 64, 112, 112}, {3, 24, 13, 9}}) {
      for (const bool ties : {false, true}) {
        torch::manual_seed(9);
        at::Tensor x0 = torch::randn(shape, cuda).to(dt).contiguous(at::MemoryFormat::ChannelsLast);
        if (ties) x0 = x0.relu().contiguous(at::MemoryFormat::ChannelsLast);
        if (ties && shape[0] == 3) x0.index_put_({1, 5, 4, 4}, NAN);
        const at::Tensor dy = torch::randn({shape[0], shape[1], (shape[2] - 1) / 2 + 1, (shape[3] - 1) / 2 + 1}, cuda)
                                  .to(dt)
                                  .contiguous(at::MemoryFormat::ChannelsLast);
        at::Tensor a = x0.clone().requires_grad_(true), b = x0.clone().requires_grad_(true);
        const at::Tensor ya = fused::max_pool2d(a, 3, 2, 1), yb = at::max_pool2d(b, {3, 3}, {2, 2}, {1, 1});
        ya.backward(dy);
        yb.backward(dy);
        const std::string what = std::string(c10::toString(dt)) + (ties ? " with ties" : "") + " " +
                                 std::to_string(shape[2]) + "x" + std::to_string(shape[3]);
        EXPECT_TRUE(ya.is_contiguous(at::MemoryFormat::ChannelsLast)) << what;
        EXPECT_TRUE(at::equal(ya.nan_to_num(7.0), yb.nan_to_num(7.0))) << "output " << what;
        EXPECT_TRUE(at::equal(a.grad(), b.grad())) << "d input " << what << ": " << rel_diff(a.grad(), b.grad());
      }
    }
  }
  EXPECT_EQ(fused::batch_norm_declined(), "") << "every call above took the kernels";
}

/// A ResNet-50 (10 classes, 64-pixel images, channels-last, SGD with momentum) trained 200 steps on one batch: the
/// fused path in bf16 stays as close to the fp32 curve as ATen's bf16 path does (within twice ATen's largest
/// distance, or 5 % of the first loss), and its loss goes down. The fp32 curve is the yardstick because two bf16
/// curves need not agree step for step: the kernels round the normalised output once where ATen rounds it and then
/// the residual sum (on 2026-12-02, call 4, at lr 0.02 the fused and ATen bf16 curves parted by 2.7 times the first
/// loss somewhere). This form passed on the H200 (f77cd0e:results/2026-12-02-h200-resnet-fused-timing: fused 0.115 and 0.093
/// of the first loss from fp32 in calls 2 and 3, ATen 0.089 and 0.096).
TEST(ResNet50Test, FusedPathTrainsAsCloseToTheFp32CurveAsAtensBf16_CUDA) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  if (!fused::cuda_kernels_compiled()) GTEST_SKIP() << "built without gpubench's kernels";
  auto [plain, fused_net] = twin_resnets(10, at::kCUDA);  // channels-last input: cuDNN keeps the layout
  auto [reference, unused] = twin_resnets(10, at::kCUDA);
  torch::manual_seed(3);
  const auto cuda = torch::TensorOptions().device(at::kCUDA);
  const at::Tensor x = torch::randn({16, 3, 64, 64}, cuda).contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor t = torch::randint(0, 10, {16}, cuda.dtype(at::kLong));
  auto curve = [&](models::ResNet& net, std::optional<at::ScalarType> autocast_dtype) {
    torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.005).momentum(0.9));
    std::vector<double> losses;
    for (int step = 0; step < 200; ++step) {
      opt.zero_grad();
      at::Tensor loss;
      {
        AutocastScope autocast(at::kCUDA, autocast_dtype);
        loss = torch::nn::functional::cross_entropy(net->forward(x), t);
      }
      loss.backward();
      opt.step();
      losses.push_back(loss.item<double>());
    }
    return losses;
  };
  const auto r = curve(reference, std::nullopt), a = curve(plain, at::kBFloat16), f = curve(fused_net, at::kBFloat16);
  auto distance = [&](const std::vector<double>& c) {
    double worst = 0;
    for (size_t i = 0; i < c.size(); ++i) worst = std::max(worst, std::abs(c[i] - r[i]) / r[0]);
    return worst;
  };
  for (size_t i = 0; i < f.size(); ++i) ASSERT_TRUE(std::isfinite(f[i])) << "step " << i;
  const double fused_distance = distance(f), aten_distance = distance(a);
  std::cout << "resnet50 bf16 against fp32, largest loss difference relative to the first loss: fused "
            << fused_distance << ", aten " << aten_distance << "; every 20th step, fused/aten/fp32:";
  for (size_t i = 0; i < f.size(); i += 20) std::cout << " " << f[i] << "/" << a[i] << "/" << r[i];
  std::cout << "\n";
  EXPECT_LE(fused_distance, std::max(2 * aten_distance, 0.05));
  EXPECT_LT(f.back(), 0.5 * f.front());
}

TEST(ModelRegistryTest, UnknownModelListsTheKnownOnes) {
  try {
    find_model("vgg");
    FAIL() << "found a model that does not exist";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("resnet50"), std::string::npos);
  }
}

}  // namespace
}  // namespace gpubench::engine
