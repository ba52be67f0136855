#include "gpubench/core/analysis/published.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "gpubench/core/reference/device_table.hpp"

namespace gpubench {

namespace embedded {
extern const char* const kPublishedYaml;
}

namespace {

std::string fmt_num(double v, int digits = 3) {
  std::ostringstream os;
  os.precision(digits);
  os << v;
  return os.str();
}

/// Entry value, else recipe value.
YAML::Node pick(const YAML::Node& entry, const YAML::Node& recipe, const char* key) {
  for (const YAML::Node* n : {&entry, &recipe}) {
    if (n->IsMap()) {
      const YAML::Node v = (*n)[key];
      if (v && !v.IsNull()) return v;
    }
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

template <typename T>
std::optional<T> opt(const YAML::Node& entry, const YAML::Node& recipe, const char* key, const std::string& where) {
  const YAML::Node n = pick(entry, recipe, key);
  if (!n.IsDefined()) return std::nullopt;
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    throw std::runtime_error(where + ":" + std::to_string(n.Mark().line + 1) + ": key '" + key + "': cannot read '" +
                             n.Scalar() + "'");
  }
}

std::string str(const YAML::Node& entry, const YAML::Node& recipe, const char* key, const std::string& where) {
  return opt<std::string>(entry, recipe, key, where).value_or("");
}

}  // namespace

std::string PublishedReference::recipe_command() const {
  if (config.empty()) return {};
  return "gpubench run --config " + config + (config_flags.empty() ? "" : " " + config_flags);
}

std::optional<double> PublishedReference::implied_samples_per_s() const {
  if (samples_per_s) return samples_per_s;
  if (epoch_seconds && dataset_size && *epoch_seconds > 0) return static_cast<double>(*dataset_size) / *epoch_seconds;
  if (steps_per_s && batch_size) return *steps_per_s * static_cast<double>(*batch_size);
  return std::nullopt;
}

std::vector<PublishedReference> parse_published(const std::string& yaml_text) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(yaml_text);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error("configs/published: line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  std::vector<PublishedReference> out;
  int index = 0;
  for (const auto& doc : docs) {
    ++index;
    if (!doc || doc.IsNull()) continue;
    const std::string where = "configs/published document " + std::to_string(index);
    const YAML::Node recipe = doc["recipe"];
    const YAML::Node entries = doc["entries"];
    if (!entries || !entries.IsSequence()) throw std::runtime_error(where + ": expected an 'entries' list");
    for (const auto& e : entries) {
      PublishedReference r;
      r.id = str(e, YAML::Node(), "id", where);
      if (r.id.empty()) throw std::runtime_error(where + ":" + std::to_string(e.Mark().line + 1) + ": entry without 'id'");
      r.source = doc["source"] ? doc["source"].as<std::string>() : "";
      r.device = str(e, recipe, "device", where);
      r.model = str(e, recipe, "model", where);
      r.precision = str(e, recipe, "precision", where);
      r.mode = str(e, recipe, "mode", where);
      if (r.mode.empty()) r.mode = "train";
      if (r.mode != "train" && r.mode != "inference") {
        throw std::runtime_error(where + ": entry '" + r.id + "': mode must be train or inference, got '" + r.mode + "'");
      }
      r.batch_size = opt<int64_t>(e, recipe, "batch_size", where);
      r.dataset_size = opt<int64_t>(e, recipe, "dataset_size", where);
      r.data_pipeline = str(e, recipe, "data_pipeline", where);
      r.framework = str(e, recipe, "framework", where);
      r.host = str(e, recipe, "host", where);
      r.optimizer = str(e, recipe, "optimizer", where);
      r.epoch_seconds = opt<double>(e, recipe, "epoch_seconds", where);
      r.samples_per_s = opt<double>(e, recipe, "samples_per_s", where);
      r.steps_per_s = opt<double>(e, recipe, "steps_per_s", where);
      r.power_w = opt<double>(e, recipe, "power_w", where);
      r.temperature_c = opt<double>(e, recipe, "temperature_c", where);
      r.price_cny = opt<double>(e, recipe, "price_cny", where);
      r.price_performance = opt<double>(e, recipe, "price_performance", where);
      r.price_performance_unit = str(e, recipe, "price_performance_unit", where);
      r.scaling_2gpu = opt<double>(e, recipe, "scaling_2gpu", where);
      r.quote = str(e, YAML::Node(), "quote", where);
      r.notes = str(e, YAML::Node(), "notes", where);
      r.config = str(e, recipe, "config", where);
      r.config_flags = str(e, YAML::Node(), "config_flags", where);
      r.prepare = str(e, recipe, "prepare", where);
      r.config_note = str(e, YAML::Node(), "config_note", where);
      if (r.device.empty() || r.model.empty()) throw std::runtime_error(where + ": entry '" + r.id + "' needs a device and a model");
      if (!r.implied_samples_per_s()) {
        throw std::runtime_error(where + ": entry '" + r.id + "' has no figure (epoch_seconds with dataset_size, "
                                 "samples_per_s, or steps_per_s with batch_size)");
      }
      if (r.quote.empty()) throw std::runtime_error(where + ": entry '" + r.id + "' has no 'quote' (the sentence it comes from)");
      out.push_back(std::move(r));
    }
  }
  return out;
}

const std::vector<PublishedReference>& published_references() {
  static const std::vector<PublishedReference> refs = parse_published(embedded::kPublishedYaml);
  return refs;
}

const PublishedReference* find_published(const std::string& id) {
  const std::string want = id.rfind("published/", 0) == 0 ? id.substr(10) : id;
  for (const auto& r : published_references()) {
    if (r.id == want) return &r;
  }
  return nullptr;
}

PublishedComparison compare_with_published(const PublishedReference& ref, const RunRecord& run) {
  PublishedComparison c;
  c.reference = &ref;
  const Scenario& s = run.scenario;
  c.published_samples_per_s = ref.implied_samples_per_s();
  if (run.status == RunStatus::kOk && run.summary.samples_per_s > 0) c.measured_samples_per_s = run.summary.samples_per_s;
  if (c.published_samples_per_s && c.measured_samples_per_s) {
    c.percent_of_published = *c.measured_samples_per_s / *c.published_samples_per_s * 100.0;
  }
  if (c.measured_samples_per_s && ref.dataset_size) {
    c.measured_epoch_seconds = static_cast<double>(*ref.dataset_size) / *c.measured_samples_per_s;
  }

  if (ref.steps_per_s) {
    c.published_steps_per_s = ref.steps_per_s;
    if (c.measured_samples_per_s) c.measured_steps_per_s = run.summary.steps_per_s;
    // A sampler's it/s is quoted per denoising step whatever the batch: compare steps with steps.
    if (ref.mode == "inference" && s.mode == "inference" && c.measured_steps_per_s) {
      c.percent_of_published = *c.measured_steps_per_s / *ref.steps_per_s * 100.0;
      c.percent_basis = "it/s";
    }
  }

  // A percentage of another model's or another mode's figure has no meaning: none is given, and the reason is.
  if (s.model != ref.model || s.mode != ref.mode) {
    c.percent_of_published.reset();
    c.no_percent_reason = "a " + s.model + " " + s.mode + " run and a published " + ref.model + " " + ref.mode +
                          " figure measure different work: no percentage";
  }

  auto& d = c.differences;
  auto work = [&c](std::string text) {  // a difference in the work timed: not a reproduction
    c.work_differences.push_back(text);
    c.differences.push_back(std::move(text));
  };
  const std::string our_mode = s.mode == "inference" ? "inference" : "training";
  if (s.mode != ref.mode) {
    work("mode: " + our_mode + " here, " + (ref.mode == "inference" ? "inference" : "training") +
         " published: not the same work (run with --mode " + ref.mode + ")");
  } else {
    c.same.push_back("mode: " + our_mode + " on both sides" +
                     (s.mode == "inference" && !run.model.step.empty() ? " (here: " + run.model.step + ")" : ""));
  }
  if (!same_device_name(ref.device, run.environment.device_name)) {
    d.push_back("device: " + (run.environment.device_name.empty() ? run.environment.device : run.environment.device_name) +
                " here, " + ref.device + " published");
  }
  if (ref.model != s.model) work("model: " + s.model + " here, " + ref.model + " published: not the same work");
  const std::string ours = run.precision.resolved.empty() ? s.precision : run.precision.resolved;
  const bool both_infer = s.mode == "inference" && ref.mode == "inference";
  if (ref.precision == "amp" && both_infer) {
    // Mixed-precision sampling is fp16 (diffusers' torch_dtype=float16 pipelines); there is no loss to scale.
    if (ours != "fp16") work("precision: " + ours + " here, fp16 published; run --precision fp16 for the same recipe");
  } else if (ref.precision == "amp") {
    // A published "mixed precision" PyTorch run is torch.autocast + GradScaler: fp16 with dynamic loss scaling.
    if (ours == "bf16") {
      work("precision: bf16 autocast here, PyTorch AMP (fp16 autocast + GradScaler) published; run --amp for the "
           "same recipe");
    } else if (ours != "fp16") {
      work("precision: " + ours + " here, mixed precision (PyTorch AMP: fp16 + GradScaler) published");
    }
  } else if (ref.precision == "fp32") {
    if (ours != "fp32" && ours != "tf32") work("precision: " + ours + " here, fp32 published");
    else if (ours == "fp32") {
      d.push_back("precision: IEEE fp32 here (TF32 off); a PyTorch fp32 run lets cuDNN use TF32 by default on "
                  "Ampere and newer (use --precision tf32 for that)");
    }
  } else if (!ref.precision.empty() && ref.precision != ours) {
    work("precision: " + ours + " here, " + ref.precision + " published (gpubench has no " + ref.precision + " mode)");
  }
  if (ref.batch_size && s.batch_size && *ref.batch_size != *s.batch_size) {
    work("batch size: " + std::to_string(*s.batch_size) + " here, " + std::to_string(*ref.batch_size) + " published");
  }
  if (ref.dataset_size && *ref.dataset_size != s.dataset_size) {
    d.push_back("dataset size: " + std::to_string(s.dataset_size) + " samples per epoch here, " +
                std::to_string(*ref.dataset_size) + " published (the epoch time here is projected to theirs)");
  }
  const std::string theirs = ref.data_pipeline.empty() ? std::string("not stated") : ref.data_pipeline;
  std::string lower = theirs;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  // "ImageNet" without more is JPEG files read by a data loader too.
  const bool they_decode = lower.find("jpeg") != std::string::npos || lower.find("imagenet") != std::string::npos;
  const bool they_state = !ref.data_pipeline.empty() && lower.find("not stated") != 0;
  if (run.data && run.data->data_only) {
    work("data only: the input pipeline alone timed here (no model step); published: a training step with " + theirs);
  } else if (run.data && run.data->source == "folder") {
    const std::string ours_pipeline = "JPEG files decoded and augmented every step here (" + run.data->decode +
                                      " decode, " + std::to_string(run.data->images) + " images, RandomResizedCrop + "
                                      "flip + normalise)";
    const std::string line = "data pipeline: " + ours_pipeline + "; published: " + theirs;
    if (they_decode) c.same.push_back(line);
    else if (they_state) work(line);
    else d.push_back(line);
    if (run.data->images != 0 && ref.dataset_size && *ref.dataset_size != run.data->images) {
      c.remarks.push_back("the folder here holds " + std::to_string(run.data->images) + " images (generated: `gpubench "
                          "dataset make`, unless it is ImageNet itself), the publication " +
                          std::to_string(*ref.dataset_size));
    }
  } else if (!both_infer) {  // a sampler's inputs are made on the device: no pipeline on either side
    const std::string line = "data pipeline: one synthetic batch already on the device here (no loading, decoding or "
                             "augmentation); published: " + theirs +
                             (they_decode ? " (run with --data folder to decode JPEGs as they did)" : "");
    if (they_decode) work(line);
    else d.push_back(line);
  }
  d.push_back("framework: LibTorch " + run.environment.libtorch_version + " (C++), CUDA " +
              run.environment.cuda_runtime_version + ", cuDNN " + run.environment.cudnn_version + " here; published: " +
              (ref.framework.empty() ? std::string("not stated") : ref.framework));
  if (!ref.optimizer.empty() && s.mode != "inference") d.push_back("optimizer: " + s.optimizer.name + " here; published: " + ref.optimizer);
  if (run.execution.mode == "cuda_graph") {
    d.push_back(std::string("execution: whole-step CUDA graph here (no per-step launches)") +
                (s.mode == "inference" ? "; a sampler launches every kernel of every step" : ""));
  }
  if (run.distributed && run.distributed->world_size > 1) {
    work("devices: " + std::to_string(run.distributed->world_size) + " GPUs here, one published");
  }

  c.published_price_performance = ref.price_performance;
  auto per_10k = [](double epoch_s, double price) { return (60.0 / epoch_s) / (price / 10000.0); };
  if (ref.epoch_seconds && ref.price_cny) {
    c.recomputed_price_performance = per_10k(*ref.epoch_seconds, *ref.price_cny);
    if (ref.price_performance &&
        std::fabs(*c.recomputed_price_performance - *ref.price_performance) > 0.1 * *ref.price_performance) {
      c.remarks.push_back("the published price-performance " + fmt_num(*ref.price_performance) +
                          " does not follow from its own epoch time (" + fmt_num(*ref.epoch_seconds) + " s) and price (" +
                          fmt_num(*ref.price_cny, 6) + " CNY): that gives " + fmt_num(*c.recomputed_price_performance) +
                          " " + ref.price_performance_unit);
    }
  }
  if (const DeviceSpec* spec = find_device_spec(run.environment.device_name)) {
    if (spec->price_cny && c.measured_epoch_seconds) c.measured_price_performance = per_10k(*c.measured_epoch_seconds, *spec->price_cny);
  }
  if (ref.power_w && ref.epoch_seconds && ref.dataset_size) {
    c.published_joules_per_sample = *ref.power_w * *ref.epoch_seconds / static_cast<double>(*ref.dataset_size);
  }
  c.measured_joules_per_sample = job_energy(run).joules_per_sample;  // every GPU's, also for older records
  if (!ref.notes.empty()) c.remarks.push_back(ref.notes);
  return c;
}

}  // namespace gpubench
