// `data: folder` through the engine: a generated JPEG folder trains a (small) ResNet-50, and the record carries the
// data set, the decoder and each epoch's input-pipeline figures; bad folders and impossible requests are failed
// records with a reason, never crashes.

#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/temp_dir.h"
#include "gpubench/core/record/metric_catalog.hpp"
#include "gpubench/data/synthetic_images.hpp"
#include "gpubench/engine/engine.hpp"

namespace gpubench {
namespace {

namespace fs = std::filesystem;

/// 24 generated images in 3 classes.
struct Folder {
  testing::TempDir tmp{"input"};
  fs::path root = tmp.path() / "set";
  explicit Folder(int64_t images = 24) {
    data::SynthOptions o;
    o.images = images;
    o.classes = 3;
    o.threads = 2;
    data::make_synthetic_dataset(root.string(), o);
  }
};

Scenario folder_run(const fs::path& root, const std::string& device = "cpu") {
  Scenario s;
  s.model = "resnet50";
  s.device = device;
  s.model_options = {{"image_size", 32}, {"num_classes", 10}};
  s.batch_size = 4;
  s.epochs = 2;
  s.warmup_steps = 1;
  s.optimizer.name = "sgd";
  s.optimizer.lr = 0.01;
  s.time_budget_s = 600;
  s.data = "folder";
  s.data_path = root.string();
  s.data_workers = 2;
  return s;
}

double metric(const Metrics& m, const std::string& tag) {
  const Metric* x = find_metric(m, tag);
  return x != nullptr ? x->value : NAN;
}

TEST(InputPipeline, AFolderTrainsAndTheRecordDescribesThePipeline) {
  Folder f;
  RunObserver obs;
  const RunRecord r = run_benchmark(folder_run(f.root), obs, {});
  ASSERT_EQ(r.status, RunStatus::kOk) << r.reason;
  ASSERT_EQ(r.epochs.size(), 2u);
  for (const auto& e : r.epochs) {
    EXPECT_EQ(e.steps, 6);  // an epoch is one pass over the 24 images
    EXPECT_EQ(e.samples, 24);
    EXPECT_TRUE(std::isfinite(e.loss_first) && std::isfinite(e.loss_last));
    EXPECT_GE(metric(e.metrics, "input_wait_s"), 0.0);
    EXPECT_GE(metric(e.metrics, "input_wait_fraction"), 0.0);
    EXPECT_LE(metric(e.metrics, "input_wait_fraction"), 1.0);
    EXPECT_GT(metric(e.metrics, "loader_img_per_s"), 0.0);
    EXPECT_EQ(metric(e.metrics, "files_skipped"), 0.0);
    EXPECT_GE(metric(e.metrics, "page_cache_fraction"), 0.0);
  }
  EXPECT_FALSE(std::isnan(metric(r.summary.metrics, "input_wait_fraction")));
  ASSERT_TRUE(r.data.has_value());
  EXPECT_EQ(r.data->source, "folder");
  EXPECT_EQ(r.data->images, 24);
  EXPECT_EQ(r.data->classes, 3);
  EXPECT_EQ(r.data->decode, "cpu");
  EXPECT_EQ(r.data->workers, 2);
  EXPECT_NE(r.data->decoder.find("libjpeg-turbo"), std::string::npos) << r.data->decoder;
  EXPECT_NE(r.data->decode_fallback.find("CUDA device"), std::string::npos);  // auto on a CPU run
  EXPECT_EQ(r.data->decode_reason, "decode: auto: the CPU (no CUDA device for nvJPEG)");
  EXPECT_NE(r.data->augmentation.find("RandomResizedCrop"), std::string::npos);
}

TEST(InputPipeline, CorruptFilesAreSkippedCountedAndNamed) {
  Folder f(22);  // with the two bad files, 24: one epoch of 6 batches visits every file
  const fs::path cls = f.root / data::synthetic_class_name(2);
  { std::ofstream(cls / "empty.jpg"); }
  { std::ofstream(cls / "text.jpeg") << "not an image"; }
  RunObserver obs;
  Scenario s = folder_run(f.root);
  s.epochs = 1;
  const RunRecord r = run_benchmark(s, obs, {});
  ASSERT_EQ(r.status, RunStatus::kOk) << r.reason;
  ASSERT_TRUE(r.data.has_value());
  EXPECT_EQ(r.data->images, 24);
  EXPECT_EQ(r.data->files_skipped, 2);
  ASSERT_EQ(r.data->skipped_examples.size(), 2u);
  EXPECT_EQ(metric(r.epochs[0].metrics, "files_skipped"), 2.0);
  EXPECT_EQ(r.epochs[0].samples, 24);  // the bad files' places went to good ones: every batch is full
}

TEST(InputPipeline, WarmUpAndProfileLongerThanAnEpochTakeSeveralPasses) {
  Folder f(8);  // two batches of 4 per pass
  RunObserver obs;
  Scenario s = folder_run(f.root);
  s.epochs = 1;
  s.warmup_steps = 5;
  s.profile = true;
  s.profile_steps = 4;
  const RunRecord r = run_benchmark(s, obs, {});
  ASSERT_EQ(r.status, RunStatus::kOk) << r.reason;
  EXPECT_EQ(r.epochs[0].steps, 2);
  ASSERT_TRUE(r.profile.has_value());
  EXPECT_EQ(r.profile->steps, 4);
}

TEST(InputPipeline, DataOnlyTimesTheLoaderWithoutAModelStep) {
  Folder f;
  RunObserver obs;
  Scenario s = folder_run(f.root);
  s.data_only = true;
  s.epochs = 1;
  const RunRecord r = run_benchmark(s, obs, {});
  ASSERT_EQ(r.status, RunStatus::kOk) << r.reason;
  EXPECT_EQ(r.model.train_flops_per_sample, 0);
  EXPECT_EQ(r.summary.achieved_tflops, 0);
  EXPECT_EQ(r.epochs[0].steps, 6);
  EXPECT_EQ(r.epochs[0].loss_first, 0);  // no loss: nothing trained
  ASSERT_TRUE(r.data.has_value());
  EXPECT_TRUE(r.data->data_only);
}

TEST(InputPipeline, ImpossibleRequestsAreFailedRecordsWithTheReason) {
  Folder f(8);
  RunObserver obs;
  Scenario big = folder_run(f.root);
  big.batch_size = 16;  // more than the folder's 8 images
  RunRecord r = run_benchmark(big, obs, {});
  EXPECT_EQ(r.status, RunStatus::kFailed);
  EXPECT_NE(r.reason.find("fewer than one batch"), std::string::npos) << r.reason;

  Scenario bert = folder_run(f.root);
  bert.model = "bert-base";
  bert.model_options = {{"layers", 1}, {"width", 32}, {"heads", 2}, {"seq_len", 8}};
  r = run_benchmark(bert, obs, {});
  EXPECT_EQ(r.status, RunStatus::kFailed);
  EXPECT_NE(r.reason.find("image classifiers"), std::string::npos) << r.reason;

  Scenario classes = folder_run(f.root);
  classes.model_options["num_classes"] = 2;  // the folder has 3
  r = run_benchmark(classes, obs, {});
  EXPECT_EQ(r.status, RunStatus::kFailed);
  EXPECT_NE(r.reason.find("num_classes"), std::string::npos) << r.reason;

  if (!torch::cuda::is_available()) {
    for (const std::string decode : {"gpu", "mixed"}) {
      Scenario gpu = folder_run(f.root);
      gpu.decode = decode;
      r = run_benchmark(gpu, obs, {});
      EXPECT_EQ(r.status, RunStatus::kFailed);
      EXPECT_NE(r.reason.find("decode: " + decode + " uses nvJPEG, which needs a CUDA device"), std::string::npos)
          << r.reason;
    }
  }
}

TEST(InputPipeline, GpuDecodeTrainsAndAgreesWithTheCpuPath_CUDA) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  Folder f(64);
  RunObserver obs;
  for (const std::string decode : {"cpu", "gpu", "mixed"}) {
    Scenario s = folder_run(f.root, "cuda");
    s.decode = decode;
    s.batch_size = 16;
    const RunRecord r = run_benchmark(s, obs, {});
    ASSERT_EQ(r.status, RunStatus::kOk) << decode << ": " << r.reason;
    ASSERT_TRUE(r.data.has_value());
    EXPECT_EQ(r.epochs[0].samples, 64);
    EXPECT_FALSE(r.data->decode_calibration.has_value()) << decode << ": asked for, nothing to measure";
    if (decode == "mixed") {  // the split's share and the images it gave the workers are in each epoch's metrics
      EXPECT_EQ(r.data->decode, "mixed") << r.data->decode_fallback;
      bool share = false;
      for (const auto& m : r.epochs[1].metrics) share |= m.tag == "cpu_share" && m.value >= 0 && m.value <= 1;
      EXPECT_TRUE(share) << "epoch 2 records the workers' share";
    }
    EXPECT_TRUE(std::isfinite(r.epochs[1].loss_last));
  }
}

// decode: auto on a GPU measures the step, the workers and nvJPEG before the first epoch, records the figures and
// its reason, and trains on the path it chose (also with a CUDA graph, and with no step at all: data_only).
TEST(InputPipeline, AutoMeasuresThePathsBeforeTheFirstEpochAndRecordsWhy_CUDA) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  Folder f(320);  // 20 batches of 16 a pass: enough to time every path
  RunObserver obs;
  for (const char* variant : {"eager", "graph", "data_only"}) {
    Scenario s = folder_run(f.root, "cuda");
    s.decode = "auto";
    s.batch_size = 16;
    s.epochs = 1;
    s.graph = std::string(variant) == "graph";
    s.data_only = std::string(variant) == "data_only";
    const RunRecord r = run_benchmark(s, obs, {});
    ASSERT_EQ(r.status, RunStatus::kOk) << variant << ": " << r.reason;
    ASSERT_TRUE(r.data.has_value() && r.data->decode_calibration.has_value()) << variant;
    const DecodeCalibrationRecord& c = *r.data->decode_calibration;
    EXPECT_EQ(c.choice, r.data->decode) << variant;
    EXPECT_GT(c.cpu_img_per_s, 0) << variant;
    EXPECT_GT(c.seconds, 0) << variant;
    EXPECT_EQ(c.step_img_per_s > 0, !s.data_only) << variant;
    EXPECT_EQ(r.data->decode_reason.rfind("decode: auto (", 0), 0u) << r.data->decode_reason;
    if (c.gpu_backend.empty()) {  // nvJPEG not found: the CPU, and why
      EXPECT_EQ(r.data->decode, "cpu");
      EXPECT_FALSE(r.data->decode_fallback.empty());
    } else {
      EXPECT_GT(c.gpu_img_per_s, 0) << variant;
      EXPECT_NE(r.data->decoder.find(r.data->decode == "cpu" ? "worker threads" : "nvJPEG " + c.gpu_backend),
                std::string::npos)
          << r.data->decoder;
    }
    if (c.choice == "mixed") {
      EXPECT_GT(c.fed_mixed_img_per_s, 0) << "a split is chosen from its measured rate";
    }
    EXPECT_EQ(r.epochs[0].samples, 320) << variant;
    bool noted = false;
    for (const auto& n : r.notes) noted |= n == r.data->decode_reason;
    EXPECT_TRUE(noted) << "the choice is a note of the run too";
  }
}

}  // namespace
}  // namespace gpubench
