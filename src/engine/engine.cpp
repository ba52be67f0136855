// run_benchmark(): resolves a scenario against the device and model registry, trains, and turns every
// failure into a record with a status and a reason.

#include <c10/util/Exception.h>
#include <torch/utils.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <sstream>
#include <tuple>

#include "device.h"
#include "distributed.h"
#include "fp8.h"
#include "fused/fused_ops.h"
#include "generate.h"
#include "gpubench/core/reference/device_table.hpp"
#include "gpubench/core/scenario/precision.hpp"
#include "gpubench/core/scenario/run_mode.hpp"
#include "gpubench/engine/engine.hpp"
#include "kernel_options.h"
#include "models/layers.h"
#include "models/registry.h"
#include "precision.h"
#include "trainer.h"

namespace gpubench {

namespace {


/// Test hook for OOM handling (sweeps continue past an OOM point): fault_inject (GPUBENCH_FAULT_INJECT)
/// oom-above-batch:N makes every run with a batch larger than N end as if the device ran out of memory.
struct InjectedOom : std::runtime_error {
  using std::runtime_error::runtime_error;
};
void maybe_inject_oom(const Scenario& s, int64_t batch_size) {
  long limit = 0;
  if (std::sscanf(s.fault_inject.c_str(), "oom-above-batch:%ld", &limit) == 1 && batch_size > limit) {
    throw InjectedOom("injected by GPUBENCH_FAULT_INJECT=" + s.fault_inject);
  }
}

/// `kernels`: the path, and with `fused` each fused operation and how it runs on this device. A model without fused
/// operations, or one that runs on the ATen form here, is said in a note (never a silent fallback).
void record_kernels(const Scenario& s, const engine::Workload& workload, const engine::ResolvedDevice& device,
                    RunObserver& observer, RunRecord& record) {
  record.execution.kernels = s.kernels;
  if (!s.fused_kernels()) return;
  engine::fused::begin_run();  // the fallbacks reported after this run are its own
  std::vector<std::string> names = workload.fusions();
  if (run_mode(s) == RunMode::kGenerate) {  // no loss in generation: the LM head and its loss in one does not run
    names.erase(std::remove(names.begin(), names.end(), "linear_cross_entropy"), names.end());
  }
  record.execution.fusions = engine::fused::describe(names, device.device, s.kernel_options);
  std::string note;
  if (names.empty()) {
    note = "kernels: fused: " + s.model + (run_mode(s) == RunMode::kInference ? " in inference" : "") +
           " has no fused operations yet; it ran ATen's (the same as kernels: aten)";
  } else {
    std::string aten;
    for (const auto& f : record.execution.fusions) {
      if (f.implementation != "cuda kernel") aten += (aten.empty() ? "" : ", ") + f.name;
    }
    if (!aten.empty()) note = "kernels: fused: " + aten + " ran as ATen operations on " + device.id + " (no kernel here)";
  }
  if (!note.empty()) {
    record.notes.push_back(note);
    observer.on_note(note);
  }
}

/// precision: fp8: the recipe the scenario's keys ask for (the loader has checked their values).
engine::fp8::Recipe fp8_recipe(const Scenario& s) {
  engine::fp8::Recipe r;
  r.grad_format = engine::fp8::parse_format(s.fp8_grad_format).value_or(engine::fp8::Format::kE5M2);
  r.scaling = engine::fp8::parse_scaling(s.fp8_scaling).value_or(engine::fp8::Scaling::kTensor);
  r.amax_history = s.fp8_amax_history;
  r.include_lm_head = s.fp8_lm_head;
  r.include_classifier = s.fp8_classifier;
  return r;
}

/// The record's view of an FP8 run after it: the recipe, the layers whose products ran in FP8 (the plan's selection
/// less those the model never routed through it: products inside a fused operation stay in bf16), MFU against the
/// dense bf16 peak and against the dense FP8 peak (the summary's MFU is against the FP8 peak, the precision of the
/// run; both are here, each with its peak).
Fp8Record describe_fp8(const engine::fp8::Plan& plan, const RunRecord& record) {
  namespace f8 = engine::fp8;
  Fp8Record f;
  const f8::Recipe& r = plan.recipe();
  f.grad_format = f8::name(r.grad_format);
  f.scaling = f8::name(r.scaling);
  f.amax_history = r.scaling == f8::Scaling::kDelayed ? r.amax_history : 0;
  f.converted = plan.ran();
  for (const auto& name : plan.selection().converted) {
    if (std::find(f.converted.begin(), f.converted.end(), name) == f.converted.end()) {
      f.kept.push_back(name + " (eligible, but its product ran inside a fused operation in bf16, or did not run)");
    }
  }
  f.kept.insert(f.kept.end(), plan.selection().kept.begin(), plan.selection().kept.end());
  if (const DeviceSpec* spec = find_device_spec(record.environment.device_name)) {
    // A data-parallel run's aggregate throughput against the peaks of all its devices, as the summary's MFU.
    const double devices =
        record.distributed ? static_cast<double>(std::max<int64_t>(1, record.distributed->world_size)) : 1.0;
    const double achieved = record.summary.achieved_tflops / devices;
    if (spec->bf16_tflops) {
      f.bf16_peak_tflops = *spec->bf16_tflops;
      f.mfu_bf16_peak = achieved / *spec->bf16_tflops;
    }
    if (spec->fp8_tflops) {
      f.fp8_peak_tflops = *spec->fp8_tflops;
      f.mfu_fp8_peak = achieved / *spec->fp8_tflops;
      f.fp8_peak_source = "device table: " + spec->name + " fp8 dense peak (FP32 accumulate)";
    }
  }
  return f;
}

}  // namespace

ModelCatalog available_models() {
  ModelCatalog out;
  for (const auto& e : engine::model_registry()) out.push_back(e.info);
  return out;
}

ModelOptions model_options() { return options_by_model(available_models()); }

std::vector<std::string> model_names() {
  std::vector<std::string> out;
  for (const auto& e : engine::model_registry()) out.push_back(e.info.name);
  return out;
}

DeviceFacts probe_device(const std::string& requested, const RankInfo& rank) {
  DeviceFacts f;
  try {
    engine::ResolvedDevice d = engine::resolve_device(requested);
    // Each rank of a multi-process run takes the GPU of its local rank unless the scenario names one.
    if (rank.distributed() && d.device.is_cuda() && requested.find(':') == std::string::npos) {
      d = engine::resolve_device(d.type + ":" + std::to_string(rank.local_rank));
    }
    f.id = d.id;
    f.type = d.type;
    std::tie(f.memory_bytes, f.memory_source) = engine::usable_memory(d);
    std::tie(f.name, f.compute_capability) = engine::name_and_capability(d);
    f.backend = engine::backend_name(engine::backend_of(d).kind());
  } catch (const engine::DeviceUnavailable& e) {
    f.id = requested;
    const std::string type = requested.substr(0, requested.find(':'));
    f.type = type == "auto" ? "cpu" : type;
    f.available = false;
    f.reason = e.what();
  }
  return f;
}

RunRecord run_benchmark(const Scenario& scenario, RunObserver& observer, const RunOptions& options) {
  ResolvedScenario resolved;
  try {
    if (!scenario.backend_library.empty()) load_backend_library(scenario.backend_library);
    resolved = resolve_scenario(scenario, available_models(), probe_device(scenario.device, options.rank),
                                ResolveOptions{std::max(1, options.rank.world_size), 1, {}, false});
  } catch (const std::exception& e) {
    RunRecord record;
    record.scenario = scenario;
    record.precision.requested = scenario.precision;
    record.environment = describe_environment(scenario.device);
    record.environment.command_line = options.command_line;
    record.status = RunStatus::kFailed;
    record.reason = e.what();
    summarize_run(record, {});
    return record;
  }
  return run_benchmark(resolved, observer, options);
}

RunRecord run_benchmark(const ResolvedScenario& resolved, RunObserver& observer, const RunOptions& options) {
  const Scenario& requested = resolved.scenario;
  RunRecord record;
  record.scenario = requested;
  // What resolution decided comes first, as the user must know it before anything trains.
  for (const auto& note : resolved.notes) {
    record.notes.push_back(note);
    observer.on_note(note);
  }
  record.precision.requested = requested.precision;
  engine::apply_kernel_options(requested.kernel_options);
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
  if (requested.memory_limit) {
    try {
      const std::string cap = engine::cap_device_memory(device, *requested.memory_limit);
      record.notes.push_back("Memory limit: " + cap + (requested.emulate.empty() ? "" : ", emulating " + requested.emulate));
      observer.on_note(record.notes.back());
    } catch (const std::exception& e) {
      fail(RunStatus::kFailed, std::string("memory limit: ") + e.what());
      return record;
    }
  }

  std::unique_ptr<engine::Communicator> comm;
  auto describe_peers = [&]() -> std::string {
    return comm ? "; " + comm->describe_unresponsive_ranks() : std::string();
  };
  try {
    if (rank.distributed()) {
      comm = std::make_unique<engine::Communicator>(rank, device.device, requested.ddp_timeout_s);
    }
    const engine::ModelEntry& entry = engine::find_model(requested.model);
    // The scenario is resolved: every key of the model and every device-dependent default is set.
    const Scenario& s = requested;
    torch::manual_seed(s.seed);
    observer.on_phase("building " + entry.info.name);
    workload = entry.make(s);

    engine::TrainingPlan plan;
    plan.scenario = s;
    plan.device = device;
    plan.precision = engine::resolve_precision(s.precision, device);
    if (run_mode(s) != RunMode::kTrain && plan.precision.loss_scaling) {
      plan.precision.loss_scaling = false;  // no gradients: fp16 inference has nothing to scale
      if (requested_precision(s) == Precision::kAmp) {
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
    const RunMode mode = run_mode(s);
    const bool inference = mode == RunMode::kInference, generation = mode == RunMode::kGenerate;
    record.model.train_flops_per_sample =
        generation ? 0.0 : inference ? workload->inference_flops_per_sample() : workload->train_flops_per_sample();
    record.model.attention_flops_per_sample =
        generation  ? 0.0
        : inference ? workload->attention_inference_flops_per_sample()
                    : workload->attention_train_flops_per_sample();
    record_kernels(s, *workload, device, observer, record);
    record.model.step = generation ? "one new token per sequence: a decode step over the static KV cache and its argmax "
                                     "(a step's time is an inter-token latency; the prompt's prefill is the time to "
                                     "first token)"
                        : inference ? workload->inference_step()
                                    : "one training step: forward, loss, backward and optimizer update";
    // Generation counts generated tokens: its throughput is tokens/s, each generated token a sample.
    record.model.sample_unit = generation ? "tokens" : entry.info.sample_unit;
    record.model.tokens_per_sample = generation ? 1 : workload->tokens_per_sample();
    record.model.scenario_keys = entry.info.option_keys();

    // precision: fp8: the plan the models' Linear layers consult during the forward passes of this thread.
    std::unique_ptr<engine::fp8::Plan> fp8_plan;
    if (plan.precision.fp8) {
      fp8_plan = std::make_unique<engine::fp8::Plan>(models::fp8_candidates(*workload->module()), fp8_recipe(s));
      // The recipe and the selection before anything runs: a run that fails keeps them (no layer ran in FP8 yet).
      record.precision.fp8 = describe_fp8(*fp8_plan, record);
    }
    observer.on_start(record);
    maybe_inject_oom(s, *s.batch_size * s.grad_accumulation);
    {
      const engine::fp8::PlanScope fp8_scope(fp8_plan.get());
      if (generation) {
        engine::generate(plan, *workload, observer, record);
      } else {
        engine::train(plan, *workload, observer, record);
      }
    }
    if (fp8_plan) {
      record.precision.fp8 = describe_fp8(*fp8_plan, record);
      if (record.precision.fp8->converted.empty()) {
        const std::string note = "precision: fp8: no Linear layer ran in FP8 (" + s.model +
                                 "'s products all ran in bf16; see precision.fp8.kept)";
        record.notes.push_back(note);
        observer.on_note(note);
      }
    }
    if (const std::string note = engine::fused::describe_after_run(record.execution.fusions); !note.empty()) {
      record.notes.push_back(note);
      observer.on_note(note);
    }
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
