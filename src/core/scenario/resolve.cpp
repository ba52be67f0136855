#include "gpubench/core/scenario/resolve.hpp"

#include "gpubench/core/record/host_facts.hpp"
#include "gpubench/core/scenario/device_kind.hpp"
#include "gpubench/core/scenario/precision.hpp"
#include "gpubench/core/scenario/run_mode.hpp"

#include "gpubench/core/reference/device_table.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "gpubench/core/scenario/scenario_loader.hpp"

namespace gpubench {

namespace {

Origin origin_of(const Scenario& s, const std::string& key) {
  const auto it = s.origins.find(key);
  return it != s.origins.end() ? it->second : Origin{"default " + key, 0, 0};
}

/// The key a model rule's message names first ("llama: heads 32 is not a multiple of kv_heads 3" names heads), so
/// the error points at where the user set it.
std::string first_key_named(const std::string& message, const ModelInfo& model) {
  std::string best;
  size_t best_at = std::string::npos;
  for (const auto& o : model.options) {
    for (size_t at = message.find(o.key); at != std::string::npos; at = message.find(o.key, at + 1)) {
      const bool starts = at == 0 || !(std::isalnum(static_cast<unsigned char>(message[at - 1])) || message[at - 1] == '_');
      const size_t end = at + o.key.size();
      const bool ends = end == message.size() ||
                        !(std::isalnum(static_cast<unsigned char>(message[end])) || message[end] == '_');
      if (starts && ends && at < best_at) {
        best_at = at;
        best = o.key;
      }
    }
  }
  return best.empty() ? "model" : best;
}

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

}  // namespace

std::optional<MemoryEstimate> estimate_memory(const Scenario& s, const ModelInfo& model, const std::string& precision,
                                              const DeviceFacts& device) {
  if (!model.size) return std::nullopt;
  const ModelSize size = model.size(s);
  MemoryEstimate m;
  m.parameters = size.parameters;
  const auto p = static_cast<double>(size.parameters);
  const bool train = run_mode(s) == RunMode::kTrain;
  const std::optional<Precision> resolved = parse_precision(precision);
  const bool half = resolved && half_width(*resolved);
  if (run_mode(s) == RunMode::kGenerate) {
    // The weights in the autocast type (or fp32), the KV cache for every position of every sequence, and one
    // step's logits in fp32; a decode step's activations are a few vectors per sequence.
    m.weights_bytes = static_cast<int64_t>((half ? 2 : 4) * p);
    const std::string kv = s.kv_cache_dtype == "auto" ? (half ? precision : "fp32") : s.kv_cache_dtype;
    const double positions = static_cast<double>(s.prompt_tokens.value_or(0) + s.new_tokens.value_or(0));
    const double batch = static_cast<double>(s.batch_size.value_or(1));
    // One position's logits per sequence (the inference figure is for every position of seq_len); the prefill's
    // passing activations are not counted, so this stays below a measured peak.
    const double seq_len = static_cast<double>(std::max<int64_t>(1, s.option<int64_t>("seq_len").value_or(1)));
    m.activation_bytes = static_cast<int64_t>(size.kv_elements_per_token * (kv == "fp32" ? 4 : 2) * positions * batch +
                                              size.inference_activation_bytes_per_sample / seq_len * batch);
    m.total_bytes = m.weights_bytes + m.activation_bytes;
    m.available_bytes = device.memory_bytes;
    m.available_source = device.memory_source;
    return m;
  }
  if (!train && half) {
    m.weights_bytes = static_cast<int64_t>(2 * p);  // inference holds the weights in the autocast type itself
  } else {
    m.weights_bytes = static_cast<int64_t>(4 * p);                   // fp32 weights (the master copy under autocast)
    m.autocast_copy_bytes = half ? static_cast<int64_t>(2 * p) : 0;  // autocast's cached 2-byte casts
  }
  if (train) {
    m.gradient_bytes = static_cast<int64_t>(4 * p);
    const bool momentum = s.optimizer.name == "sgd" && s.optimizer.momentum.value_or(0) > 0;
    m.optimizer_bytes = s.optimizer.name == "adamw" ? static_cast<int64_t>(8 * p)
                        : momentum                 ? static_cast<int64_t>(4 * p)
                                                   : 0;
  }
  const bool checkpointed = train && s.option<bool>("gradient_checkpointing").value_or(false);
  double per_sample = !train        ? size.inference_activation_bytes_per_sample
                      : checkpointed ? size.checkpointed_activation_bytes_per_sample
                                     : size.activation_bytes_per_sample;
  if (!half) per_sample *= 2;  // 4-byte activations
  // The figures above are the ATen path's. `kernels: fused` keeps fewer (normalised inputs recomputed, bf16 streams,
  // the loss without its logits), FP8 keeps its layers' inputs in one byte: counted at 80 % and 90 % of them, below
  // every committed H200 measurement (GPT-2 bs 32 fused keeps 83 %, TinyLlama's FP8 fused run 82 %), so a refusal
  // still means a certain out-of-memory.
  if (train && s.fused_kernels()) per_sample *= 0.8;
  if (train && resolved == Precision::kFp8) per_sample *= 0.9;
  m.activation_bytes = static_cast<int64_t>(per_sample * static_cast<double>(s.batch_size.value_or(1)));
  m.total_bytes = m.weights_bytes + m.autocast_copy_bytes + m.optimizer_bytes +
                  std::max(m.activation_bytes, m.gradient_bytes);
  m.available_bytes = device.memory_bytes;
  m.available_source = device.memory_source;
  return m;
}

namespace {

/// memory_limit and emulate: the cap resolved (an emulated card's usable memory), refused where the caching allocator
/// cannot cap a run (not CUDA or ROCm) or where it would cap nothing (above the device's memory).
void apply_memory_limit(ResolvedScenario& r, bool refuse) {
  Scenario& s = r.scenario;
  const std::string key = s.emulate.empty() || s.memory_limit ? "memory_limit" : "emulate";
  s.memory_limit = requested_memory_cap(s);
  if (!s.memory_limit) return;
  const DeviceFacts& device = r.device;
  std::string problem;
  if (!cuda_like(device_kind(device.type))) {
    problem = key + ": a memory cap needs a CUDA or ROCm device (the caching allocator's per-process fraction); this "
              "run is on " + device.id + ", where nothing would be capped";
  } else if (device.memory_bytes > 0 && *s.memory_limit > device.memory_bytes) {
    problem = key + ": " + gib(*s.memory_limit) + " is more than " + device.id + " has (" + gib(device.memory_bytes) +
              "): there is nothing to cap";
  }
  if (!problem.empty()) {
    if (refuse) throw ScenarioError(origin_of(s, key), key, problem);
    r.notes.push_back(problem + "; a run here is refused.");
    return;
  }
  r.notes.push_back("Memory capped at " + gib(*s.memory_limit) +
                    (s.emulate.empty() ? std::string() : " (emulating " + s.emulate + "'s usable memory)") +
                    " through the caching allocator: what it holds counts; the CUDA context and memory outside the "
                    "allocator do not (about " + gib(static_cast<int64_t>(kContextGiB * 1073741824.0)) +
                    " on a real card), so the cap can be that much more generous than the card.");
}

}  // namespace

std::optional<int64_t> requested_memory_cap(const Scenario& s) {
  if (s.memory_limit) return s.memory_limit;
  const DeviceSpec* spec = s.emulate.empty() ? nullptr : find_device_spec(s.emulate);
  if (spec == nullptr || !spec->memory_gb) return std::nullopt;
  return usable_memory_bytes(*spec->memory_gb);
}

Scenario load_scenario(const ScenarioInputs& in, const ModelOptions& models) {
  ScenarioLoader loader(models);
  Scenario s;
  if (in.config) loader.load_file(*in.config, s);
  if (in.model) loader.apply_override("model", *in.model, "MODEL", s);
  auto flag = [&in](const std::string& key) {
    const auto it = in.flag_of.find(key);
    return it != in.flag_of.end() ? it->second : "--" + key;
  };
  if (in.amp && in.overrides.count("precision")) {
    throw ScenarioError(Origin{"command line --amp", 0, 0}, "precision",
                        "--amp and --precision both set the precision; give one of them");
  }
  if (in.amp) loader.apply_override("precision", "amp", "--amp", s);
  if (in.channels_last) loader.apply_override("memory_format", "channels_last", "--channels-last", s);
  // The model first, so that its own keys are read by its declaration.
  if (const auto it = in.overrides.find("model"); it != in.overrides.end()) {
    loader.apply_override("model", it->second, flag("model"), s);
  }
  for (const auto& [key, value] : in.overrides) {
    if (key != "model") loader.apply_override(key, value, flag(key), s);
  }
  loader.apply_aliases(s);
  loader.check(s);
  if (s.memory_limit && !s.emulate.empty()) {
    // Each sets the cap: taking one silently would run (or plan for) another card than the one asked for.
    throw ScenarioError(origin_of(s, "emulate"), "emulate",
                        "memory_limit and emulate both set the memory cap (emulate: that card's usable memory); give "
                        "one of them");
  }
  return s;
}

std::optional<std::string> fp8_unsupported(const std::string& device_type, const std::string& device_name,
                                           int capability) {
  const std::string need = "FP8 training needs FP8 tensor cores: an NVIDIA GPU of compute capability 8.9 or later "
                           "(Ada, Hopper, Blackwell)";
  const DeviceKind kind = device_kind(device_type);
  if (kind == DeviceKind::kCpu) return need + "; the CPU has none";
  if (kind == DeviceKind::kMps) return need + "; " + (device_name.empty() ? "Apple MPS" : device_name) + " has none";
  if (kind == DeviceKind::kRocm) {
    return need + "; gpubench does not run FP8 on ROCm (" + device_name + ") yet";
  }
  if (capability < 89) {
    return need + "; " + (device_name.empty() ? device_type : device_name) + " is compute capability " +
           std::to_string(capability / 10) + "." + std::to_string(capability % 10);
  }
  return std::nullopt;
}

std::string resolved_precision(const std::string& requested, const std::string& device_type) {
  if (parse_precision(requested) != Precision::kAmp) return requested;
  if (device_kind(device_type) != DeviceKind::kCpu) return "fp16";
  // Mixed precision is for speed: on a CPU without bf16 instructions autocast would be emulated, ~9x slower than fp32.
  return cpu_bf16_support().native ? "bf16" : "fp32";
}

std::vector<std::string> fill_device_defaults(Scenario& s, const ModelInfo& model, const DeviceFacts& d) {
  std::vector<std::string> notes;
  const DeviceKind kind = device_kind(d.type);
  const bool cpu = kind == DeviceKind::kCpu;
  if (d.available) s.device = d.id;
  std::vector<std::string> bounded;
  if (run_mode(s) == RunMode::kGenerate) {
    // Generation: one sequence by default (llama-bench's and vLLM's latency figures), a 512-token prompt and 128 new
    // tokens (llama-bench's pp512 and tg128), five timed generations after one untimed one.
    if (!s.batch_size) s.batch_size = 1;
    if (!s.prompt_tokens) s.prompt_tokens = 512;
    if (!s.new_tokens) s.new_tokens = 128;
    if (!s.is_set("epochs")) s.epochs = 5;
    if (!s.warmup_steps) s.warmup_steps = 1;
  }
  if (!s.batch_size) {
    s.batch_size = cpu ? std::min<int64_t>(16, model.default_batch_size) : model.default_batch_size;
    if (cpu && *s.batch_size < model.default_batch_size) {
      bounded.push_back("batch size 16 (GPU default " + std::to_string(model.default_batch_size) + ")");
    }
  }
  if (!s.warmup_steps) {
    s.warmup_steps = cpu ? 2 : 10;
    if (cpu) bounded.push_back("2 warm-up steps");
  }
  if (!s.time_budget_s && cpu) {
    // About a minute in all, warm-up included, where a step takes seconds (a ResNet-50 step on 2 cores: 2-4 s).
    s.time_budget_s = 30.0;
    bounded.push_back("a 30 s time budget for the timed epochs");
  }
  if (cpu) {
    std::string msg = std::string("No GPU in use: ") +
                      (run_mode(s) == RunMode::kInference  ? "inference"
                       : run_mode(s) == RunMode::kGenerate ? "generation"
                                                           : "training") +
                      " on the CPU (" + d.id + ").";
    if (!bounded.empty()) {
      msg += " Bounded so the run ends in about a minute: ";
      for (size_t i = 0; i < bounded.size(); ++i) msg += (i ? ", " : "") + bounded[i];
      msg += ". Set --batch-size/--warmup-steps/--time-budget to change this.";
    }
    msg += " CPU numbers are not comparable with GPU numbers.";
    notes.push_back(msg);
  }
  if (s.memory_format == "auto") {
    s.memory_format =
        (model.channels_last && (cuda_like(kind) || kind == DeviceKind::kMps)) ? "channels_last" : "contiguous";
  }
  // The model's recipe fills what the scenario leaves open, if it names the same optimizer; then PyTorch's defaults.
  OptimizerSettings& o = s.optimizer;
  const OptimizerSettings& recipe = model.recipe;
  if (o.name.empty()) o.name = recipe.name;
  // ATen's fused kernels: one launch per update and an fp16 skip decided on the device (torch.optim's fused=True).
  if (o.implementation.empty()) o.implementation = "fused";
  const bool same = o.name == recipe.name;
  auto fill = [same](std::optional<double>& v, const std::optional<double>& from_recipe, double fallback) {
    if (!v) v = (same && from_recipe) ? *from_recipe : fallback;
  };
  if (o.name == "sgd") {
    fill(o.lr, recipe.lr, 0.1);  // torchvision's ResNet recipe
    fill(o.momentum, recipe.momentum, 0.9);
    fill(o.weight_decay, recipe.weight_decay, 1e-4);
    o.nesterov = o.nesterov.value_or(false);
    o.beta1 = o.beta2 = o.eps = std::nullopt;
  } else {
    fill(o.lr, recipe.lr, 1e-3);  // torch.optim.AdamW defaults
    fill(o.beta1, recipe.beta1, 0.9);
    fill(o.beta2, recipe.beta2, 0.999);
    fill(o.eps, recipe.eps, 1e-8);
    fill(o.weight_decay, recipe.weight_decay, 1e-2);
    o.momentum = std::nullopt;
    o.nesterov = std::nullopt;
  }
  return notes;
}

std::string file_name_part(std::string text) {
  for (char& c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_' && c != '=') c = '-';
  }
  return text;
}

std::string repeat_record_path(const std::string& path, int index, int count) {
  if (count <= 1) return path;
  // Only the file name changes: "a.json/run" or "runs.json/x.json" keep their folders.
  std::filesystem::path p(path);
  const std::string stem = p.extension() == ".json" ? p.stem().string() : p.filename().string();
  p.replace_filename(stem + "_r" + std::to_string(index) + ".json");
  return p.string();
}

std::string default_record_path(const Scenario& s, const std::string& precision, int repeats) {
  const std::string base = "runs/" + file_name_part(s.model) + "_" + file_name_part(s.device) + "_" +
                           file_name_part(precision) + "_bs" +
                           (s.batch_size ? std::to_string(*s.batch_size) : std::string("default"));
  std::error_code ec;
  for (int k = 1; k < 100000; ++k) {
    const std::string path = base + (k == 1 ? "" : "_" + std::to_string(k)) + ".json";
    if (!std::filesystem::exists(repeat_record_path(path, 1, repeats), ec)) return path;
  }
  throw std::runtime_error("no free record name of the form " + base + "_N.json under runs/; pass --output");
}

namespace {

/// mode: generate: a decoder, prompt and new tokens within its positions, ATen's kernels.
void check_generation(const Scenario& s, const ModelInfo& model, int world_size) {
  if (!model.generates) {
    throw ScenarioError(origin_of(s, "mode"), "mode",
                        "mode: generate runs decoders with a KV cache (gpt2, llama); " + s.model + " is not one");
  }
  const int64_t prompt = s.prompt_tokens.value_or(0), fresh = s.new_tokens.value_or(0);
  const std::optional<int64_t> positions = s.option<int64_t>("seq_len");
  if (positions && prompt + fresh > *positions) {
    const std::string key = s.is_set("new_tokens") && !s.is_set("prompt_tokens") ? "new_tokens" : "prompt_tokens";
    throw ScenarioError(origin_of(s, key), key,
                        "prompt_tokens (" + std::to_string(prompt) + ") + new_tokens (" + std::to_string(fresh) +
                            ") = " + std::to_string(prompt + fresh) + " positions, more than " + s.model +
                            "'s seq_len (" + std::to_string(*positions) + "); lower prompt_tokens or new_tokens, or "
                            "raise seq_len");
  }
  if (world_size > 1) {
    throw ScenarioError(origin_of(s, "mode"), "mode",
                        "mode: generate runs on one device (" + std::to_string(world_size) +
                            " ranks asked); run one process per device and compare their records");
  }
}

}  // namespace

void apply_documented_environment(Scenario& s, const std::function<const char*(const char*)>& getenv) {
  std::vector<std::pair<std::string, nlohmann::json>> values;
  try {
    values = kernel_options_from_environment(getenv);
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();  // "VARIABLE='value': takes ..."
    std::string key = "kernel_options";
    for (const auto& o : kernel_option_table()) {
      if (what.rfind(o.env + "=", 0) == 0) key += "." + o.name;
    }
    throw ScenarioError(Origin{"environment", 0, 0}, key, what);
  }
  for (const auto& [name, value] : values) {
    const std::string key = "kernel_options." + name;
    if (s.is_set(key)) continue;  // the file or a flag said otherwise
    const KernelOptionInfo& info = *find_kernel_option(name);
    info.set(s.kernel_options, value);
    s.origins[key] = Origin{"environment " + info.env, 0, 0};
  }
  const auto text = [&getenv](const char* name) {
    const char* v = getenv(name);
    return v != nullptr ? std::string(v) : std::string();
  };
  s.fault_inject = text("GPUBENCH_FAULT_INJECT");
  s.nvjpeg_library = text("GPUBENCH_NVJPEG");
}

std::vector<std::pair<std::string, std::string>> cuda_module_requests(const Scenario& s) {
  std::vector<std::pair<std::string, std::string>> out;
  if (s.kernels == "fused") out.emplace_back("kernels", "kernels: fused (--kernels fused)");
  if (parse_precision(s.precision) == Precision::kFp8) {
    out.emplace_back("precision", "precision: fp8 (--precision fp8)");
  }
  if (s.data == "folder" && (s.decode == "gpu" || s.decode == "mixed")) {
    out.emplace_back("decode", "decode: " + s.decode + " (--decode " + s.decode + ")");
  }
  if (s.graph) out.emplace_back("graph", "graph: true (--cuda-graph)");
  if (s.memory_limit || !s.emulate.empty()) {
    const std::string key = s.emulate.empty() ? "memory_limit" : "emulate";
    out.emplace_back(key, key + " (--" + (s.emulate.empty() ? std::string("memory-limit") : std::string("emulate")) +
                              "): the CUDA caching allocator's cap");
  }
  return out;
}

ResolvedScenario resolve_scenario(const Scenario& requested, const ModelCatalog& models, const DeviceFacts& device,
                                  const ResolveOptions& options) {
  const ModelInfo* model = find_model_info(models, requested.model);
  if (model == nullptr) {
    std::string known;
    for (const auto& m : models) known += (known.empty() ? "" : ", ") + m.name;
    throw ScenarioError(origin_of(requested, "model"), "model",
                        "unknown model '" + requested.model + "'; known models: " + known);
  }
  ResolvedScenario r;
  r.device = device;
  try {
    r.scenario = fill_model_options(*model, requested);
  } catch (const std::invalid_argument& e) {
    throw ScenarioError(origin_of(requested, "model"), "model", e.what());
  }
  apply_documented_environment(r.scenario, [](const char* name) { return std::getenv(name); });
  r.notes = fill_device_defaults(r.scenario, *model, device);
  r.precision = resolved_precision(r.scenario.precision, device.type);
  Scenario& s = r.scenario;
  // What only the CUDA module runs: refused in a build without it, and on a device the generic backend serves.
  std::string lacks;
  if (device.available && device.backend == "generic") {  // whatever the build: the device is the reason
    lacks = device.id + " runs on gpubench's generic backend, which has none (gpubench's fused and FP8 kernels, "
            "nvJPEG, CUDA graphs and the allocator cap are its CUDA backend's; docs/backends.md)";
  } else if (!options.cuda_module) {
    lacks = "this build has no CUDA support (gpubench was built without its CUDA module: GPUBENCH_CUDA=OFF, or no nvcc "
            "at configure time)";
  }
  if (!lacks.empty()) {
    std::vector<ScenarioError> refused;
    for (const auto& [key, what] : cuda_module_requests(s)) {
      const std::string why = what + ": " + lacks;
      if (options.refuse_unsupported) {
        refused.emplace_back(origin_of(s, key), key, why);
      } else {
        r.notes.push_back(why + "; a run with this build is refused.");
      }
    }
    if (refused.size() == 1) throw refused.front();
    if (!refused.empty()) throw ScenarioError(std::move(refused));
  }
  if (options.world_size > 1 && device.available && device.backend == "generic") {
    const std::string why = "a " + std::to_string(options.world_size) + "-rank run on " + device.id +
                            ": multi-process training needs NCCL (CUDA, ROCm) or Gloo (the CPU); the generic backend "
                            "that runs " + device.id + " has no collective backend (docs/backends.md)";
    if (options.refuse_unsupported) throw ScenarioError(origin_of(s, "device"), "device", why);
    r.notes.push_back(why + "; a run here is refused.");
  }
  if (parse_precision(s.precision) == Precision::kFp8 && device.available) {
    if (const auto why = fp8_unsupported(device.type, device.name, device.compute_capability)) {
      if (options.refuse_unsupported) {
        throw ScenarioError(origin_of(s, "precision"), "precision", "precision: fp8 on " + device.id + ": " + *why);
      }
      r.notes.push_back("precision: fp8 cannot run on " + device.id + " (" + *why + "); a run here is refused.");
    }
  }
  if (model->check) {
    try {
      model->check(s);
    } catch (const std::invalid_argument& e) {
      const std::string key = first_key_named(e.what(), *model);
      throw ScenarioError(origin_of(s, key), key, e.what());
    }
  }
  if (run_mode(s) == RunMode::kGenerate) check_generation(s, *model, options.world_size);
  if (s.data == "folder" && !model->image_input) {
    throw ScenarioError(origin_of(s, "data"), "data",
                        "data: folder feeds image classifiers; " + s.model + " takes no images");
  }
  if (s.data == "folder" && (s.decode == "gpu" || s.decode == "mixed") &&
      device_kind(device.type) != DeviceKind::kCuda) {
    throw ScenarioError(origin_of(s, "decode"), "decode",
                        "decode: " + s.decode + " uses nvJPEG, which needs a CUDA device; this run is on " + device.id +
                            " (use cpu, or auto: the GPU where it works)");
  }
  apply_memory_limit(r, options.refuse_unsupported);
  r.memory = estimate_memory(s, *model, r.precision, device);
  if (r.memory && s.memory_limit) {
    r.memory->available_bytes = *s.memory_limit;
    r.memory->available_source = s.emulate.empty() ? "memory_limit" : "memory_limit (emulating " + s.emulate + ")";
  }
  if (r.memory && !r.memory->fits()) {
    const MemoryEstimate& m = *r.memory;
    const std::string what =
        s.model + " at batch size " + std::to_string(s.batch_size.value_or(1)) + " in " + r.precision + " (" + s.mode +
        ") needs about " + gib(m.total_bytes) + " (weights " + gib(m.weights_bytes + m.autocast_copy_bytes) +
        ", gradients " + gib(m.gradient_bytes) + ", optimizer state " + gib(m.optimizer_bytes) + ", activations " +
        gib(m.activation_bytes) + "; the gradients and the activations are never held at once) but " + device.id +
        " has " + gib(m.available_bytes) + " (" + m.available_source + ")";
    if (s.memory_check == "refuse" && options.refuse_memory) {
      const std::string key = s.is_set("batch_size") || !s.is_set("model") ? "batch_size" : "model";
      throw ScenarioError(origin_of(s, key), key,
                          what + "; lower batch_size, set gradient_checkpointing, use a larger device, or set "
                                 "memory_check: warn to run anyway");
    }
    r.notes.push_back("Memory: " + what + (s.memory_check == "refuse" ? "; a run here is refused (memory_check: refuse)."
                                                                        : "; it may run out of memory (memory_check: warn)."));
  }
  if (s.data == "folder" && options.check_data) {
    try {
      options.check_data(s, std::max(1, options.world_size));
    } catch (const std::exception& e) {
      throw ScenarioError(origin_of(s, "data_path"), "data_path", e.what());
    }
  }
  if (s.output.empty() && options.choose_output) {
    try {
      s.output = default_record_path(s, r.precision, options.repeats);
    } catch (const std::exception& e) {
      throw ScenarioError(origin_of(s, "output"), "output", e.what());
    }
  }
  for (int i = 1; i <= std::max(1, options.repeats) && !s.output.empty(); ++i) {
    r.record_paths.push_back(repeat_record_path(s.output, i, options.repeats));
  }
  return r;
}

void to_json(nlohmann::json& j, const DeviceFacts& d) {
  j = {{"id", d.id}, {"type", d.type}, {"available", d.available}, {"reason", d.reason}};
  if (!d.name.empty()) j["name"] = d.name;
  if (d.compute_capability > 0) j["compute_capability"] = d.compute_capability;
  if (!d.backend.empty()) j["backend"] = d.backend;
}

void to_json(nlohmann::json& j, const MemoryEstimate& m) {
  j = {{"parameters", m.parameters},         {"weights_bytes", m.weights_bytes},
       {"autocast_copy_bytes", m.autocast_copy_bytes}, {"gradient_bytes", m.gradient_bytes},
       {"optimizer_bytes", m.optimizer_bytes}, {"activation_bytes", m.activation_bytes},
       {"total_bytes", m.total_bytes},       {"available_bytes", m.available_bytes},
       {"available_source", m.available_source}};
}

void to_json(nlohmann::json& j, const ResolvedScenario& r) {
  nlohmann::json sources = nlohmann::json::object();
  for (const auto& [key, origin] : r.scenario.origins) sources[key] = origin.describe();
  j = {{"schema", "gpubench.resolved_scenario"},
       {"scenario", r.scenario},
       {"scenario_sources", sources},
       {"device", r.device},
       {"precision", r.precision},
       {"notes", r.notes},
       {"record_paths", r.record_paths}};
  if (r.memory) j["memory_estimate"] = *r.memory;
}

}  // namespace gpubench
