#include "gpubench/core/scenario/scenario_loader.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>

#include "common/temp_dir.h"
#include "gpubench/core/scenario/device_kind.hpp"
#include "gpubench/core/scenario/precision.hpp"
#include "gpubench/core/scenario/resolve.hpp"
#include "gpubench/core/scenario/run_mode.hpp"

namespace gpubench {
namespace {

namespace fs = std::filesystem;

class ScenarioFileTest : public ::testing::Test {
 protected:

  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }

  /// Loads `text` as file `name` and returns the error message (fails the test if it loads).
  std::string error_of(const std::string& name, const std::string& text) {
    const std::string path = write(name, text);
    Scenario s;
    try {
      loader_.load_file(path, s);
      loader_.check(s);
    } catch (const ScenarioError& e) {
      return e.what();
    }
    ADD_FAILURE() << "expected " << name << " to be rejected";
    return "";
  }

  /// Declarations as a registry makes them (the engine's are tested through the binary).
  static ModelOptions test_models() {
    using T = ModelOption::Type;
    const ModelOption bert_layers{"layers", "--layers", "transformer layers", T::kInt, 1, 1024, {}, nullptr};
    const ModelOption unet_layers{"layers", "--layers", "resnets per block", T::kInt, 1, 8, {}, nullptr};
    const ModelOption heads{"heads", "--heads", "attention heads", T::kInt, 1, 1024, {}, nullptr};
    const ModelOption attention{"attention", "--attention", "kernel", T::kChoice, 0, 0, {"sdpa", "math"}, "sdpa"};
    const ModelOption dropout{"dropout", "--dropout", "probability", T::kFloat, 0, 0.999, {}, nullptr};
    return ModelOptions{
        {"resnet50", {{"image_size", "--image-size", "side", T::kInt, 32, 4096, {}, 224},
                      {"num_classes", "--num-classes", "classes", T::kInt, 2, 1 << 24, {}, 1000}}},
        {"bert-base", {{"seq_len", "--seq-len", "tokens", T::kInt, 1, 512, {}, 128}, bert_layers, heads, attention,
                       dropout}},
        {"sd-unet", {{"latent_size", "--latent-size", "side", T::kInt, 8, 1024, {}, 64}, unet_layers, heads}},
        {"gpt2", {{"seq_len", "--seq-len", "tokens", T::kInt, 2, 1024, {}, 1024}, bert_layers, heads}}};
  }

  testing::TempDir tmp_{"scenario"};
  fs::path dir_ = tmp_.path();
  ScenarioLoader loader_{std::vector<std::string>{"resnet50", "bert-base"}};
};

TEST_F(ScenarioFileTest, HostileValuesAreErrorsNamingTheKeyNeverACrash) {
  const std::string long_value(30000, '7');
  struct Case {
    std::string name, text, expect;
  };
  for (const Case& c : std::vector<Case>{
           {"a.json", "{\"optimizer\":{\"lr\":1e400}}", "a.json:1:20: key 'optimizer.lr'"},
           {"b.json", "{\"epochs\": 1e400, \"batch_size\": -1e400}", "key 'epochs'"},
           {"c.json", "{\"name\": \"x\", \"lr\": 1e400,", "JSON syntax error"},  // out of range, then cut off
           {"d.yaml", "time_budget_s: " + long_value + "s\n", "at most 4096"},
           {"e.yaml", "device: cuda:" + long_value.substr(0, 3000) + "\n", "key 'device'"},
           {"f.yaml", "device: cuda:1024\n", "N from 0 to 1023"},
           {"g.yaml", "device: cuda:-1\n", "key 'device'"},
           {"h.yaml", "time_budget_s: 1e400\n", "key 'time_budget_s'"},
           {"i.yaml", "time_budget_s: 400d\n", "key 'time_budget_s'"},
           {"j.yaml", "time_budget_s: \"90s\"\n", "the string"},
           {"k.yaml", "time_budget_s: 9000h\n", "longer than a year"},
           {"l.yaml", "epochs: !!int 3\n", "type tags"},
           {"m.yaml", "model: resnet50\n...\n---\nepochs: 3\n", "more than one YAML document"},
           {"m2.yaml", "[a],\n", "more than one YAML document"},  // hung yaml-cpp 0.7 LoadAll (fuzzer)
           {"m3.json", "{\"model\": \"resnet50\"},", "JSON syntax error"},
           {"n.yaml", "a: " + std::string(40, '{') + std::string(40, '}') + "\n", "brackets nested"},
           {"o.yaml", std::string(300, ' ') + "x: 1\n", "indented more than"},
           {"p.yaml", "name: &a [*a]\n", "key 'name'"},
           {"q.yaml", "? [a, b]\n: c\n", "keys must be plain words"},
           {"r.yaml", "dataset_size: 1000000000001\n", "key 'dataset_size'"},
           {"s.yaml", "seed: 18446744073709551616\n", "key 'seed'"},
           {"t.yaml", "optimizer: {name: sgd, lr: .inf}\n", "key 'optimizer.lr'"},
           {"u.yaml", "optimizer: {lr: .nan}\n", "key 'optimizer.lr'"},
           // Found by the fuzzer: a cross-key error must still name this file (batch_size's line), not "default".
           {"v.yaml", "# comment\nbatch_size: 5555555\n", "v.yaml:2:13: key 'batch_size': dataset_size (100000)"},
       }) {
    const std::string e = error_of(c.name, c.text);
    EXPECT_NE(e.find(c.name), std::string::npos) << c.name << ": " << e.substr(0, 300);
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.name << ": " << e.substr(0, 300);
  }
}

TEST(RunModeTest, TheKeysTextMapsToOneModeEachWayAndNothingElseDoes) {
  ASSERT_EQ(run_mode_names().size(), 3u);
  for (const RunMode m : {RunMode::kTrain, RunMode::kInference, RunMode::kGenerate}) {
    EXPECT_EQ(parse_run_mode(run_mode_name(m)), m) << run_mode_name(m);
  }
  EXPECT_EQ(run_mode_name(RunMode::kInference), "inference");
  for (const char* bad : {"", "Train", "training", "infer", "generate ", "eval"}) {
    EXPECT_FALSE(parse_run_mode(bad).has_value()) << bad;
  }
  Scenario s;
  EXPECT_EQ(run_mode(s), RunMode::kTrain);  // the default
  s.mode = "generate";
  EXPECT_EQ(run_mode(s), RunMode::kGenerate);
  s.mode = "sample";
  EXPECT_THROW(run_mode(s), std::invalid_argument);
}

TEST(DeviceKindTest, EachDeviceTypeHasOneKindAndOtherNamesAreAnOutOfTreeAccelerators) {
  EXPECT_EQ(device_kind("cpu"), DeviceKind::kCpu);
  EXPECT_EQ(device_kind("cuda"), DeviceKind::kCuda);
  EXPECT_EQ(device_kind("rocm"), DeviceKind::kRocm);
  EXPECT_EQ(device_kind("hip"), DeviceKind::kRocm);
  EXPECT_EQ(device_kind("mps"), DeviceKind::kMps);
  EXPECT_EQ(device_kind("xpu"), DeviceKind::kXpu);
  for (const char* other : {"testaccel", "npu", "", "CUDA", "cuda:0"}) {
    EXPECT_EQ(device_kind(other), DeviceKind::kOther) << other;  // the type is the text before the colon
  }
  EXPECT_TRUE(cuda_like(DeviceKind::kCuda) && cuda_like(DeviceKind::kRocm));
  EXPECT_FALSE(cuda_like(DeviceKind::kMps) || cuda_like(DeviceKind::kOther) || cuda_like(DeviceKind::kCpu));
}

TEST(PrecisionTest, TheKeysTextMapsToOnePrecisionEachWayAndNothingElseDoes) {
  ASSERT_EQ(precision_names().size(), 6u);
  for (const Precision p :
       {Precision::kFp32, Precision::kTf32, Precision::kBf16, Precision::kFp16, Precision::kAmp, Precision::kFp8}) {
    EXPECT_EQ(parse_precision(precision_name(p)), p) << precision_name(p);
  }
  EXPECT_EQ(precision_name(Precision::kAmp), "amp");
  for (const char* bad : {"", "FP32", "bfloat16", "float16", "fp8 ", "int8"}) {
    EXPECT_FALSE(parse_precision(bad).has_value()) << bad;
  }
  EXPECT_TRUE(half_width(Precision::kBf16) && half_width(Precision::kFp16) && half_width(Precision::kFp8));
  EXPECT_FALSE(half_width(Precision::kFp32) || half_width(Precision::kTf32) || half_width(Precision::kAmp));
  Scenario s;
  EXPECT_EQ(requested_precision(s), Precision::kFp32);  // the default
  s.precision = "int4";
  EXPECT_THROW(requested_precision(s), std::invalid_argument);
  // What amp resolves to is the resolver's, by device; the others are themselves.
  EXPECT_EQ(resolved_precision("amp", "cuda"), "fp16");
  EXPECT_EQ(resolved_precision("bf16", "cuda"), "bf16");
}

TEST_F(ScenarioFileTest, AModeOrPrecisionThatNoKeyParsedIsCheckedToo) {
  // A scenario made in code (or read back from a record) never went through the key: check() names the bad mode.
  const ScenarioLoader loader(test_models());
  Scenario s;
  s.mode = "finetune";
  try {
    loader.check(s);
    FAIL() << "mode finetune accepted";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("key 'mode': expected train, inference or generate, got 'finetune'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NE(error_of("m.yaml", "mode: finetune\n").find("m.yaml:1:7: key 'mode'"), std::string::npos);
  Scenario t;
  t.precision = "int8";
  try {
    loader.check(t);
    FAIL() << "precision int8 accepted";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("key 'precision': expected fp32, tf32, bf16, fp16, amp or fp8, got 'int8'"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(ScenarioFileTest, AKeyOfAnotherModelIsRefusedNamingTheKeyAndTheModelsThatTakeIt) {
  const ScenarioLoader loader(test_models());
  Scenario s;
  loader.load_file(write("r.yaml", "model: resnet50\nimage_size: 64\nlayers: 2\n"), s);
  try {
    loader.check(s);
    FAIL() << "layers accepted for resnet50";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("r.yaml:3:9: key 'layers': not a key of resnet50; it applies to bert-base, "
                                         "gpt2, sd-unet"),
              std::string::npos)
        << e.what();
  }
  // The same key from a flag names the flag; keys the model takes, and common keys, pass.
  Scenario t;
  loader.apply_override("model", "resnet50", "MODEL", t);
  loader.apply_override("seq_len", "64", "--seq-len", t);
  EXPECT_THROW(loader.check(t), ScenarioError);
  Scenario ok;
  loader.load_file(write("b.yaml", "model: bert-base\nseq_len: 64\nlayers: 2\nbatch_size: 8\nepochs: 2\n"), ok);
  EXPECT_NO_THROW(loader.check(ok));
  EXPECT_EQ(ok.option<int64_t>("layers"), 2);
  const auto keys = all_scenario_keys(test_models());
  const auto layers = std::find_if(keys.begin(), keys.end(), [](const ScenarioKey& k) { return k.key == "layers"; });
  ASSERT_NE(layers, keys.end());
  EXPECT_TRUE(layers->per_model);
  // Declared twice with different help: the help names each model's meaning.
  EXPECT_NE(layers->description.find("bert-base: transformer layers; gpt2: transformer layers; sd-unet: resnets per block"), std::string::npos)
      << layers->description;
}

TEST_F(ScenarioFileTest, AModelsKeyIsReadByItsDeclarationAndCheckedAgainstTheChosenModel) {
  const ScenarioLoader loader(test_models());
  // Type and range come from the declaration next to the model, and errors name file, line and key.
  Scenario s;
  try {
    loader.load_file(write("a.yaml", "model: bert-base\nseq_len: 4096\n"), s);
    loader.check(s);
    FAIL() << "seq_len 4096 accepted";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("a.yaml:2:10: key 'seq_len': expected an integer from 1 to 512"),
              std::string::npos) << e.what();
  }
  Scenario b;
  loader.load_file(write("b.yaml", "model: bert-base\nattention: math\ndropout: 0\n"), b);
  EXPECT_EQ(b.option<std::string>("attention"), "math");
  EXPECT_EQ(b.option<double>("dropout"), 0.0);
  EXPECT_THROW(loader.load_file(write("c.yaml", "attention: flash\n"), b), ScenarioError);
  // A key both models declare, in the range of one but not of the chosen one: named as the chosen model has it.
  Scenario u;
  try {
    loader.load_file(write("d.yaml", "model: sd-unet\nlayers: 100\n"), u);
    loader.check(u);
    FAIL() << "layers 100 accepted for sd-unet";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("d.yaml:2:9: key 'layers': expected an integer from 1 to 8"),
              std::string::npos) << e.what();
  }
  // A key whose ranges differ between models is read by their widest and held to the chosen model's, whichever
  // comes first in the file or on the command line.
  Scenario g;
  loader.load_file(write("g.yaml", "seq_len: 1024\nmodel: gpt2\n"), g);
  EXPECT_NO_THROW(loader.check(g));
  EXPECT_EQ(g.option<int64_t>("seq_len"), 1024);
  Scenario f;
  loader.apply_override("model", "gpt2", "MODEL", f);
  loader.apply_override("seq_len", "1024", "--seq-len", f);
  EXPECT_NO_THROW(loader.check(f));
  Scenario bb;
  try {
    loader.load_file(write("h.yaml", "seq_len: 1024\nmodel: bert-base\n"), bb);  // the model after the key
    loader.check(bb);
    FAIL() << "seq_len 1024 accepted for bert-base";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("h.yaml:1:10: key 'seq_len': expected an integer from 1 to 512"),
              std::string::npos) << e.what();
  }
  EXPECT_THROW(loader.load_file(write("i.yaml", "model: gpt2\nseq_len: 4096\n"), bb), ScenarioError);
  // A loader that knows no model declarations takes none of their keys.
  EXPECT_THROW(loader_.load_file(write("e.yaml", "seq_len: 64\n"), b), ScenarioError);
}

TEST_F(ScenarioFileTest, ModeIsTrainOrInferenceAndInferenceRefusesTrainingOnlyKeys) {
  Scenario s;
  loader_.load_file(write("m.yaml", "model: resnet50\nmode: inference\n"), s);
  EXPECT_EQ(s.mode, "inference");
  EXPECT_NO_THROW(loader_.check(s));
  EXPECT_EQ(Scenario{}.mode, "train");
  EXPECT_NE(error_of("n.yaml", "mode: serve\n").find("n.yaml:1:7: key 'mode'"), std::string::npos);
  Scenario g;
  loader_.load_file(write("o.yaml", "mode: inference\ngrad_accumulation: 4\n"), g);
  try {
    loader_.check(g);
    FAIL() << "grad_accumulation accepted in inference";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("o.yaml:2:20: key 'grad_accumulation': grad_accumulation applies to mode: train"),
              std::string::npos) << e.what();
  }
  // A record's scenario keeps the mode; an older record without one reads as training.
  Scenario r;
  r.mode = "inference";
  EXPECT_EQ(nlohmann::json(r).get<Scenario>().mode, "inference");
  nlohmann::json old = nlohmann::json(Scenario{});
  old.erase("mode");
  EXPECT_EQ(old.get<Scenario>().mode, "train");
}

TEST_F(ScenarioFileTest, OnlyRegularFilesOfAtMostOneMebibyteAreRead) {
  const std::string fifo = (dir_ / "pipe.yaml").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : std::vector<std::string>{fifo, "/dev/zero", dir_.string()}) {
    Scenario s;
    try {
      loader_.load_file(path, s);
      ADD_FAILURE() << path << " was read";
    } catch (const ScenarioError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  const std::string e = error_of("big.yaml", "name: x\n" + std::string(1 << 20, '#'));
  EXPECT_NE(e.find("at most 1 MiB"), std::string::npos) << e.substr(0, 200);
}

TEST_F(ScenarioFileTest, TheExtensionDecidesTheFormatWhateverItsCase) {
  Scenario s;
  loader_.load_file(write("A.JSON", "{\"epochs\": 4}"), s);
  EXPECT_EQ(s.epochs, 4);
  EXPECT_NE(error_of("B.Json", "epochs: 4\n").find("JSON syntax error"), std::string::npos);
}

TEST_F(ScenarioFileTest, AnEmptyFileIsAnErrorNotARunWithDefaults) {
  for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"empty.yaml", ""}, {"blank.yaml", "  \n\n\t\n"}, {"empty.json", ""}, {"blank.json", " \r\n"}}) {
    const std::string e = error_of(name, text);
    EXPECT_NE(e.find(name + ": file is empty"), std::string::npos) << e;
  }
  for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"comments.yaml", "# only a comment\n# and another\n"}, {"null.yaml", "~\n"}, {"null.json", "null"}}) {
    const std::string e = error_of(name, text);
    EXPECT_NE(e.find("no scenario keys"), std::string::npos) << name << ": " << e;
  }
}

TEST_F(ScenarioFileTest, YamlSetsEveryKindOfValueAndRecordsWhereItCameFrom) {
  const std::string path = write("s.yaml",
                                 "name: demo\n"
                                 "model: resnet50\n"
                                 "batch_size: 128\n"
                                 "precision: bf16\n"
                                 "device: cuda:1\n"
                                 "epochs: 3\n"
                                 "dataset_size: 100000\n"
                                 "memory_format: channels_last\n"
                                 "time_budget_s: 2m\n"
                                 "optimizer:\n"
                                 "  name: sgd\n"
                                 "  lr: 0.2\n"
                                 "  nesterov: true\n");
  Scenario s;
  loader_.load_file(path, s);
  EXPECT_EQ(s.name, "demo");
  EXPECT_EQ(s.batch_size, 128);
  EXPECT_EQ(s.precision, "bf16");
  EXPECT_EQ(s.device, "cuda:1");
  EXPECT_EQ(s.epochs, 3);
  EXPECT_EQ(s.memory_format, "channels_last");
  EXPECT_DOUBLE_EQ(*s.time_budget_s, 120.0);
  EXPECT_EQ(s.optimizer.name, "sgd");
  EXPECT_DOUBLE_EQ(*s.optimizer.lr, 0.2);
  EXPECT_EQ(s.optimizer.nesterov, true);
  ASSERT_TRUE(s.is_set("batch_size"));
  EXPECT_EQ(s.origins.at("batch_size").line, 3);
  EXPECT_EQ(s.origins.at("batch_size").column, 13);
  EXPECT_EQ(s.origins.at("optimizer.lr").line, 12);
  EXPECT_FALSE(s.is_set("warmup_steps"));
}

TEST_F(ScenarioFileTest, JsonAndYamlWithTheSameContentGiveTheSameScenario) {
  Scenario from_yaml, from_json;
  loader_.load_file(write("a.yaml", "model: resnet50\nbatch_size: 64\nprecision: fp16\noptimizer: {name: adamw, lr: 3e-4}\n"),
                    from_yaml);
  loader_.load_file(write("a.json", "{\n\t\"model\": \"resnet50\",\n\t\"batch_size\": 64,\n\t\"precision\": \"fp16\",\n"
                                    "\t\"optimizer\": {\"name\": \"adamw\", \"lr\": 3e-4}\n}\n"),
                    from_json);
  EXPECT_EQ(from_yaml, from_json);
  EXPECT_EQ(from_json.origins.at("batch_size").line, 3);
}

TEST_F(ScenarioFileTest, OptimizerShorthandNamesTheOptimizer) {
  Scenario s;
  loader_.load_file(write("o.yaml", "optimizer: adamw\n"), s);
  EXPECT_EQ(s.optimizer.name, "adamw");
}

TEST_F(ScenarioFileTest, FlagsOverrideFileValuesAndSayWhereTheyCameFrom) {
  Scenario s;
  loader_.load_file(write("s.yaml", "batch_size: 128\nepochs: 2\n"), s);
  loader_.apply_override("batch_size", "256", "--batch-size", s);
  EXPECT_EQ(s.batch_size, 256);
  EXPECT_EQ(s.epochs, 2);
  EXPECT_EQ(s.origins.at("batch_size").describe(), "command line --batch-size");
}

TEST_F(ScenarioFileTest, UnknownKeyNamesFileLineAndSuggestsTheRightKey) {
  const std::string msg = error_of("u.yaml", "model: resnet50\nbatch_sise: 64\n");
  EXPECT_NE(msg.find("u.yaml:2:1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown key"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'batch_size'"), std::string::npos) << msg;
}

TEST_F(ScenarioFileTest, UnknownOptimizerKeyIsNamedWithItsSection) {
  const std::string msg = error_of("u.yaml", "optimizer:\n  name: sgd\n  lrr: 0.1\n");
  EXPECT_NE(msg.find("u.yaml:3:3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("optimizer.lrr"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'lr'"), std::string::npos) << msg;
}

TEST_F(ScenarioFileTest, WrongTypeNamesFileLineColumnAndKey) {
  const std::string msg = error_of("t.yaml", "model: resnet50\nbatch_size: lots\n");
  EXPECT_NE(msg.find("t.yaml:2:13: key 'batch_size'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected an integer"), std::string::npos) << msg;
}

TEST_F(ScenarioFileTest, QuotedNumberIsAStringNotANumber) {
  const std::string msg = error_of("q.json", "{\"batch_size\": \"256\"}");
  EXPECT_NE(msg.find("q.json:1:16"), std::string::npos) << msg;
  EXPECT_NE(msg.find("got the string \"256\""), std::string::npos) << msg;
}

TEST_F(ScenarioFileTest, OutOfRangeValuesAreRejected) {
  EXPECT_NE(error_of("r.yaml", "epochs: 0\n").find("key 'epochs'"), std::string::npos);
  EXPECT_NE(error_of("r.yaml", "batch_size: -3\n").find("expected an integer from 1"), std::string::npos);
  EXPECT_NE(error_of("r.yaml", "optimizer: {momentum: 1.5}\n").find("key 'optimizer.momentum'"), std::string::npos);
  EXPECT_NE(error_of("r.yaml", "time_budget_s: soon\n").find("a duration"), std::string::npos);
}

TEST_F(ScenarioFileTest, EnumValuesListTheChoices) {
  const std::string msg = error_of("p.yaml", "precision: bf61\n");
  EXPECT_NE(msg.find("one of fp32, tf32, bf16, fp16, amp"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'bf16'"), std::string::npos) << msg;
  EXPECT_NE(error_of("d.yaml", "device: gpu\n").find("expected auto, cpu, cuda"), std::string::npos);
}

TEST_F(ScenarioFileTest, ABackendLibrarysDeviceNeedsTheLibraryAndLibTorchsOwnNamesDoNot) {
  // A name only a backend library registers: accepted with the library (whether it exists is the device's resolution's
  // to say), refused without it naming the file, the line and the key; a malformed name is refused either way.
  const std::string msg = error_of("a.yaml", "model: resnet50\ndevice: npu:1\n");
  EXPECT_NE(msg.find("a.yaml:2:9: key 'device'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("needs its backend_library"), std::string::npos) << msg;
  Scenario s;
  loader_.load_file(write("b.yaml", "model: resnet50\ndevice: npu:1\nbackend_library: /opt/libnpu.so\n"), s);
  EXPECT_NO_THROW(loader_.check(s));
  EXPECT_EQ(s.device, "npu:1");
  EXPECT_EQ(s.backend_library, "/opt/libnpu.so");
  EXPECT_NE(error_of("c.yaml", "device: Npu!\nbackend_library: /opt/libnpu.so\n").find("key 'device'"),
            std::string::npos);
  EXPECT_NE(error_of("d.yaml", "device: cpu:0\n").find("key 'device'"), std::string::npos);
  Scenario builtin;  // LibTorch's own names need no library
  loader_.load_file(write("e.yaml", "model: resnet50\ndevice: xpu:3\n"), builtin);
  EXPECT_NO_THROW(loader_.check(builtin));
}

TEST_F(ScenarioFileTest, UnknownModelListsKnownModels) {
  const std::string msg = error_of("m.yaml", "\nmodel: resnet5\n");
  EXPECT_NE(msg.find("m.yaml:2:8: key 'model'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("known models: resnet50, bert-base"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'resnet50'"), std::string::npos) << msg;
}

TEST_F(ScenarioFileTest, SyntaxErrorsPointAtTheLine) {
  const std::string yaml = error_of("y.yaml", "model: resnet50\nbatch_size: [1, 2\n");
  EXPECT_NE(yaml.find("y.yaml:"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("YAML syntax error"), std::string::npos) << yaml;
  const std::string json = error_of("j.json", "{\n  \"model\": \"resnet50\",\n  \"epochs\": 2,\n}\n");
  EXPECT_NE(json.find("j.json:4:1"), std::string::npos) << json;
  EXPECT_NE(json.find("JSON syntax error"), std::string::npos) << json;
}

TEST_F(ScenarioFileTest, DuplicateKeysAndNonMappingsAreRejected) {
  EXPECT_NE(error_of("d.yaml", "epochs: 1\nepochs: 2\n").find("d.yaml:2:1: key 'epochs': duplicate key"),
            std::string::npos);
  EXPECT_NE(error_of("l.yaml", "- resnet50\n").find("expected a mapping"), std::string::npos);
}

TEST_F(ScenarioFileTest, MissingFileIsNamed) {
  Scenario s;
  try {
    loader_.load_file((dir_ / "nope.yaml").string(), s);
    FAIL() << "missing file accepted";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("nope.yaml: cannot read file"), std::string::npos) << e.what();
  }
}

TEST_F(ScenarioFileTest, DatasetSmallerThanABatchIsRejectedAtTheDatasetKey) {
  const std::string msg = error_of("c.yaml", "batch_size: 64\ndataset_size: 10\n");
  EXPECT_NE(msg.find("c.yaml:2:15: key 'dataset_size'"), std::string::npos) << msg;
}

TEST(ScenarioOverrideTest, BadFlagValueNamesTheFlag) {
  ScenarioLoader loader(std::vector<std::string>{"resnet50"});
  Scenario s;
  try {
    loader.apply_override("batch_size", "abc", "--batch-size", s);
    FAIL() << "accepted a non-integer batch size";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(std::string(e.what()), "command line --batch-size: key 'batch_size': expected an integer from 1 to 16777216, got 'abc'");
  }
}

TEST(ScenarioOverrideTest, FlagStringsAreTakenVerbatim) {
  ScenarioLoader loader(std::vector<std::string>{});
  Scenario s;
  loader.apply_override("name", "a: b", "--name", s);  // not parsed as YAML
  EXPECT_EQ(s.name, "a: b");
  loader.apply_override("time_budget_s", "90s", "--time-budget", s);
  EXPECT_DOUBLE_EQ(*s.time_budget_s, 90.0);
}

TEST(DurationTest, ParsesUnitsAndNamesTheSourceOnError) {
  EXPECT_DOUBLE_EQ(parse_duration_s("90", "x"), 90.0);
  EXPECT_DOUBLE_EQ(parse_duration_s("2m", "x"), 120.0);
  EXPECT_DOUBLE_EQ(parse_duration_s("500ms", "x"), 0.5);
  try {
    parse_duration_s("soon", "command line --cooldown");
    FAIL() << "accepted 'soon'";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("command line --cooldown: expected a duration", 0), 0u) << e.what();
  }
}

TEST(ScenarioKeysTest, EveryKeyHasAFlagInKebabCase) {
  for (const auto& k : scenario_keys()) {
    EXPECT_EQ(k.flag.rfind("--", 0), 0u) << k.key;
    EXPECT_FALSE(k.description.empty()) << k.key;
  }
}

TEST(ScenarioJsonTest, ResolvedScenarioRoundTripsThroughJson) {
  Scenario s;
  s.batch_size = 32;
  s.optimizer.name = "adamw";
  s.optimizer.beta2 = 0.98;
  s.time_budget_s = 12.5;
  const Scenario back = nlohmann::json(s).get<Scenario>();
  EXPECT_EQ(back, s);
  EXPECT_TRUE(nlohmann::json(s)["warmup_steps"].is_null());
}

}  // namespace
}  // namespace gpubench
