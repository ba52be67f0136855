// The keys every model takes (values.h's Field table): name, flag, type, help and how each is read. The models' own
// keys are declared by the models (ModelOption) and merged in for help and sweeps.

#include <algorithm>
#include <map>

#include "core/scenario/values.h"
#include "gpubench/core/reference/device_table.hpp"
#include "gpubench/core/scenario/kernel_options.hpp"
#include "gpubench/core/scenario/run_mode.hpp"

namespace gpubench {

namespace scenario_detail {



const std::vector<Field>& fields() {
  static const std::vector<Field> table = [] {
    std::vector<Field> f;
    // The keys every model takes. A model's own keys (image_size, seq_len, layers, ...) are declared by the model
    // (ModelOption, in the engine's registry) and reach the loader through its constructor.
    auto add = [&f](std::string key, std::string flag, std::string type, std::string desc, Setter s) {
      f.push_back({{std::move(key), std::move(flag), std::move(desc), false, false, std::move(type)}, std::move(s)});
    };
    auto add_bool = [&f](std::string key, std::string flag, std::string type, std::string desc, Setter s) {
      f.push_back({{std::move(key), std::move(flag), std::move(desc), true, false, std::move(type)}, std::move(s)});
    };
    using Models = std::vector<std::string>;
    add("name", "--name", "TEXT", "free-form label for the run",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.name = as_string(n, c); });
    add("model", "--model", "NAME", "model to train (see `gpubench list`)",
        [](auto& n, auto& c, Scenario& s, const Models& models) {
          const std::string m = as_string(n, c);
          if (!models.empty() && std::find(models.begin(), models.end(), m) == models.end()) {
            fail(c, "unknown model '" + m + "'; known models: " + join(models, ", ") + did_you_mean(m, models));
          }
          s.model = m;
        });
    add("mode", "--mode", "train|inference|generate",
        "train (forward, backward, optimizer step; default) | inference (eval mode, no gradients, no optimizer: "
        "throughput and per-batch latency percentiles; sd-unet: one denoising step with classifier-free guidance) | "
        "generate (gpt2, llama: a prompt of prompt_tokens, then new_tokens greedy tokens one at a time over a static "
        "KV cache: prefill and decode tokens/s, time to first token, per-token latency)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.mode = as_enum(n, c, run_mode_names()); });
    add("prompt_tokens", "--prompt-tokens", "INT", "mode: generate: prompt tokens per sequence, prefilled in one forward (default 512)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.prompt_tokens = as_int(n, c, 1, 1 << 20); });
    add("new_tokens", "--new-tokens", "INT", "mode: generate: tokens generated greedily after the prompt, one per step (default 128)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.new_tokens = as_int(n, c, 1, 1 << 20); });
    add("kv_cache_dtype", "--kv-cache-dtype", "auto|bf16|fp16|fp32",
        "mode: generate: the KV cache's element type (auto: the weights', bf16 or fp16 under those precisions, else fp32)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.kv_cache_dtype = as_enum(n, c, {"auto", "bf16", "fp16", "fp32"}); });
    add("batch_size", "--batch-size", "INT", "samples per step (default: the model's; bounded on CPU)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.batch_size = as_int(n, c, 1, 1 << 24); });
    add("precision", "--precision", "fp32|tf32|bf16|fp16|amp|fp8",
        "fp32 | tf32 | bf16 | fp16 | amp (amp: PyTorch AMP, fp16 + loss scaling on GPUs, bf16 on the CPU) | fp8 (the "
        "Linear layers' matrix products in FP8 on GPUs with FP8 tensor cores, compute capability 8.9+; bf16 "
        "autocast around them, fp32 master weights)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.precision = as_enum(n, c, precision_names()); });
    add("fp8_grad_format", "--fp8-grad-format", "e5m2|e4m3",
        "precision: fp8: the gradients' format: e5m2 (default: range, as Transformer Engine's HYBRID recipe) | e4m3 "
        "(precision); activations and weights are always e4m3",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.fp8_grad_format = as_enum(n, c, {"e5m2", "e4m3"}); });
    add("fp8_scaling", "--fp8-scaling", "tensor|rowwise|delayed",
        "precision: fp8: tensor (one scale per tensor from its current amax, default) | rowwise (one per row of the "
        "activations and of the weight in the forward product) | delayed (per tensor, from the largest amax of the "
        "last fp8_amax_history steps)",
        [](auto& n, auto& c, Scenario& s, const Models&) {
          s.fp8_scaling = as_enum(n, c, {"tensor", "rowwise", "delayed"});
        });
    add("fp8_amax_history", "--fp8-amax-history", "INT", "precision: fp8, fp8_scaling: delayed: steps of amax kept (default 16)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.fp8_amax_history = as_int(n, c, 1, 1024); });
    add_bool("fp8_lm_head", "--fp8-lm-head", "BOOL", "precision: fp8: convert the LM head too (default false)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.fp8_lm_head = as_bool(n, c); });
    add_bool("fp8_classifier", "--fp8-classifier", "BOOL",
        "precision: fp8: convert a classifier head too (default false)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.fp8_classifier = as_bool(n, c); });
    add("memory_format", "--memory-format", "auto|contiguous|channels_last", "auto | contiguous | channels_last (auto: channels_last on GPUs)",
        [](auto& n, auto& c, Scenario& s, const Models&) {
          s.memory_format = as_enum(n, c, {"auto", "contiguous", "channels_last"});
        });
    add("device", "--device", "auto|cpu|cuda[:N]|rocm[:N]|mps|xpu[:N]|NAME[:N]",
        "auto | cpu | cuda[:N] (NVIDIA) | rocm[:N] (AMD, a ROCm LibTorch) | mps (Apple) | xpu[:N] (Intel) | NAME[:N] "
        "(the name a --backend-library registers); `gpubench info` lists the backends this build has",
        [](auto& n, auto& c, Scenario& s, const Models&) {
          const std::string d = as_string(n, c);
          if (!valid_device(d)) fail(c, "expected auto, cpu, cuda, cuda:N, rocm, rocm:N, mps, xpu, xpu:N or a backend library's NAME[:N] (N from 0 to 1023), got '" +
                                            (d.size() > 64 ? d.substr(0, 64) + "..." : d) + "'");
          s.device = d;
        });
    add("epochs", "--epochs", "INT", "timed epochs",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.epochs = as_int(n, c, 1, 1000000); });
    add("dataset_size", "--dataset-size", "INT", "samples per epoch (default 100000, the seeds' ImageNet subset)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.dataset_size = as_int(n, c, 1, int64_t{1000000000000}); });
    add("warmup_steps", "--warmup-steps", "INT", "untimed steps before the first epoch (default 10; CPU 2)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.warmup_steps = as_int(n, c, 0, 1000000); });
    add("optimizer.name", "--optimizer", "sgd|adamw", "sgd | adamw (default: the model's)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.optimizer.name = as_enum(n, c, {"sgd", "adamw"}); });
    add("optimizer.lr", "--lr", "NUMBER", "learning rate",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.optimizer.lr = as_double(n, c, 0, 1e6, true); });
    add("optimizer.momentum", "--momentum", "NUMBER", "SGD momentum, in [0, 1)",
        [](auto& n, auto& c, Scenario& s, const Models&) {
          s.optimizer.momentum = as_double(n, c, 0, 0.999999, false);
        });
    add("optimizer.weight_decay", "--weight-decay", "NUMBER", "weight decay (SGD: L2; AdamW: decoupled)",
        [](auto& n, auto& c, Scenario& s, const Models&) {
          s.optimizer.weight_decay = as_double(n, c, 0, 1e3, false);
        });
    add_bool("optimizer.nesterov", "--nesterov", "BOOL", "SGD Nesterov momentum (true/false)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.optimizer.nesterov = as_bool(n, c); });
    add("optimizer.beta1", "--beta1", "NUMBER", "AdamW first-moment decay, in [0, 1)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.optimizer.beta1 = as_double(n, c, 0, 0.999999, false); });
    add("optimizer.beta2", "--beta2", "NUMBER", "AdamW second-moment decay, in [0, 1)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.optimizer.beta2 = as_double(n, c, 0, 0.999999, false); });
    add("optimizer.eps", "--eps", "NUMBER", "AdamW epsilon",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.optimizer.eps = as_double(n, c, 0, 1, true); });
    add("optimizer.implementation", "--optimizer-impl", "fused|foreach",
        "fused (ATen's fused kernels, default) | foreach (torch.optim's default on CUDA)",
        [](auto& n, auto& c, Scenario& s, const Models&) {
          s.optimizer.implementation = as_enum(n, c, {"fused", "foreach"});
        });
    add("seed", "--seed", "INT", "seed for initialisation and synthetic data",
        [](auto& n, auto& c, Scenario& s, const Models&) {
          s.seed = static_cast<uint64_t>(as_int(n, c, 0, INT64_MAX));
        });
    add("time_budget_s", "--time-budget", "DURATION", "stop after this much measured time, never begin a step that would pass it: seconds or 90s/2m/1h (CPU default 30s)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.time_budget_s = as_duration_s(n, c); });
    add("duration_s", "--duration", "DURATION", "sustained run: train whole epochs for this long, e.g. 2h (reports drift)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.duration_s = as_duration_s(n, c); });
    add_bool("telemetry", "--telemetry", "BOOL", "sample power, clocks and temperature (true/false, default true)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.telemetry = as_bool(n, c); });
    add("telemetry_interval_s", "--telemetry-interval", "DURATION", "telemetry sampling period: seconds or 100ms (default 100ms)",
        [](auto& n, auto& c, Scenario& s, const Models&) {
          s.telemetry_interval_s = as_duration_s(n, c);
          if (s.telemetry_interval_s < 0.005) fail(c, "the sampling period must be at least 5ms");
        });
    add("telemetry_trace", "--telemetry-trace", "FILE", "write the raw telemetry samples to this CSV file",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.telemetry_trace = as_path(n, c); });
    add_bool("profile", "--profile", "BOOL",
        "after the timed epochs, profile separate steps: kernel categories, top kernels, GPU idle time, a Chrome "
        "trace beside the record and a bottleneck verdict (true/false; the timed epochs are not affected)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.profile = as_bool(n, c); });
    add("profile_steps", "--profile-steps", "INT", "steps in the profile (default 5)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.profile_steps = as_int(n, c, 1, 1000); });
    add("data", "--data", "synthetic|folder",
        "synthetic (one random batch on the device, reused: times the step alone) | folder (a JPEG ImageFolder at "
        "data_path, decoded, cropped, flipped and normalised every step; image models)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.data = as_enum(n, c, {"synthetic", "folder"}); });
    add("data_path", "--data-path", "DIR", "data: folder: the ImageFolder root, one folder per class (`gpubench dataset make` writes one)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.data_path = as_path(n, c); });
    add("data_workers", "--data-workers", "INT", "data: folder: decoding threads per rank (default 0: the cores less one, shared by the ranks)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.data_workers = as_int(n, c, 0, 1024); });
    add("decode", "--decode", "auto|cpu|gpu|mixed", "data: folder: cpu (libjpeg-turbo on the workers) | gpu (nvJPEG, hardware decoder where the GPU has one) | mixed (each batch split between the two, the workers' share steered by whether the device waits for them) | auto (the rule in data/decode_choice.hpp, default)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.decode = as_enum(n, c, {"auto", "cpu", "gpu", "mixed"}); });
    add("prefetch", "--prefetch", "INT", "data: folder: batches prepared ahead of the step (default 3)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.prefetch = as_int(n, c, 1, 64); });
    add_bool("data_only", "--data-only", "BOOL", "data: folder: time the input pipeline alone, no model step (true/false)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.data_only = as_bool(n, c); });
    add("grad_accumulation", "--grad-accumulation", "INT", "micro-batches of batch_size per optimizer step (default 1)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.grad_accumulation = as_int(n, c, 1, 1 << 16); });
    add_bool("cudnn_benchmark", "--cudnn-benchmark", "BOOL", "let cuDNN autotune convolutions (true/false, default true)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.cudnn_benchmark = as_bool(n, c); });
    add_bool("graph", "--cuda-graph", "BOOL",
        "capture forward, backward and optimizer step once in a CUDA graph and replay it (true/false; CUDA only, "
        "falls back to eager with a note elsewhere)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.graph = as_bool(n, c); });
    add("kernels", "--kernels", "aten|fused",
        "aten (the operations PyTorch eager runs, default: like for like with published eager figures) | fused "
        "(gpubench's fused kernels where the model has them: gpt2 and llama's LM head with its loss, llama's SwiGLU "
        "and rotary embeddings, resnet50's batch-norms (+ residual add + ReLU) and max pool; in mode: generate, the decode step's GEMVs, norms and cache writes; the record lists "
        "each and how it ran)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.kernels = as_enum(n, c, {"aten", "fused"}); });
    // kernel_options.*: one key per declared option (kernel_options.hpp), flag --<name with dashes>.
    for (const KernelOptionInfo& o : kernel_option_table()) {
      std::string flag = "--" + o.name;
      std::replace(flag.begin(), flag.end(), '_', '-');
      const std::string name = o.name;
      Setter set = [name](auto& n, auto& c, Scenario& s, const Models&) {
        const KernelOptionInfo& info = *find_kernel_option(name);
        if (info.type == "BOOL") {
          info.set(s.kernel_options, as_bool(n, c));
        } else if (info.type == "INT") {
          info.set(s.kernel_options, as_int(n, c, info.min, info.max));
        } else {
          info.set(s.kernel_options, as_enum(n, c, {"off", "auto", "on"}));
        }
      };
      const std::string desc = o.applies + ": " + o.help + " (environment: " + o.env + ")";
      if (o.type == "BOOL") {
        add_bool("kernel_options." + o.name, flag, o.type, desc, std::move(set));
      } else {
        add("kernel_options." + o.name, flag, o.type, desc, std::move(set));
      }
    }
    add("memory_check", "--memory-check", "refuse|warn",
        "refuse (default: exit 2 before anything is built when the estimate of weights, gradients, optimizer state "
        "and activations exceeds the device's memory: the host's available memory on the CPU, the GPU's total) | "
        "warn (a note; the run goes on)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.memory_check = as_enum(n, c, {"refuse", "warn"}); });
    add("memory_limit", "--memory-limit", "SIZE",
        "cap the run's device memory, e.g. 12GiB: the CUDA caching allocator's per-process fraction, so a large GPU "
        "shows a smaller card's out-of-memory (CUDA only; the record says so; docs/fit.md)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.memory_limit = as_size_bytes(n, c, int64_t{256} << 20); });
    add("emulate", "--emulate", "CARD",
        "cap the device memory at a device-table card's usable memory, as `gpubench fit` counts it (e.g. \"NVIDIA "
        "GeForce RTX 4070 Ti\"; CUDA only)",
        [](auto& n, auto& c, Scenario& s, const Models&) {
          const std::string name = as_string(n, c);
          const DeviceSpec* spec = find_device_spec(name);
          if (spec == nullptr || !spec->memory_gb) {
            std::vector<std::string> cards;
            for (const auto& d : device_table()) {
              if (d.memory_gb) cards.push_back(d.name);
            }
            fail(c, "no card '" + name + "' with a memory size in the device table; it has: " + join(cards, ", ") +
                        did_you_mean(name, cards));
          }
          s.emulate = spec->name;
        });
    add("backend_library", "--backend-library", "PATH",
        "an out-of-tree accelerator's backend library (a LibTorch PrivateUse1 backend such as torch_npu's, or "
        "gpubench's test accelerator), loaded before devices are counted; its devices are device: NAME[:N], the name "
        "it registers (docs/backends.md)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.backend_library = as_path(n, c); });
    add("ddp_bucket_mb", "--bucket-mb", "NUMBER", "multi-GPU: gradient all-reduce bucket size in MiB (default 25, as DDP)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.ddp_bucket_mb = as_double(n, c, 0.001, 65536, false); });
    add("ddp_timeout_s", "--ddp-timeout", "DURATION", "multi-GPU: fail the run when a collective or rendezvous takes longer "
        "(seconds or 30s/5m; default 5m)",
        [](auto& n, auto& c, Scenario& s, const Models&) {
          s.ddp_timeout_s = as_duration_s(n, c);
          if (s.ddp_timeout_s < 1) fail(c, "the timeout must be at least 1s");
        });
    add("output", "--output", "FILE", "record path, or - for standard output (default runs/<model>_<device>_<precision>_bs<N>.json; _2, _3, ... when taken)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.output = as_path(n, c); });
    return f;
  }();
  return table;
}

const Field* find_field(const std::string& key) {
  for (const auto& f : fields()) {
    if (f.doc.key == key) return &f;
  }
  return nullptr;
}

std::vector<std::string> keys_with_prefix(const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& f : fields()) {
    if (f.doc.key.rfind(prefix, 0) == 0) {
      std::string rest = f.doc.key.substr(prefix.size());
      if (rest.find('.') == std::string::npos) out.push_back(rest);
    }
  }
  if (prefix.empty()) out.push_back("optimizer");
  return out;
}

}  // namespace scenario_detail

using namespace scenario_detail;  // NOLINT(google-build-using-namespace)

const std::vector<ScenarioKey>& scenario_keys() {
  static const std::vector<ScenarioKey> keys = [] {
    std::vector<ScenarioKey> k;
    for (const auto& f : fields()) k.push_back(f.doc);
    return k;
  }();
  return keys;
}

ScenarioKey ModelOption::as_key() const {
  std::string type_name = "INT";
  if (type == Type::kFloat) type_name = "NUMBER";
  if (type == Type::kBool) type_name = "BOOL";
  if (type == Type::kChoice) {
    type_name.clear();
    for (const auto& c : choices) type_name += (type_name.empty() ? "" : "|") + c;
  }
  std::string text = help;
  for (const auto& a : aliases) text += "; also read as " + a;
  return ScenarioKey{key, flag, text, type == Type::kBool, true, type_name};
}

std::vector<ScenarioKey> all_scenario_keys(const ModelOptions& models) {
  std::vector<ScenarioKey> out = scenario_keys();
  // A key several models declare with different help says each model's ("bert-base: ...; sd-unet: ...").
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> helps;
  for (const auto& [name, options] : models) {
    for (const auto& o : options) {
      auto it = std::find_if(out.begin(), out.end(), [&o](const ScenarioKey& k) { return k.key == o.key; });
      if (it == out.end()) out.push_back(o.as_key());
      helps[o.key].emplace_back(name, o.as_key().description);
    }
  }
  for (auto& k : out) {
    const auto h = helps.find(k.key);
    if (h == helps.end() || h->second.size() < 2) continue;
    const bool same = std::all_of(h->second.begin(), h->second.end(),
                                  [&h](const auto& p) { return p.second == h->second.front().second; });
    if (same) continue;
    k.description.clear();
    for (const auto& [model, help] : h->second) k.description += (k.description.empty() ? "" : "; ") + model + ": " + help;
  }
  return out;
}

}  // namespace gpubench
