#include "gpubench/core/analysis/fit.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "gpubench/core/analysis/identity.hpp"
#include "gpubench/core/reference/device_table.hpp"
#include "gpubench/core/scenario/precision.hpp"
#include "gpubench/core/scenario/run_mode.hpp"
#include "gpubench/core/scenario/scenario_loader.hpp"
#include "gpubench/core/scenario/sweep.hpp"

namespace gpubench {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr int64_t kBatchLimit = int64_t{1} << 20;

/// The scenario resolved as a run on a CUDA card of `memory` bytes would resolve it (no output path, nothing refused:
/// fit reports rather than refuses).
ResolvedScenario resolve_for(const Scenario& s, const ModelCatalog& models, const std::string& name, int64_t memory) {
  DeviceFacts device{"cuda:0", "cuda", true, "", memory, "the device table", name, 0};
  ResolveOptions o;
  o.choose_output = false;
  o.refuse_memory = false;
  o.refuse_unsupported = false;
  return resolve_scenario(s, models, device, o);
}

int64_t predicted_for(const Scenario& s, const ModelCatalog& models, const std::string& device, int64_t memory) {
  const ResolvedScenario r = resolve_for(s, models, device, memory);
  return r.memory ? predicted_peak_bytes(r.scenario, *r.memory) : 0;
}

bool has_key(const ModelCatalog& models, const Scenario& s, const std::string& key) {
  const ModelInfo* info = find_model_info(models, s.model);
  if (info == nullptr) return false;
  const auto keys = info->option_keys();
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

/// A scenario with `keys` set (as a file or flag would set them).
Scenario with_keys(Scenario s, const ModelCatalog& models, const std::vector<std::pair<std::string, std::string>>& keys) {
  ScenarioLoader loader(options_by_model(models));
  for (const auto& [k, v] : keys) loader.apply_override(k, v, "fit", s);
  return s;
}

/// The record identity a run of `s` would have (device left out: a remedy measured on one card is taken for another).
nlohmann::json identity_of(const Scenario& s, const std::string& precision) {
  RunRecord r;
  r.scenario = s;
  r.precision.resolved = precision;
  nlohmann::json j = scenario_identity(r);
  for (const char* k : {"device_model", "device_type"}) j.erase(k);
  return j;
}

/// A pair of `measured` records that differ only in `keys`, one with the original's values for them and one with the
/// remedy's: the remedy's throughput over the original's.
void measured_cost(FitRemedy& remedy, const Scenario& original, const Scenario& changed, const std::string& precision,
                   const std::string& changed_precision, const std::vector<LoadedRecord>& measured) {
  std::set<std::string> allowed;
  for (const auto& [k, v] : remedy.keys) allowed.insert(k);
  allowed.insert("precision_resolved");
  const nlohmann::json before = identity_of(original, precision), after = identity_of(changed, changed_precision);
  const auto matches = [&allowed](const nlohmann::json& a, const nlohmann::json& want) {
    for (const auto& k : allowed) {
      if (identity_value(a, k) != identity_value(want, k)) return false;
    }
    return true;
  };
  for (const auto& a : measured) {
    if (a.record.status != RunStatus::kOk || a.record.scenario.model != original.model) continue;
    nlohmann::json ia = scenario_identity(a.record);
    if (!matches(ia, before)) continue;
    for (const auto& b : measured) {
      if (&a == &b || b.record.status != RunStatus::kOk || b.record.environment.device_name != a.record.environment.device_name) continue;
      nlohmann::json ib = scenario_identity(b.record);
      if (!matches(ib, after)) continue;
      const auto differ = identity_differences(ia, ib);
      if (std::all_of(differ.begin(), differ.end(), [&allowed](const std::string& k) { return allowed.count(k) > 0; }) &&
          a.record.summary.samples_per_s > 0) {
        remedy.throughput_ratio = b.record.summary.samples_per_s / a.record.summary.samples_per_s;
        remedy.cost_source = "measured on " + a.record.environment.device_name + ": " + a.path + " against " + b.path;
        return;
      }
    }
  }
  remedy.cost_source = "unmeasured: no pair of the records given differs only in " + [&remedy] {
    std::string keys;
    for (const auto& [k, v] : remedy.keys) keys += (keys.empty() ? "" : ", ") + k;
    return keys;
  }();
}

/// The remedies that make `s` fit on a card of `usable` bytes, each with its predicted peak and measured cost.
std::vector<FitRemedy> remedies_for(const Scenario& s, const std::string& precision, const ModelCatalog& models,
                                    const std::string& device, int64_t memory, int64_t usable,
                                    const std::vector<LoadedRecord>& measured) {
  std::vector<FitRemedy> out;
  const auto add = [&](const std::string& name, const std::string& change,
                       std::vector<std::pair<std::string, std::string>> keys) {
    FitRemedy r{name, change, std::move(keys)};
    const Scenario changed = with_keys(s, models, r.keys);
    const ResolvedScenario rc = resolve_for(changed, models, device, memory);
    r.predicted_bytes = rc.memory ? predicted_peak_bytes(rc.scenario, *rc.memory) : 0;
    r.fits = r.predicted_bytes > 0 && r.predicted_bytes <= usable;
    measured_cost(r, s, rc.scenario, precision, rc.precision, measured);
    out.push_back(std::move(r));
  };
  const bool train = run_mode(s) == RunMode::kTrain;
  if (train && has_key(models, s, "gradient_checkpointing") && !s.option<bool>("gradient_checkpointing").value_or(false)) {
    add("checkpointing", "gradient_checkpointing: true (activations recomputed in the backward)",
        {{"gradient_checkpointing", "true"}});
  }
  const int64_t batch = s.batch_size.value_or(1);
  if (train && batch > 1) {
    // The largest micro-batch that divides the batch and fits: the same effective batch, accumulated.
    for (int64_t micro = batch / 2; micro >= 1; --micro) {
      if (batch % micro != 0) continue;
      Scenario m = s;
      m.batch_size = micro;
      if (predicted_for(m, models, device, memory) > usable && micro > 1) continue;
      const int64_t steps = batch / micro * s.grad_accumulation;
      add("accumulation",
          "batch " + std::to_string(micro) + " x " + std::to_string(steps) + " accumulated (the same " +
              std::to_string(batch * s.grad_accumulation) + " samples per optimizer step)",
          {{"batch_size", std::to_string(micro)}, {"grad_accumulation", std::to_string(steps)}});
      break;
    }
  }
  if (train && s.optimizer.name == "adamw") {
    // A leaner optimizer (seed 004's advice for LLM fine-tuning): SGD with momentum keeps one moment, not two.
    add("optimizer", "optimizer: sgd with momentum 0.9 (one moment per parameter instead of AdamW's two)",
        {{"optimizer.name", "sgd"}, {"optimizer.momentum", "0.9"}});
  }
  const std::optional<Precision> resolved = parse_precision(precision);
  if (resolved == Precision::kFp32 || resolved == Precision::kTf32) {
    add("precision", "precision: bf16 (autocast)", {{"precision", "bf16"}});
  }
  if (resolved == Precision::kBf16 && train) {
    const DeviceSpec* spec = find_device_spec(device);
    if (spec != nullptr && spec->fp8_tflops && (s.model == "gpt2" || s.model == "llama")) {
      add("precision", "precision: fp8 (the Linear layers' products in FP8)", {{"precision", "fp8"}});
    }
  }
  if (has_key(models, s, "seq_len")) {
    const int64_t seq = s.option<int64_t>("seq_len").value_or(0);
    for (int64_t shorter = seq / 2; shorter >= 64; shorter /= 2) {
      Scenario m = with_keys(s, models, {{"seq_len", std::to_string(shorter)}});
      if (predicted_for(m, models, device, memory) <= usable || shorter / 2 < 64) {
        add("sequence", "seq_len: " + std::to_string(shorter) + " (from " + std::to_string(seq) + ")",
            {{"seq_len", std::to_string(shorter)}});
        break;
      }
    }
  }
  return out;
}

}  // namespace

const std::vector<PeakCalibration>& peak_calibrations() {
  // Fitted on the committed H200 records (tests/fixtures/records, h200-peaks.tar.gz included; FitTest checks every
  // one is below its line): slope = the largest run's peak allocated / estimate, rounded up; intercept = the largest
  // remainder, rounded up to 0.05 GiB. Then raised where a capped run ran out of memory below its line (the H100
  // sweep under --memory-limit, h100-capped-sweep.tar.gz): GPT-2's eager fp32 logits (4.6 GiB at bs 24) found no
  // free block of that size in a cap its allocated peak would have fit, so its slope is above every such cap /
  // estimate (1.102 at bs 48 under 48 GiB) rather than 1.05.
  static const std::vector<PeakCalibration> table = {
      {"resnet50", "train", "aten", 1.12, 0.65, 58},  {"resnet50", "train", "fused", 1.43, 0.0, 13},
      {"bert-base", "train", "aten", 1.28, 0.0, 25},  {"bert-base", "train", "fused", 1.24, 0.0, 1},
      {"gpt2", "train", "aten", 1.11, 0.0, 5},        {"gpt2", "train", "fused", 1.14, 0.35, 9},
      {"gpt2", "inference", "aten", 1.04, 0.05, 12},  {"llama", "train", "aten", 1.18, 0.0, 4},
      {"llama", "train", "fused", 1.21, 0.0, 3},      {"llama", "inference", "aten", 1.10, 0.0, 6},
      {"llama", "generate", "aten", 1.04, 0.0, 1},    {"sd-unet", "train", "aten", 1.04, 0.0, 5},
      {"sd-unet", "train", "fused", 1.06, 0.0, 1},    {"sd-unet", "inference", "aten", 1.09, 0.0, 5},
      {"", "", "", 1.43, 0.65, 0},
  };
  return table;
}

const PeakCalibration& peak_calibration(const Scenario& s) {
  const std::string kernels = s.fused_kernels() ? "fused" : "aten";
  for (const auto& c : peak_calibrations()) {
    if (c.model.empty() || (c.model == s.model && c.mode == s.mode && c.kernels == kernels)) return c;
  }
  return peak_calibrations().back();
}

int64_t predicted_peak_bytes(const Scenario& s, const MemoryEstimate& m) {
  const PeakCalibration& c = peak_calibration(s);
  return static_cast<int64_t>(std::ceil(c.slope * static_cast<double>(m.total_bytes) + c.intercept_gib * kGiB));
}

FitResult plan_fit(const Scenario& requested, const ModelCatalog& models, const std::vector<std::string>& devices,
                   const std::vector<LoadedRecord>& measured) {
  std::vector<const DeviceSpec*> cards;
  for (const auto& d : device_table()) {
    if (!d.memory_gb) continue;
    const bool named = devices.empty() || std::any_of(devices.begin(), devices.end(), [&d](const std::string& n) {
                         return same_device_name(n, d.name) ||
                                std::any_of(d.match.begin(), d.match.end(), [&n](const auto& m) { return same_device_name(n, m); });
                       });
    if (named) cards.push_back(&d);
  }
  for (const auto& n : devices) {
    if (std::none_of(cards.begin(), cards.end(), [&n](const DeviceSpec* d) {
          return same_device_name(n, d->name) ||
                 std::any_of(d->match.begin(), d->match.end(), [&n](const auto& m) { return same_device_name(n, m); });
        })) {
      std::string names;
      for (const auto& d : device_table()) {
        if (d.memory_gb) names += (names.empty() ? "" : ", ") + d.name;
      }
      throw std::invalid_argument("no card '" + n + "' with a memory size in the device table; it has: " + names);
    }
  }
  FitResult out;
  // A cap (memory_limit, or an emulated card's usable memory) bounds every card's usable memory, as a capped run would.
  out.cap_bytes = requested_memory_cap(requested);
  if (out.cap_bytes) out.cap_source = requested.memory_limit ? "memory_limit" : "emulating " + requested.emulate;
  Scenario plain = requested;  // the cap is applied below; resolving it would ask for a CUDA device
  plain.memory_limit.reset();
  plain.emulate.clear();
  for (const DeviceSpec* d : cards) {
    const int64_t memory = static_cast<int64_t>(*d->memory_gb * kGiB);
    const ResolvedScenario r = resolve_for(plain, models, d->name, memory);
    if (!r.memory) throw std::invalid_argument("model '" + requested.model + "' declares no size: fit cannot estimate it");
    out.scenario = r.scenario;
    out.precision = r.precision;
    out.calibration = peak_calibration(r.scenario);
    FitCard c;
    c.device = d->name;
    c.memory_bytes = memory;
    c.usable_bytes = usable_memory_bytes(*d->memory_gb);
    if (out.cap_bytes) c.usable_bytes = std::min(c.usable_bytes, *out.cap_bytes);
    c.estimate_bytes = r.memory->total_bytes;
    c.predicted_bytes = predicted_peak_bytes(r.scenario, *r.memory);
    c.fits = c.predicted_bytes <= c.usable_bytes;
    c.largest_batch = largest_fitting_batch(
        [&](int64_t b) {
          Scenario s = r.scenario;
          s.batch_size = b;
          return predicted_for(s, models, d->name, memory) <= c.usable_bytes;
        },
        std::max<int64_t>(1, r.scenario.batch_size.value_or(1)), kBatchLimit);
    if (!c.fits) c.remedies = remedies_for(r.scenario, r.precision, models, d->name, memory, c.usable_bytes, measured);
    out.cards.push_back(std::move(c));
  }
  return out;
}

}  // namespace gpubench
