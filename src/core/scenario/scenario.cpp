#include "gpubench/core/scenario/scenario.hpp"

#include <stdexcept>
#include <tuple>

#include "gpubench/core/record/json_optional.hpp"
#include "gpubench/core/scenario/precision.hpp"
#include "gpubench/core/scenario/run_mode.hpp"

namespace gpubench {

std::string Origin::describe() const {
  if (line <= 0) return source;
  return source + ":" + std::to_string(line) + ":" + std::to_string(column);
}

const std::vector<std::string>& precision_names() {
  static const std::vector<std::string> names{"fp32", "tf32", "bf16", "fp16", "amp", "fp8"};
  return names;
}

void to_json(nlohmann::json& j, const Origin& o) {
  j = {{"source", o.source}, {"line", o.line}, {"column", o.column}};
}
void from_json(const nlohmann::json& j, Origin& o) {
  o.source = j.value("source", std::string());
  o.line = j.value("line", 0);
  o.column = j.value("column", 0);
}

void to_json(nlohmann::json& j, const OptimizerSettings& o) {
  j = {{"name", o.name},   {"lr", o.lr},       {"momentum", o.momentum}, {"weight_decay", o.weight_decay},
       {"nesterov", o.nesterov}, {"beta1", o.beta1}, {"beta2", o.beta2},       {"eps", o.eps},
       {"implementation", o.implementation}};
}
void from_json(const nlohmann::json& j, OptimizerSettings& o) {
  OptimizerSettings d;
  o.name = j.value("name", d.name);
  o.lr = j.value("lr", d.lr);
  o.momentum = j.value("momentum", d.momentum);
  o.weight_decay = j.value("weight_decay", d.weight_decay);
  o.nesterov = j.value("nesterov", d.nesterov);
  o.beta1 = j.value("beta1", d.beta1);
  o.beta2 = j.value("beta2", d.beta2);
  o.eps = j.value("eps", d.eps);
  o.implementation = j.value("implementation", d.implementation);
}

bool kernel_options_apply(const Scenario& s) {
  return s.fused_kernels() || parse_run_mode(s.mode) == RunMode::kGenerate || s.data == "folder";
}

// The keys written here are exactly the keys a scenario file accepts, so a record's scenario can be re-run.
void to_json(nlohmann::json& j, const Scenario& s) {
  j = nlohmann::json::object();
  j["name"] = s.name;
  j["model"] = s.model;
  j["batch_size"] = s.batch_size;
  j["precision"] = s.precision;
  j["memory_format"] = s.memory_format;
  j["device"] = s.device;
  j["mode"] = s.mode;
  if (parse_run_mode(s.mode) == RunMode::kGenerate) {  // only here: a training record's identity has no generation keys
    j["prompt_tokens"] = s.prompt_tokens;
    j["new_tokens"] = s.new_tokens;
    j["kv_cache_dtype"] = s.kv_cache_dtype;
  }
  if (parse_precision(s.precision) == Precision::kFp8) {  // only here: other records' identities have no FP8 keys
    j["fp8_grad_format"] = s.fp8_grad_format;
    j["fp8_scaling"] = s.fp8_scaling;
    j["fp8_amax_history"] = s.fp8_amax_history;
    j["fp8_lm_head"] = s.fp8_lm_head;
    j["fp8_classifier"] = s.fp8_classifier;
  }
  j["epochs"] = s.epochs;
  j["dataset_size"] = s.dataset_size;
  j["warmup_steps"] = s.warmup_steps;
  j["optimizer"] = s.optimizer;
  j["seed"] = s.seed;
  j["time_budget_s"] = s.time_budget_s;
  j["duration_s"] = s.duration_s;
  j["grad_accumulation"] = s.grad_accumulation;
  j["cudnn_benchmark"] = s.cudnn_benchmark;
  j["graph"] = s.graph;
  j["kernels"] = s.kernels;
  if (kernel_options_apply(s)) j["kernel_options"] = s.kernel_options;  // only there: other identities stay as they were
  j["memory_check"] = s.memory_check;
  if (s.memory_limit) j["memory_limit"] = *s.memory_limit;  // only where set: other identities stay as they were
  if (!s.emulate.empty()) j["emulate"] = s.emulate;
  if (!s.backend_library.empty()) j["backend_library"] = s.backend_library;
  j["ddp_bucket_mb"] = s.ddp_bucket_mb;
  j["ddp_timeout_s"] = s.ddp_timeout_s;
  j["output"] = s.output;
  j["telemetry"] = s.telemetry;
  j["telemetry_interval_s"] = s.telemetry_interval_s;
  j["telemetry_trace"] = s.telemetry_trace;
  j["profile"] = s.profile;
  j["profile_steps"] = s.profile_steps;
  j["data"] = s.data;
  j["data_path"] = s.data_path;
  j["data_workers"] = s.data_workers;
  j["decode"] = s.decode;
  j["prefetch"] = s.prefetch;
  j["data_only"] = s.data_only;
  for (const auto& [key, value] : s.model_options) {
    if (!j.contains(key)) j[key] = value;  // the model's own keys sit beside the common ones, as in a scenario file
  }
}
void from_json(const nlohmann::json& j, Scenario& s) {
  Scenario d;
  s.name = j.value("name", d.name);
  s.model = j.value("model", d.model);
  s.batch_size = j.value("batch_size", d.batch_size);
  s.precision = j.value("precision", d.precision);
  s.memory_format = j.value("memory_format", d.memory_format);
  s.device = j.value("device", d.device);
  s.mode = j.value("mode", d.mode);
  s.prompt_tokens = j.value("prompt_tokens", d.prompt_tokens);
  s.new_tokens = j.value("new_tokens", d.new_tokens);
  s.kv_cache_dtype = j.value("kv_cache_dtype", d.kv_cache_dtype);
  s.fp8_grad_format = j.value("fp8_grad_format", d.fp8_grad_format);
  s.fp8_scaling = j.value("fp8_scaling", d.fp8_scaling);
  s.fp8_amax_history = j.value("fp8_amax_history", d.fp8_amax_history);
  s.fp8_lm_head = j.value("fp8_lm_head", d.fp8_lm_head);
  s.fp8_classifier = j.value("fp8_classifier", d.fp8_classifier);
  s.epochs = j.value("epochs", d.epochs);
  s.dataset_size = j.value("dataset_size", d.dataset_size);
  s.warmup_steps = j.value("warmup_steps", d.warmup_steps);
  s.optimizer = j.value("optimizer", d.optimizer);
  if (j.contains("seed") && !(j["seed"].is_number_unsigned() || (j["seed"].is_number_integer() && j["seed"] >= 0))) {
    throw std::runtime_error("scenario \"seed\" must be a non-negative integer, got " + j["seed"].dump());
  }
  s.seed = j.value("seed", d.seed);
  s.time_budget_s = j.value("time_budget_s", d.time_budget_s);
  s.duration_s = j.value("duration_s", d.duration_s);
  s.grad_accumulation = j.value("grad_accumulation", d.grad_accumulation);
  s.cudnn_benchmark = j.value("cudnn_benchmark", d.cudnn_benchmark);
  s.graph = j.value("graph", d.graph);
  s.kernels = j.value("kernels", d.kernels);
  s.kernel_options = j.value("kernel_options", d.kernel_options);
  s.memory_check = j.value("memory_check", d.memory_check);
  s.memory_limit = j.value("memory_limit", d.memory_limit);
  s.emulate = j.value("emulate", d.emulate);
  s.backend_library = j.value("backend_library", d.backend_library);
  s.ddp_bucket_mb = j.value("ddp_bucket_mb", d.ddp_bucket_mb);
  s.ddp_timeout_s = j.value("ddp_timeout_s", d.ddp_timeout_s);
  s.output = j.value("output", d.output);
  s.telemetry = j.value("telemetry", d.telemetry);
  s.telemetry_interval_s = j.value("telemetry_interval_s", d.telemetry_interval_s);
  s.telemetry_trace = j.value("telemetry_trace", d.telemetry_trace);
  s.profile = j.value("profile", d.profile);
  s.profile_steps = j.value("profile_steps", d.profile_steps);
  s.data = j.value("data", d.data);
  s.data_path = j.value("data_path", d.data_path);
  s.data_workers = j.value("data_workers", d.data_workers);
  s.decode = j.value("decode", d.decode);
  s.prefetch = j.value("prefetch", d.prefetch);
  s.data_only = j.value("data_only", d.data_only);
  // Every other key is one of the model's own; only scalars can be (a record is untrusted input).
  static const nlohmann::json common = Scenario{};
  s.model_options.clear();
  for (const auto& [key, value] : j.items()) {
    if (common.contains(key) || key == "prompt_tokens" || key == "new_tokens" || key == "kv_cache_dtype" ||
        key.rfind("fp8_", 0) == 0 || key == "kernel_options") {
      continue;
    }
    if (value.is_structured()) throw std::runtime_error("scenario \"" + key + "\" must be a single value");
    s.model_options[key] = value;
  }
}

// Member by member (not through JSON): a key the serialiser forgets then shows up as a round-trip difference.
bool Scenario::operator==(const Scenario& o) const {
  return std::tie(name, model, batch_size, precision, memory_format, device, epochs, dataset_size, warmup_steps,
                  optimizer, seed, time_budget_s, duration_s, model_options, grad_accumulation, cudnn_benchmark, graph, ddp_bucket_mb, ddp_timeout_s, output, telemetry, telemetry_interval_s,
                  telemetry_trace, profile, profile_steps, data, data_path, data_workers, decode, prefetch, data_only, mode,
                  kernels, memory_check, prompt_tokens, new_tokens, kv_cache_dtype, fp8_grad_format, fp8_scaling,
                  fp8_amax_history, fp8_lm_head, fp8_classifier, kernel_options, memory_limit, emulate) ==
         std::tie(o.name, o.model, o.batch_size, o.precision, o.memory_format, o.device, o.epochs, o.dataset_size,
                  o.warmup_steps, o.optimizer, o.seed, o.time_budget_s, o.duration_s, o.model_options,
                  o.grad_accumulation, o.cudnn_benchmark, o.graph, o.ddp_bucket_mb,
                  o.ddp_timeout_s, o.output, o.telemetry, o.telemetry_interval_s, o.telemetry_trace, o.profile,
                  o.profile_steps, o.data, o.data_path, o.data_workers, o.decode, o.prefetch, o.data_only, o.mode,
                  o.kernels, o.memory_check, o.prompt_tokens, o.new_tokens, o.kv_cache_dtype, o.fp8_grad_format,
                  o.fp8_scaling, o.fp8_amax_history, o.fp8_lm_head, o.fp8_classifier, o.kernel_options,
                  o.memory_limit, o.emulate);
}

}  // namespace gpubench
