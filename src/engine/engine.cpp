// run_benchmark(): resolves a scenario against the device and model registry, trains, and turns every
// failure into a record with a status and a reason.

#include <c10/util/Exception.h>
#include <torch/utils.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <sstream>

#include "device.h"
#include "distributed.h"
#include "gpubench/engine/engine.hpp"
#include "models/registry.h"
#include "precision.h"
#include "trainer.h"

namespace gpubench {

namespace {


/// Test hook for OOM handling (sweeps continue past an OOM point): GPUBENCH_FAULT_INJECT=oom-above-batch:N makes
/// every run with a batch larger than N end as if the device ran out of memory.
struct InjectedOom : std::runtime_error {
  using std::runtime_error::runtime_error;
};
void maybe_inject_oom(int64_t batch_size) {
  const char* f = std::getenv("GPUBENCH_FAULT_INJECT");
  long limit = 0;
  if (f != nullptr && std::sscanf(f, "oom-above-batch:%ld", &limit) == 1 && batch_size > limit) {
    throw InjectedOom("injected by GPUBENCH_FAULT_INJECT=" + std::string(f));
  }
}

/// Defaults that depend on the device and model, plus the CPU bounds that keep a GPU-less run short.
void resolve_defaults(Scenario& s, const engine::ResolvedDevice& d, const engine::ModelEntry& model,
                      bool channels_last_helps, RunObserver& observer, std::vector<std::string>& notes) {
  const bool cpu = d.device.is_cpu();
  s.device = d.id;
  std::vector<std::string> bounded;
  if (!s.batch_size) {
    s.batch_size = cpu ? std::min<int64_t>(16, model.info.default_batch_size) : model.info.default_batch_size;
    if (cpu && *s.batch_size < model.info.default_batch_size) {
      bounded.push_back("batch size 16 (GPU default " + std::to_string(model.info.default_batch_size) + ")");
    }
  }
  if (!s.warmup_steps) {
    s.warmup_steps = cpu ? 2 : 10;
    if (cpu) bounded.push_back("2 warm-up steps");
  }
  if (!s.time_budget_s && cpu) {
    s.time_budget_s = 60.0;
    bounded.push_back("a 60 s time budget for the timed epochs");
  }
  if (cpu) {
    std::string msg = std::string("No GPU in use: ") + (s.mode == "inference" ? "inference" : "training") +
                      " on the CPU (" + d.id + ").";
    if (!bounded.empty()) {
      msg += " Bounded so the run ends in minutes: ";
      for (size_t i = 0; i < bounded.size(); ++i) msg += (i ? ", " : "") + bounded[i];
      msg += ". Set --batch-size/--warmup-steps/--time-budget to change this.";
    }
    msg += " CPU numbers are not comparable with GPU numbers.";
    notes.push_back(msg);
    observer.on_note(msg);
  }
  if (s.memory_format == "auto") {
    s.memory_format =
        (channels_last_helps && (d.device.is_cuda() || d.device.is_mps())) ? "channels_last" : "contiguous";
  }
  // The model's recipe fills what the scenario leaves open, if it names the same optimizer; then PyTorch's defaults.
  OptimizerSettings& o = s.optimizer;
  const OptimizerSettings& recipe = model.default_optimizer;
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
}

}  // namespace

std::vector<ModelInfo> available_models() {
  std::vector<ModelInfo> out;
  for (const auto& e : engine::model_registry()) out.push_back(e.info);
  return out;
}

std::vector<std::string> ModelInfo::option_keys() const {
  std::vector<std::string> out;
  for (const auto& o : options) out.push_back(o.key);
  return out;
}

ModelOptions model_options() {
  ModelOptions out;
  for (const auto& e : engine::model_registry()) out[e.info.name] = e.info.options;
  return out;
}

std::vector<std::string> model_names() {
  std::vector<std::string> out;
  for (const auto& e : engine::model_registry()) out.push_back(e.info.name);
  return out;
}

RunRecord run_benchmark(const Scenario& requested, RunObserver& observer, const RunOptions& options) {
  RunRecord record;
  record.scenario = requested;
  record.precision.requested = requested.precision;
  engine::ResolvedDevice device;
  std::unique_ptr<engine::Workload> workload;
  auto fail = [&](RunStatus status, const std::string& reason) {
    record.status = status;
    record.reason = reason;
    summarize_run(record, {});
  };

  const RankInfo& rank = options.rank;
  const std::string who = rank.distributed() ? "rank " + std::to_string(rank.rank) + ": " : "";
  try {
    device = engine::resolve_device(requested.device);
    // Each rank of a multi-process run takes the GPU of its local rank unless the scenario names one.
    const bool indexed = requested.device.find(':') != std::string::npos;
    if (rank.distributed() && device.device.is_cuda() && !indexed) {
      device = engine::resolve_device(device.type + ":" + std::to_string(rank.local_rank));
    }
  } catch (const engine::DeviceUnavailable& e) {
    record.environment = describe_environment(requested.device);
    record.environment.command_line = options.command_line;
    fail(RunStatus::kFailed, e.what());
    return record;
  }
  record.environment = describe_environment(device.id);
  record.environment.command_line = options.command_line;
  engine::make_current(device);

  std::unique_ptr<engine::Communicator> comm;
  auto describe_peers = [&]() -> std::string {
    return comm ? "; " + comm->describe_unresponsive_ranks() : std::string();
  };
  try {
    if (rank.distributed()) {
      comm = std::make_unique<engine::Communicator>(rank, device.device, requested.ddp_timeout_s);
    }
    const engine::ModelEntry& entry = engine::find_model(requested.model);
    // The loader refused other models' keys in files and flags; this also covers callers that bypass it.
    Scenario s = engine::resolve_model_options(entry.info, requested);
    torch::manual_seed(s.seed);
    observer.on_phase("building " + entry.info.name);
    workload = entry.make(s);
    resolve_defaults(s, device, entry, workload->prefers_channels_last(), observer, record.notes);

    engine::TrainingPlan plan;
    plan.scenario = s;
    plan.device = device;
    plan.precision = engine::resolve_precision(s.precision, device);
    if (s.mode == "inference" && plan.precision.loss_scaling) {
      plan.precision.loss_scaling = false;  // no gradients: fp16 inference has nothing to scale
      if (s.precision == "amp") {
        plan.precision.note = "--amp resolved to fp16 autocast on " + device.type + " (inference: no loss scaling)";
      }
    }
    plan.channels_last = s.memory_format == "channels_last";
    plan.stop_requested = options.stop_requested;
    plan.comm = comm.get();
    if (!plan.precision.note.empty()) {
      record.notes.push_back(plan.precision.note);
      observer.on_note(plan.precision.note);
    }
    engine::apply_math_flags(plan.precision, device, s.cudnn_benchmark);

    record.scenario = s;
    record.precision = engine::to_record(plan.precision, s.memory_format);
    record.model.name = entry.info.name;
    record.model.parameters = engine::count_parameters(*workload->module());
    const bool inference = s.mode == "inference";
    record.model.train_flops_per_sample =
        inference ? workload->inference_flops_per_sample() : workload->train_flops_per_sample();
    record.model.attention_flops_per_sample =
        inference ? workload->attention_inference_flops_per_sample() : workload->attention_train_flops_per_sample();
    record.model.step = inference ? workload->inference_step()
                                  : "one training step: forward, loss, backward and optimizer update";
    record.model.sample_unit = entry.info.sample_unit;
    record.model.tokens_per_sample = workload->tokens_per_sample();
    record.model.scenario_keys = entry.info.option_keys();

    observer.on_start(record);
    maybe_inject_oom(*s.batch_size * s.grad_accumulation);
    engine::train(plan, *workload, observer, record);
  } catch (const c10::OutOfMemoryError& e) {
    workload.reset();
    engine::release_cached_memory(device);
    fail(RunStatus::kOom, "out of device memory at batch size " +
                              (record.scenario.batch_size ? std::to_string(*record.scenario.batch_size) : "?") +
                              ": " + engine::first_line(e.what_without_backtrace()));
  } catch (const InjectedOom& e) {
    fail(RunStatus::kOom, "out of device memory at batch size " + std::to_string(*record.scenario.batch_size) + ": " +
                              e.what());
  } catch (const c10::Error& e) {
    fail(RunStatus::kFailed, who + engine::first_line(e.what_without_backtrace()) + describe_peers());
  } catch (const std::exception& e) {
    fail(RunStatus::kFailed, who + engine::first_line(e.what()) + describe_peers());
  }
  return record;
}

}  // namespace gpubench
