#include <gtest/gtest.h>

#include <set>

#include "gpubench/core/analysis/published.hpp"

namespace gpubench {
namespace {

RunRecord h200_resnet(int64_t batch, const std::string& precision, double rate) {
  RunRecord r;
  r.scenario.model = "resnet50";
  r.scenario.batch_size = batch;
  r.scenario.dataset_size = 25600;
  r.scenario.optimizer.name = "sgd";
  r.precision.resolved = precision;
  r.environment.device_name = "NVIDIA H200";
  r.model.sample_unit = "images";
  r.summary.samples_per_s = rate;
  return r;
}

TEST(PublishedTest, EveryCompiledInReferenceParsesWithAFigureAQuoteAndAUniqueId) {
  const auto& refs = published_references();
  ASSERT_GE(refs.size(), 14u);
  std::set<std::string> ids;
  for (const auto& r : refs) {
    EXPECT_TRUE(ids.insert(r.id).second) << "duplicate id " << r.id;
    EXPECT_FALSE(r.quote.empty()) << r.id;
    EXPECT_TRUE(r.implied_samples_per_s().has_value()) << r.id;
  }
  const PublishedReference* r = find_published("published/seed000-rtx4090");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->batch_size, 128);  // from the file's recipe
  EXPECT_EQ(r->dataset_size, 100000);
  EXPECT_NEAR(*r->implied_samples_per_s(), 100000.0 / 47.0, 1e-9);
  EXPECT_NEAR(*find_published("seed004-rtx4070-sd")->implied_samples_per_s(), 18.7 * 32, 1e-9);  // it/s x batch
  EXPECT_EQ(find_published("seed999-nothing"), nullptr);
}

TEST(PublishedTest, ComparisonGivesThePercentAndNamesEveryRecipeDifference) {
  const PublishedComparison c = compare_with_published(*find_published("seed000-rtx4090"), h200_resnet(256, "bf16", 4255.3));
  ASSERT_TRUE(c.percent_of_published.has_value());
  EXPECT_NEAR(*c.percent_of_published, 4255.3 / (100000.0 / 47.0) * 100.0, 1e-9);
  EXPECT_NEAR(*c.measured_epoch_seconds, 100000.0 / 4255.3, 1e-9);
  std::string all;
  for (const auto& d : c.differences) all += d + "\n";
  for (const char* expected : {"device: NVIDIA H200 here, NVIDIA GeForce RTX 4090 published",
                               "precision: bf16 here, fp32 published", "batch size: 256 here, 128 published",
                               "dataset size: 25600", "data pipeline: one synthetic batch", "optimizer: sgd here"}) {
    EXPECT_NE(all.find(expected), std::string::npos) << expected << "\n" << all;
  }
  // Price-performance in the seed's unit, and its inconsistency with the seed's own numbers.
  EXPECT_DOUBLE_EQ(*c.published_price_performance, 13.2);
  EXPECT_NEAR(*c.recomputed_price_performance, (60.0 / 47.0) / 1.2999, 1e-9);
  ASSERT_FALSE(c.remarks.empty());
  EXPECT_NE(c.remarks[0].find("does not follow"), std::string::npos);
  EXPECT_NEAR(*c.published_joules_per_sample, 450.0 * 47.0 / 100000.0, 1e-12);
  EXPECT_FALSE(c.measured_price_performance.has_value());  // no CNY price for the H200 in the table
}

TEST(PublishedTest, AFolderRunSharesTheSeedsJpegPipelineASyntheticRunDoesNot) {
  RunRecord r = h200_resnet(128, "fp32", 2000);
  DataRecord d;
  d.source = "folder";
  d.decode = "gpu";
  d.images = 100000;
  r.data = d;
  PublishedComparison c = compare_with_published(*find_published("seed000-rtx4090"), r);
  ASSERT_EQ(c.same.size(), 2u);
  EXPECT_EQ(c.same[0], "mode: training on both sides");
  EXPECT_NE(c.same[1].find("data pipeline: JPEG files decoded and augmented every step here"), std::string::npos);
  for (const auto& diff : c.differences) EXPECT_EQ(diff.find("data pipeline"), std::string::npos) << diff;
  r.data.reset();
  c = compare_with_published(*find_published("seed000-rtx4090"), r);
  EXPECT_EQ(c.same.size(), 1u);  // the mode only
  std::string all;
  for (const auto& diff : c.differences) all += diff;
  EXPECT_NE(all.find("run with --data folder"), std::string::npos) << all;
}

TEST(PublishedTest, SameRecipeListsOnlyWhatCannotMatch) {
  RunRecord r = h200_resnet(128, "fp32", 2000);
  r.environment.device_name = "NVIDIA GeForce RTX 4090";
  r.scenario.dataset_size = 100000;
  const PublishedComparison c = compare_with_published(*find_published("seed000-rtx4090"), r);
  for (const auto& d : c.differences) {
    EXPECT_EQ(d.find("device:"), std::string::npos) << d;
    EXPECT_EQ(d.find("batch size"), std::string::npos) << d;
    EXPECT_EQ(d.find("dataset size"), std::string::npos) << d;
  }
  ASSERT_TRUE(c.measured_price_performance.has_value());  // the table has the RTX 4090's CNY price
  EXPECT_NEAR(*c.measured_price_performance, (60.0 / 50.0) / 1.2999, 1e-9);
}

TEST(PublishedTest, PublishedMixedPrecisionIsPyTorchAmpSoBf16IsADifferenceAndFp16IsNot) {
  const PublishedReference& amp = *find_published("seed000-rtx4090-amp");
  auto precision_differences = [&amp](const std::string& resolved) {
    RunRecord r = h200_resnet(128, "amp", 5600);
    r.precision.resolved = resolved;
    std::string all;
    for (const auto& d : compare_with_published(amp, r).differences) {
      if (d.rfind("precision:", 0) == 0) all += d + "\n";
    }
    return all;
  };
  EXPECT_EQ(precision_differences("fp16"), "");
  EXPECT_NE(precision_differences("bf16").find("bf16 autocast here, PyTorch AMP (fp16 autocast + GradScaler) published"),
            std::string::npos)
      << precision_differences("bf16");
  EXPECT_NE(precision_differences("fp32").find("fp32 here"), std::string::npos);
}

TEST(PublishedTest, MalformedDocumentsNameTheEntryAndKey) {
  EXPECT_THROW(parse_published("entries:\n  - id: x\n    device: d\n    model: m\n    quote: q\n"), std::runtime_error);
  try {
    parse_published("recipe: {dataset_size: 10}\nentries:\n  - id: x\n    device: d\n    model: m\n    quote: q\n"
                    "    epoch_seconds: soon\n");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("key 'epoch_seconds'"), std::string::npos) << e.what();
  }
}

TEST(PublishedTest, ASamplersItPerSecondIsComparedInInferenceModeStepForStep) {
  const PublishedReference& sd = *find_published("seed004-rtx4070-sd");
  EXPECT_EQ(sd.mode, "inference");
  EXPECT_EQ(find_published("seed004-rtx4070-resnet50")->mode, "train");
  RunRecord run = h200_resnet(1, "bf16", 65.0);
  run.scenario.model = "sd-unet";
  run.summary.steps_per_s = 65.0;
  // A training run beside it: named as not the same work.
  PublishedComparison t = compare_with_published(sd, run);
  std::string all;
  for (const auto& d : t.differences) all += d + "\n";
  EXPECT_NE(all.find("mode: training here, inference published: not the same work (run with --mode inference)"),
            std::string::npos) << all;
  // An inference run: the same mode, it/s against it/s, and no optimizer or data-pipeline difference.
  run.scenario.mode = "inference";
  run.model.step = "one denoising step";
  const PublishedComparison c = compare_with_published(sd, run);
  EXPECT_EQ(c.percent_basis, "it/s");
  EXPECT_NEAR(*c.percent_of_published, 65.0 / 18.7 * 100, 1e-9);
  EXPECT_DOUBLE_EQ(*c.measured_steps_per_s, 65.0);
  ASSERT_FALSE(c.same.empty());
  EXPECT_NE(c.same[0].find("mode: inference on both sides (here: one denoising step)"), std::string::npos) << c.same[0];
  all.clear();
  for (const auto& d : c.differences) all += d + "\n";
  EXPECT_EQ(all.find("mode:"), std::string::npos) << all;
  EXPECT_EQ(all.find("optimizer:"), std::string::npos) << all;
  EXPECT_EQ(all.find("data pipeline:"), std::string::npos) << all;
  EXPECT_NE(all.find("precision: bf16 here, fp16 published"), std::string::npos) << all;
  EXPECT_NE(all.find("batch size: 1 here, 32 published"), std::string::npos) << all;
  EXPECT_THROW(parse_published("entries:\n  - {id: x, device: d, model: m, quote: q, samples_per_s: 1, mode: serve}\n"),
               std::runtime_error);
}

}  // namespace
}  // namespace gpubench
