// mode: inference and the decoder models through the real binary: the console, the record, two ranks, refusals.

#include <nlohmann/json.hpp>

#include <map>
#include <set>

#include "cli/cli_fixture.h"

namespace gpubench {
namespace {

class InferenceCliTest : public CliTest {
 protected:
  static std::string tiny_gpt2() {
    return "run gpt2 --layers 1 --width 32 --heads 2 --vocab 64 --seq-len 16 --batch-size 2 --dataset-size 8 "
           "--epochs 1 --warmup-steps 1 --time-budget 300";
  }
};

TEST_F(InferenceCliTest, InferenceRunShowsItsStepAndLatencyAndRecordsNoLoss) {
  const std::string out = (dir_ / "inf.json").string();
  const Result r = gpubench(tiny_gpt2() + " --mode inference --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("batch 2, inference"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("inference, eager: one forward pass over whole sequences"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("per-batch latency p99 (ms)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("loss first"), std::string::npos) << "inference has no loss column\n" << r.out;
  EXPECT_NE(r.err.find("No GPU in use: inference on the CPU"), std::string::npos) << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(j["scenario"]["mode"], "inference");
  EXPECT_EQ(j["execution"]["optimizer_implementation"], "none");
  EXPECT_EQ(j["model"]["name"], "gpt2");
  EXPECT_EQ(j["model"]["tokens_per_sample"], 16);
  bool p90 = false;
  for (const auto& m : j["summary"]["metrics"]) p90 = p90 || m["tag"] == "latency_p90_ms";
  EXPECT_TRUE(p90);
}

TEST_F(InferenceCliTest, TwoRanksInferOnTheirShareOfTheEpoch) {
  const std::string out = (dir_ / "ddp.json").string();
  const Result r = gpubench(tiny_gpt2() + " --mode inference --nproc-per-node 2 --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(j["distributed"]["world_size"], 2);
  EXPECT_EQ(j["distributed"]["buckets"], 0);  // nothing to all-reduce
  EXPECT_EQ(j["epochs"][0]["steps"], 2);       // 8 sequences / (2 ranks x batch 2)
  EXPECT_EQ(j["epochs"][0]["samples"], 8);
}

TEST_F(InferenceCliTest, TwoRanksTrainTheTiedGpt2AndBatchSizeMaxSearchesInBothModes) {
  const std::string out = (dir_ / "ddp_train.json").string();
  Result r = gpubench(tiny_gpt2() + " --nproc-per-node 2 --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(j["distributed"]["world_size"], 2);
  EXPECT_GE(j["distributed"]["buckets"], 1);  // gradients all-reduced, the tied embedding once
  EXPECT_EQ(j["status"], "ok");
  // The search probes each mode on its own (an inference step holds less memory than a training step).
  const fs::path sweep = dir_ / "max";
  r = gpubench("sweep gpt2 --layers 1 --width 32 --heads 2 --vocab 64 --seq-len 16 --mode train,inference "
               "--batch-size max --epochs 1 --dataset-size 16 --warmup-steps 1 --time-budget 60 --out-dir " +
                   sweep.string(),
               "GPUBENCH_FAULT_INJECT=oom-above-batch:6");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  j = nlohmann::json::parse(slurp(sweep / "sweep.json"));
  ASSERT_EQ(j["points"].size(), 2u);
  for (const auto& p : j["points"]) {
    EXPECT_EQ(p["batch_size"], 6);
    EXPECT_EQ(p["status"], "ok");
  }
  EXPECT_EQ(nlohmann::json::parse(slurp(j["points"][1]["record"].get<std::string>()))["scenario"]["mode"], "inference");
}

TEST_F(InferenceCliTest, TrainingOnlyKeysAndOtherModelsRangesAreRefusedNamingTheKey) {
  Result r = gpubench(tiny_gpt2() + " --mode inference --grad-accumulation 2");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--grad-accumulation: key 'grad_accumulation': grad_accumulation applies to mode: train"),
            std::string::npos) << r.err;
  r = gpubench("run bert-base --seq-len 1024");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("key 'seq_len': expected an integer from 1 to 512, got 1024"), std::string::npos) << r.err;
  r = gpubench("run llama --layers 1 --hidden 32 --heads 4 --kv-heads 3 --intermediate 64 --vocab 64 --seq-len 8 "
               "--batch-size 1 --dataset-size 2 --warmup-steps 0");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE((r.out + r.err).find("kv_heads 3"), std::string::npos) << r.out << r.err;
  r = gpubench("run resnet50 --mode serve");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("key 'mode'"), std::string::npos) << r.err;
}

/// A generate sweep over batch and prompt length: the decode table (prompt rows, batch columns) and, per prompt
/// length, where decode throughput stops growing, in sweep.json and on the console.
TEST_F(InferenceCliTest, GenerateSweepTablesDecodeThroughputByBatchAndPrompt) {
  const fs::path out = dir_ / "gen_sweep";
  const Result r = gpubench("sweep gpt2 --layers 1 --width 32 --heads 2 --vocab 64 --seq-len 64 --mode generate "
                            "--batch-size 1,2 --prompt-tokens 8,16 --new-tokens 6 --epochs 1 --out-dir " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const nlohmann::json j = nlohmann::json::parse(slurp(out / "sweep.json"));
  ASSERT_EQ(j["points"].size(), 4u);
  ASSERT_EQ(j["decode"].size(), 4u) << j.dump();
  std::set<std::pair<int64_t, int64_t>> seen;
  for (const auto& c : j["decode"]) {
    EXPECT_GT(c["decode_tokens_per_s"].get<double>(), 0);
    seen.insert({c["prompt_tokens"].get<int64_t>(), c["batch_size"].get<int64_t>()});
  }
  EXPECT_EQ(seen, (std::set<std::pair<int64_t, int64_t>>{{8, 1}, {8, 2}, {16, 1}, {16, 2}}));
  EXPECT_TRUE(j["decode_saturating_batch"].contains("8") && j["decode_saturating_batch"].contains("16"));
  EXPECT_NE(r.out.find("Decode tokens/s by prompt length and batch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stops growing at batch"), std::string::npos) << r.out;
}

TEST_F(InferenceCliTest, GenerateRecordsPrefillDecodeTokenTimesAndTheRoofline) {
  const std::string out = (dir_ / "gen.json").string();
  const Result r = gpubench("run gpt2 --layers 1 --width 32 --heads 2 --vocab 64 --seq-len 64 --mode generate "
                            "--prompt-tokens 16 --new-tokens 8 --epochs 2 --time-budget 300 --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("No GPU in use: generation on the CPU"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("loss first"), std::string::npos) << "generation has no loss column\n" << r.out;
  const nlohmann::json j = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(j["scenario"]["mode"], "generate");
  EXPECT_EQ(j["scenario"]["prompt_tokens"], 16);
  EXPECT_EQ(j["scenario"]["new_tokens"], 8);
  EXPECT_EQ(j["scenario"]["batch_size"], 1);  // generation's default: one sequence
  EXPECT_EQ(j["model"]["sample_unit"], "tokens");
  ASSERT_EQ(j["epochs"].size(), 2u);  // one epoch per timed generation
  for (const auto& e : j["epochs"]) {
    EXPECT_EQ(e["steps"], 8);
    EXPECT_EQ(e["samples"], 8);
    EXPECT_EQ(e["step_times_ms"].size(), 7u);  // the tokens after the first: inter-token latencies
  }
  std::map<std::string, double> m;
  for (const auto& x : j["summary"]["metrics"]) m[x["tag"]] = x["value"];
  for (const char* tag : {"ttft_ms", "prefill_tokens_per_s", "decode_tokens_per_s", "pp16_tokens_per_s",
                          "tg8_tokens_per_s", "pg16_8_tokens_per_s", "itl_p99_ms", "tpot_ms", "e2e_latency_ms",
                          "decode_tokens_per_s_stdev", "copy_bandwidth_gb_per_s", "decode_bound_fraction",
                          "prefill_forward_ms", "ttft_over_prefill_forward"}) {
    EXPECT_EQ(m.count(tag), 1u) << tag;
  }
  // K and V of 1 layer, width 32, for 1 sequence of 16 + 8 positions, in fp32.
  EXPECT_EQ(m["kv_cache_bytes"], 2.0 * 32 * 24 * 4);
  EXPECT_GT(m["decode_tokens_per_s"], 0);
  EXPECT_FALSE(j["summary"]["bounded_by"].get<std::string>().empty());
  EXPECT_NE(j["summary"]["bottleneck_evidence"].get<std::string>().find("decode step"), std::string::npos);
}

TEST_F(InferenceCliTest, GenerateIsRefusedWhereItCannotRunNamingTheKey) {
  const std::string gen = "run gpt2 --layers 1 --width 32 --heads 2 --vocab 64 --seq-len 64 --mode generate ";
  Result r = gpubench(gen + "--prompt-tokens 60 --new-tokens 8 --dry-run");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  for (const char* word : {"prompt_tokens (60)", "new_tokens (8)", "seq_len (64)"}) {
    EXPECT_NE(r.err.find(word), std::string::npos) << word << ": " << r.err;
  }
  r = gpubench("run resnet50 --mode generate --dry-run");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("mode: generate runs decoders"), std::string::npos) << r.err;
  r = gpubench("run gpt2 --prompt-tokens 16 --dry-run");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("prompt_tokens applies to mode: generate"), std::string::npos) << r.err;
  r = gpubench(gen + "--prompt-tokens 8 --new-tokens 4 --kernels fused --dry-run");
  EXPECT_EQ(r.exit_code, binary_has_cuda_module() ? 0 : 2)
      << "gpt2 decodes with kernels: fused too (the decode operations), where the build has them\n" << r.err;
  r = gpubench(gen + "--prompt-tokens 8 --new-tokens 4 --nproc-per-node 2");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("mode: generate runs on one device"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gpubench
