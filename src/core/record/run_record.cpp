#include "gpubench/core/record/run_record.hpp"

#include "gpubench/core/record/metric_catalog.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "gpubench/core/reference/device_table.hpp"
#include "gpubench/core/record/json_optional.hpp"

namespace gpubench {

std::string to_string(RunStatus s) {
  switch (s) {
    case RunStatus::kOk: return "ok";
    case RunStatus::kOom: return "oom";
    case RunStatus::kNan: return "nan";
    case RunStatus::kInterrupted: return "interrupted";
    case RunStatus::kFailed: return "failed";
  }
  return "failed";
}

RunStatus run_status_from_string(const std::string& s) {
  for (auto v : {RunStatus::kOk, RunStatus::kOom, RunStatus::kNan, RunStatus::kInterrupted, RunStatus::kFailed}) {
    if (to_string(v) == s) return v;
  }
  throw std::invalid_argument("unknown run status '" + s + "'");
}

namespace {
/// The resolved scenario with only the model's own keys (a caller that bypassed the loader may have set others).
/// Records from callers that did not name the model's keys keep every key.
nlohmann::json scenario_for_record(const RunRecord& r) {
  if (r.model.scenario_keys.empty()) return r.scenario;
  Scenario s = r.scenario;
  const auto& own = r.model.scenario_keys;
  for (auto it = s.model_options.begin(); it != s.model_options.end();) {
    it = std::find(own.begin(), own.end(), it->first) == own.end() ? s.model_options.erase(it) : std::next(it);
  }
  return s;
}

/// Records written before models declared their keys (schema 1 without `model.scenario_keys`) hold every model's
/// keys with defaults; keep only the keys each of the three models of that time took, so that old and new records of
/// one scenario still compare equal.
void drop_other_models_keys(RunRecord& r) {
  static const std::map<std::string, std::vector<std::string>> legacy{
      {"resnet50", {"image_size", "num_classes"}},
      // bert-base's width is read as hidden (rename_model_keys, after this): a record rewritten since holds it so.
      {"bert-base", {"seq_len", "num_labels", "layers", "width", "hidden", "heads", "dropout", "attention",
                     "gradient_checkpointing"}},
      {"sd-unet", {"latent_size", "layers", "width", "heads", "dropout", "attention", "gradient_checkpointing"}}};
  const std::vector<std::string>* own = &r.model.scenario_keys;
  if (own->empty()) {
    const auto it = legacy.find(r.scenario.model);
    if (it == legacy.end()) return;
    own = &it->second;
  }
  auto& options = r.scenario.model_options;
  for (auto it = options.begin(); it != options.end();) {
    it = std::find(own->begin(), own->end(), it->first) == own->end() ? options.erase(it) : std::next(it);
  }
}

/// Model keys renamed since records were first written, read under today's names so old and new records of one
/// scenario stay one identity: bert-base's and gpt2's `width` is `hidden` since 2026-12-04 (llama's name for it).
void rename_model_keys(RunRecord& r) {
  struct Renamed {
    const char* model;
    const char* from;
    const char* to;
  };
  static const Renamed renamed[] = {{"bert-base", "width", "hidden"}, {"gpt2", "width", "hidden"}};
  for (const auto& n : renamed) {
    if (r.scenario.model != n.model) continue;
    auto& options = r.scenario.model_options;
    if (const auto it = options.find(n.from); it != options.end() && options.count(n.to) == 0) {
      options[n.to] = it->second;
      options.erase(it);
    }
    if (const auto it = r.scenario.origins.find(n.from); it != r.scenario.origins.end()) {
      r.scenario.origins[n.to] = it->second;
      r.scenario.origins.erase(it);
    }
    std::replace(r.model.scenario_keys.begin(), r.model.scenario_keys.end(), std::string(n.from), std::string(n.to));
  }
}
}  // namespace

void to_json(nlohmann::json& j, const RunRecord& r) {
  nlohmann::json sources = nlohmann::json::object();
  for (const auto& [key, origin] : r.scenario.origins) sources[key] = origin.describe();
  j = {{"schema", "gpubench.run"},
       {"schema_version", kRecordSchemaVersion},  // the layout written is always this build's
       {"status", to_string(r.status)},
       {"reason", r.reason},
       {"scenario", scenario_for_record(r)},
       {"scenario_sources", sources},
       {"precision", r.precision},
       {"execution", r.execution},
       {"environment", r.environment},
       {"model", r.model},
       {"epochs", r.epochs},
       {"summary", r.summary},
       {"notes", r.notes},
       {"telemetry", r.telemetry},
       {"distributed", r.distributed},
       {"profile", r.profile},
       {"data", r.data},
       {"repeat_index", r.repeat_index},
       {"repeat_count", r.repeat_count}};
  // Every metric, tagged: the standard ones derived from the fields, then the extras (metrics.hpp).
  for (size_t i = 0; i < r.epochs.size(); ++i) j["epochs"][i]["metrics"] = epoch_metrics(r, r.epochs[i]);
  j["summary"]["metrics"] = run_metrics(r);
}

void from_json(const nlohmann::json& j, RunRecord& r) {
  if (j.value("schema", std::string()) != "gpubench.run") {
    throw std::runtime_error("not a gpubench run record (missing \"schema\": \"gpubench.run\")");
  }
  const nlohmann::json& version = j.at("schema_version");
  if (!version.is_number_integer() || version.get<int64_t>() < 1 || version.get<int64_t>() > 1000) {
    throw std::runtime_error("\"schema_version\" must be a small positive integer, got " + version.dump());
  }
  if (version.get<int64_t>() > kRecordSchemaVersion) {
    throw std::runtime_error("record schema version " + version.dump() + " is newer than this gpubench understands (" +
                             std::to_string(kRecordSchemaVersion) + ")");
  }
  // An older record is upgraded as it is read (metrics derived, other models' keys dropped): in memory every record
  // has this build's layout, and writes it under this build's version.
  r.schema_version = kRecordSchemaVersion;
  r.status = run_status_from_string(j.at("status").get<std::string>());
  r.reason = j.value("reason", std::string());
  r.scenario = j.at("scenario").get<Scenario>();
  r.scenario.origins.clear();
  const nlohmann::json sources = j.value("scenario_sources", nlohmann::json::object());
  for (const auto& [key, where] : sources.items()) {
    r.scenario.origins[key] = Origin{where.get<std::string>(), 0, 0};
  }
  r.precision = j.value("precision", PrecisionRecord{});
  r.execution = j.value("execution", ExecutionRecord{});
  r.environment = j.value("environment", EnvironmentRecord{});
  r.model = j.value("model", ModelRecord{});
  r.epochs = j.value("epochs", std::vector<EpochRecord>{});
  r.summary = j.value("summary", RunSummary{});
  r.notes = j.value("notes", std::vector<std::string>{});
  r.telemetry = j.value("telemetry", TelemetryInfo{});
  r.distributed = j.value("distributed", std::optional<DistributedRecord>{});
  r.profile = j.value("profile", std::optional<ProfileRecord>{});
  r.data = j.value("data", std::optional<DataRecord>{});
  r.repeat_index = j.value("repeat_index", int64_t{1});
  r.repeat_count = j.value("repeat_count", int64_t{1});
  drop_other_models_keys(r);
  rename_model_keys(r);
  // Records before the two driver versions had names: driver_version was the CUDA driver API version, and the
  // NVIDIA driver was only under telemetry.
  if (r.environment.cuda_driver_api_version.empty()) r.environment.cuda_driver_api_version = r.environment.driver_version;
  if (r.environment.nvidia_driver_version.empty()) r.environment.nvidia_driver_version = r.telemetry.driver_version;
  // Before schema 3, `bounded_by` said what cut the run short; that is `stopped_by` now.
  if (version.get<int64_t>() < 3 && (r.summary.bounded_by == "interrupt" || r.summary.bounded_by == "time_budget")) {
    r.summary.stopped_by = std::exchange(r.summary.bounded_by, std::string());
  }
  // Standard metrics are derived from the fields again; only the extras are kept.
  for (auto& e : r.epochs) e.metrics = extra_metrics_only(std::move(e.metrics));
  r.summary.metrics = extra_metrics_only(std::move(r.summary.metrics));
}

const std::string& nvidia_driver_of(const RunRecord& r) {
  return r.telemetry.driver_version.empty() ? r.environment.nvidia_driver_version : r.telemetry.driver_version;
}

// Equality compares values member by member, never the serialised JSON of both sides: a field the serialiser
// forgets then makes a write/read round trip compare unequal (record_test checks every field that way).

void to_json(nlohmann::json& j, const PrecisionRecord& p) {
  j = {{"requested", p.requested},       {"resolved", p.resolved},          {"autocast_dtype", p.autocast_dtype},
       {"tf32_matmul", p.tf32_matmul},   {"tf32_cudnn", p.tf32_cudnn},      {"loss_scaling", p.loss_scaling},
       {"memory_format", p.memory_format}, {"resolution", p.resolution}};
  if (p.fp8) j["fp8"] = *p.fp8;  // only FP8 runs carry it: other records are as they were
}

void from_json(const nlohmann::json& j, PrecisionRecord& p) {
  const PrecisionRecord d;
  p.requested = j.value("requested", d.requested);
  p.resolved = j.value("resolved", d.resolved);
  p.autocast_dtype = j.value("autocast_dtype", d.autocast_dtype);
  p.tf32_matmul = j.value("tf32_matmul", d.tf32_matmul);
  p.tf32_cudnn = j.value("tf32_cudnn", d.tf32_cudnn);
  p.loss_scaling = j.value("loss_scaling", d.loss_scaling);
  p.memory_format = j.value("memory_format", d.memory_format);
  p.resolution = j.value("resolution", d.resolution);
  p.fp8.reset();
  if (const auto it = j.find("fp8"); it != j.end() && it->is_object()) p.fp8 = it->get<Fp8Record>();
}
std::vector<NodeRecord> nodes_of_ranks(const std::vector<NodeRecord>& per_rank) {
  std::vector<NodeRecord> nodes;
  for (const NodeRecord& r : per_rank) {
    auto it = std::find_if(nodes.begin(), nodes.end(), [&r](const NodeRecord& n) {
      return n.hostname == r.hostname && n.address == r.address;
    });
    if (it == nodes.end()) {
      nodes.push_back(r);
    } else {
      it->ranks.insert(it->ranks.end(), r.ranks.begin(), r.ranks.end());
    }
  }
  for (NodeRecord& n : nodes) std::sort(n.ranks.begin(), n.ranks.end());
  std::sort(nodes.begin(), nodes.end(), [](const NodeRecord& a, const NodeRecord& b) {
    return (a.ranks.empty() ? INT64_MAX : a.ranks.front()) < (b.ranks.empty() ? INT64_MAX : b.ranks.front());
  });
  return nodes;
}


std::vector<std::string> record_problems(const RunRecord& r) {
  std::vector<std::string> out;
  auto bad = [&out](const std::string& where, double v, const std::string& why) {
    std::ostringstream os;
    os << where << " = " << v << " (" << why << ")";
    out.push_back(os.str());
  };
  auto non_negative = [&bad](const std::string& where, double v) {
    if (!std::isfinite(v) || v < 0) bad(where, v, "must be a finite number >= 0");
  };
  if (r.schema_version < 1) bad("schema_version", r.schema_version, "must be at least 1");
  const Scenario& s = r.scenario;
  if (s.batch_size && *s.batch_size < 1) bad("scenario.batch_size", static_cast<double>(*s.batch_size), "must be >= 1");
  if (!s.batch_size && r.status == RunStatus::kOk) out.push_back("scenario.batch_size is missing from a run that ran");
  if (s.grad_accumulation < 1) bad("scenario.grad_accumulation", static_cast<double>(s.grad_accumulation), "must be >= 1");
  if (s.epochs < 1) bad("scenario.epochs", static_cast<double>(s.epochs), "must be >= 1");
  if (s.dataset_size < 1) bad("scenario.dataset_size", static_cast<double>(s.dataset_size), "must be >= 1");
  for (size_t i = 0; i < r.epochs.size(); ++i) {
    const EpochRecord& e = r.epochs[i];
    const std::string at = "epochs[" + std::to_string(i) + "].";
    non_negative(at + "steps", static_cast<double>(e.steps));
    non_negative(at + "samples", static_cast<double>(e.samples));
    non_negative(at + "seconds", e.seconds);
    non_negative(at + "samples_per_s", e.samples_per_s);
    for (size_t k = 0; k < e.step_times_ms.size(); ++k) {
      const double v = e.step_times_ms[k];
      if (!std::isfinite(v) || v <= 0) {
        bad(at + "step_times_ms[" + std::to_string(k) + "]", v, "a step takes a positive, finite time");
        break;
      }
    }
  }
  non_negative("summary.seconds", r.summary.seconds);
  non_negative("summary.samples_per_s", r.summary.samples_per_s);
  non_negative("summary.samples", static_cast<double>(r.summary.samples));
  if (r.distributed && r.distributed->world_size < 1) {
    bad("distributed.world_size", r.distributed->world_size, "must be >= 1");
  }
  if (r.repeat_index < 1 || r.repeat_count < r.repeat_index) {
    bad("repeat_index", static_cast<double>(r.repeat_index), "must be from 1 to repeat_count");
  }
  return out;
}

void summarize_run(RunRecord& r, const std::vector<double>& all_step_ms) {
  RunSummary& s = r.summary;
  s.epochs = static_cast<int64_t>(r.epochs.size());
  s.steps = s.samples = 0;
  s.seconds = 0;
  double complete_seconds = 0;
  int64_t complete_epochs = 0;
  auto max_opt = [](std::optional<int64_t>& acc, const std::optional<int64_t>& v) {
    if (v && (!acc || *v > *acc)) acc = v;
  };
  s.peak_allocated_bytes.reset();
  s.peak_reserved_bytes.reset();
  s.peak_host_rss_bytes.reset();
  for (const auto& e : r.epochs) {
    s.steps += e.steps;
    s.samples += e.samples;
    s.seconds += e.seconds;
    if (e.complete) {
      complete_seconds += e.seconds;
      ++complete_epochs;
    }
    max_opt(s.peak_allocated_bytes, e.peak_allocated_bytes);
    max_opt(s.peak_reserved_bytes, e.peak_reserved_bytes);
    max_opt(s.peak_host_rss_bytes, e.peak_host_rss_bytes);
  }
  s.samples_per_s = s.seconds > 0 ? static_cast<double>(s.samples) / s.seconds : 0.0;
  s.steps_per_s = s.seconds > 0 ? static_cast<double>(s.steps) / s.seconds : 0.0;
  s.tokens_per_s = s.samples_per_s * static_cast<double>(r.model.tokens_per_sample);
  s.epoch_seconds_mean = complete_epochs > 0 ? complete_seconds / static_cast<double>(complete_epochs) : 0.0;
  s.achieved_tflops = s.samples_per_s * r.model.train_flops_per_sample / 1e12;
  s.peak_tflops.reset();
  s.peak_source.clear();
  s.mfu.reset();
  if (const DeviceSpec* spec = find_device_spec(r.environment.device_name)) {
    if (auto peak = spec->peak_tflops(r.precision.resolved)) {
      s.peak_tflops = peak;
      s.peak_source = "device table: " + spec->name + " " + r.precision.resolved + " dense peak";
      // Data-parallel runs: aggregate throughput against the peak of all their devices.
      const double devices = r.distributed ? static_cast<double>(std::max<int64_t>(1, r.distributed->world_size)) : 1;
      if (devices > 1) s.peak_source += " x " + std::to_string(static_cast<int>(devices)) + " devices";
      if (s.achieved_tflops > 0) s.mfu = s.achieved_tflops / (*peak * devices);
    }
  }
  s.step_time = summarize_step_times(all_step_ms);
  summarize_energy(r);
  compute_drift(r);
}

JobEnergy job_energy(const RunRecord& r) {
  JobEnergy out;
  double joules = 0, seconds = 0;
  int64_t samples = 0, devices = 0;
  for (const auto& e : r.epochs) {
    if (!e.telemetry || !e.telemetry->energy_j) return out;  // a gap: a total would be too low
    joules += *e.telemetry->energy_j;
    seconds += e.seconds;
    samples += e.samples;
    devices = std::max(devices, e.telemetry->devices);
  }
  if (r.epochs.empty()) return out;
  out.energy_j = joules;
  out.devices = devices;
  if (samples > 0) out.joules_per_sample = joules / static_cast<double>(samples);
  if (seconds > 0) out.power_avg_w = joules / seconds;
  return out;
}

void summarize_energy(RunRecord& r) {
  const JobEnergy e = job_energy(r);
  r.summary.energy_j = e.energy_j;
  r.summary.joules_per_sample = e.joules_per_sample;
  r.summary.power_avg_w = e.power_avg_w;
  r.summary.power_devices = e.devices;
}

void compute_drift(RunRecord& r) {
  RunSummary& s = r.summary;
  s.throughput_drift_pct.reset();
  s.sm_clock_drift_pct.reset();
  s.temperature_drift_c.reset();
  const EpochRecord* first = nullptr;
  const EpochRecord* last = nullptr;
  for (const auto& e : r.epochs) {
    if (!e.complete) continue;
    if (first == nullptr) first = &e;
    last = &e;
  }
  if (first == nullptr || first == last) return;
  if (first->samples_per_s > 0) {
    s.throughput_drift_pct = (last->samples_per_s - first->samples_per_s) / first->samples_per_s * 100;
  }
  if (first->telemetry && last->telemetry) {
    const auto& a = *first->telemetry;
    const auto& b = *last->telemetry;
    if (a.sm_clock_avg_mhz && b.sm_clock_avg_mhz && *a.sm_clock_avg_mhz > 0) {
      s.sm_clock_drift_pct = (*b.sm_clock_avg_mhz - *a.sm_clock_avg_mhz) / *a.sm_clock_avg_mhz * 100;
    }
    if (a.temperature_avg_c && b.temperature_avg_c) s.temperature_drift_c = *b.temperature_avg_c - *a.temperature_avg_c;
  }
}

}  // namespace gpubench
