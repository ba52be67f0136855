#include "gpubench/core/scenario.hpp"

#include <stdexcept>
#include <tuple>

#include "gpubench/core/json_optional.hpp"

namespace gpubench {

std::string Origin::describe() const {
  if (line <= 0) return source;
  return source + ":" + std::to_string(line) + ":" + std::to_string(column);
}

const std::vector<std::string>& precision_names() {
  static const std::vector<std::string> names{"fp32", "tf32", "bf16", "fp16", "amp"};
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

// The keys written here are exactly the keys a scenario file accepts, so a record's scenario can be re-run.
void to_json(nlohmann::json& j, const Scenario& s) {
  j = nlohmann::json::object();
  j["name"] = s.name;
  j["model"] = s.model;
  j["batch_size"] = s.batch_size;
  j["precision"] = s.precision;
  j["memory_format"] = s.memory_format;
  j["device"] = s.device;
  j["epochs"] = s.epochs;
  j["dataset_size"] = s.dataset_size;
  j["warmup_steps"] = s.warmup_steps;
  j["optimizer"] = s.optimizer;
  j["seed"] = s.seed;
  j["time_budget_s"] = s.time_budget_s;
  j["duration_s"] = s.duration_s;
  j["image_size"] = s.image_size;
  j["num_classes"] = s.num_classes;
  j["seq_len"] = s.seq_len;
  j["num_labels"] = s.num_labels;
  j["latent_size"] = s.latent_size;
  j["attention"] = s.attention;
  j["layers"] = s.layers;
  j["width"] = s.width;
  j["heads"] = s.heads;
  j["dropout"] = s.dropout;
  j["grad_accumulation"] = s.grad_accumulation;
  j["gradient_checkpointing"] = s.gradient_checkpointing;
  j["cudnn_benchmark"] = s.cudnn_benchmark;
  j["graph"] = s.graph;
  j["ddp_bucket_mb"] = s.ddp_bucket_mb;
  j["ddp_timeout_s"] = s.ddp_timeout_s;
  j["output"] = s.output;
  j["telemetry"] = s.telemetry;
  j["telemetry_interval_s"] = s.telemetry_interval_s;
  j["telemetry_trace"] = s.telemetry_trace;
}
void from_json(const nlohmann::json& j, Scenario& s) {
  Scenario d;
  s.name = j.value("name", d.name);
  s.model = j.value("model", d.model);
  s.batch_size = j.value("batch_size", d.batch_size);
  s.precision = j.value("precision", d.precision);
  s.memory_format = j.value("memory_format", d.memory_format);
  s.device = j.value("device", d.device);
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
  s.image_size = j.value("image_size", d.image_size);
  s.num_classes = j.value("num_classes", d.num_classes);
  s.seq_len = j.value("seq_len", d.seq_len);
  s.num_labels = j.value("num_labels", d.num_labels);
  s.latent_size = j.value("latent_size", d.latent_size);
  s.attention = j.value("attention", d.attention);
  s.layers = j.value("layers", d.layers);
  s.width = j.value("width", d.width);
  s.heads = j.value("heads", d.heads);
  s.dropout = j.value("dropout", d.dropout);
  s.grad_accumulation = j.value("grad_accumulation", d.grad_accumulation);
  s.gradient_checkpointing = j.value("gradient_checkpointing", d.gradient_checkpointing);
  s.cudnn_benchmark = j.value("cudnn_benchmark", d.cudnn_benchmark);
  s.graph = j.value("graph", d.graph);
  s.ddp_bucket_mb = j.value("ddp_bucket_mb", d.ddp_bucket_mb);
  s.ddp_timeout_s = j.value("ddp_timeout_s", d.ddp_timeout_s);
  s.output = j.value("output", d.output);
  s.telemetry = j.value("telemetry", d.telemetry);
  s.telemetry_interval_s = j.value("telemetry_interval_s", d.telemetry_interval_s);
  s.telemetry_trace = j.value("telemetry_trace", d.telemetry_trace);
}

// Member by member (not through JSON): a key the serialiser forgets then shows up as a round-trip difference.
bool OptimizerSettings::operator==(const OptimizerSettings& o) const {
  return std::tie(name, lr, momentum, weight_decay, nesterov, beta1, beta2, eps, implementation) ==
         std::tie(o.name, o.lr, o.momentum, o.weight_decay, o.nesterov, o.beta1, o.beta2, o.eps, o.implementation);
}
bool Scenario::operator==(const Scenario& o) const {
  return std::tie(name, model, batch_size, precision, memory_format, device, epochs, dataset_size, warmup_steps,
                  optimizer, seed, time_budget_s, duration_s, image_size, num_classes, seq_len, num_labels,
                  latent_size, attention, layers, width, heads, dropout, grad_accumulation, gradient_checkpointing,
                  cudnn_benchmark, graph, ddp_bucket_mb, ddp_timeout_s, output, telemetry, telemetry_interval_s,
                  telemetry_trace) ==
         std::tie(o.name, o.model, o.batch_size, o.precision, o.memory_format, o.device, o.epochs, o.dataset_size,
                  o.warmup_steps, o.optimizer, o.seed, o.time_budget_s, o.duration_s, o.image_size, o.num_classes,
                  o.seq_len, o.num_labels, o.latent_size, o.attention, o.layers, o.width, o.heads, o.dropout,
                  o.grad_accumulation, o.gradient_checkpointing, o.cudnn_benchmark, o.graph, o.ddp_bucket_mb,
                  o.ddp_timeout_s, o.output, o.telemetry, o.telemetry_interval_s, o.telemetry_trace);
}

}  // namespace gpubench
