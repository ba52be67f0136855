#include "gpubench/core/scenario_loader.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>

namespace gpubench {

namespace {

std::string make_message(const Origin& origin, const std::string& key, const std::string& problem) {
  std::string where = origin.describe();
  if (key.empty()) return where + ": " + problem;
  return where + ": key '" + key + "': " + problem;
}

/// Where a value is and what it is called, for error messages.
struct Ctx {
  Origin origin;
  std::string key;
};

[[noreturn]] void fail(const Ctx& c, const std::string& problem) { throw ScenarioError(c.origin, c.key, problem); }

std::string kind_of(const YAML::Node& n) {
  if (n.IsMap()) return "a mapping";
  if (n.IsSequence()) return "a list";
  if (n.IsNull()) return "nothing (null)";
  return "'" + n.Scalar() + "'";
}

std::string scalar(const YAML::Node& n, const Ctx& c, const std::string& expected) {
  if (!n.IsScalar()) fail(c, "expected " + expected + ", got " + kind_of(n));
  return n.Scalar();
}

// A quoted YAML/JSON scalar ("256") is a string, not a number: refusing it keeps files unambiguous.
bool is_quoted(const YAML::Node& n) { return n.Tag() == "!"; }

int64_t as_int(const YAML::Node& n, const Ctx& c, int64_t lo, int64_t hi) {
  const std::string expected =
      "an integer" + (hi == INT64_MAX ? " >= " + std::to_string(lo)
                                      : " from " + std::to_string(lo) + " to " + std::to_string(hi));
  const std::string text = scalar(n, c, expected);
  if (is_quoted(n)) fail(c, "expected " + expected + ", got the string \"" + text + "\"");
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE) {
    fail(c, "expected " + expected + ", got '" + text + "'");
  }
  if (v < lo || v > hi) fail(c, "expected " + expected + ", got " + text);
  return v;
}

double as_double(const YAML::Node& n, const Ctx& c, double lo, double hi, bool lo_open) {
  std::ostringstream os;
  os << "a number " << (lo_open ? "> " : ">= ") << lo;
  if (std::isfinite(hi)) os << " and <= " << hi;
  const std::string expected = os.str();
  const std::string text = scalar(n, c, expected);
  if (is_quoted(n)) fail(c, "expected " + expected + ", got the string \"" + text + "\"");
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v)) {
    fail(c, "expected " + expected + ", got '" + text + "'");
  }
  if ((lo_open ? v <= lo : v < lo) || v > hi) fail(c, "expected " + expected + ", got " + text);
  return v;
}

bool as_bool(const YAML::Node& n, const Ctx& c) {
  std::string text = scalar(n, c, "true or false");
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
  if (!is_quoted(n)) {
    if (lower == "true") return true;
    if (lower == "false") return false;
  }
  fail(c, "expected true or false, got '" + text + "'");
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& choices) {
  std::string best;
  size_t best_d = 3;  // suggest only close matches
  for (const auto& c : choices) {
    const size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

std::string as_enum(const YAML::Node& n, const Ctx& c, const std::vector<std::string>& allowed) {
  const std::string expected = "one of " + join(allowed, ", ");
  const std::string text = scalar(n, c, expected);
  if (std::find(allowed.begin(), allowed.end(), text) == allowed.end()) {
    fail(c, "expected " + expected + ", got '" + text + "'" + did_you_mean(text, allowed));
  }
  return text;
}

std::string as_string(const YAML::Node& n, const Ctx& c) { return scalar(n, c, "a string"); }

/// Seconds from a number ("90", "1.5") or a duration with unit ("90s", "2m", "1.5h", "500ms").
double as_duration_s(const YAML::Node& n, const Ctx& c) {
  const std::string expected = "a duration > 0 such as 90, 90s, 2m or 1.5h";
  const std::string text = scalar(n, c, expected);
  static const std::regex re(R"(^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ms|s|m|min|h)?\s*$)");
  std::smatch m;
  if (!std::regex_match(text, m, re)) fail(c, "expected " + expected + ", got '" + text + "'");
  double v = std::strtod(m[1].str().c_str(), nullptr);
  const std::string unit = m[2].str();
  if (unit == "ms") v /= 1000.0;
  if (unit == "m" || unit == "min") v *= 60.0;
  if (unit == "h") v *= 3600.0;
  if (!(v > 0) || !std::isfinite(v)) fail(c, "expected " + expected + ", got '" + text + "'");
  return v;
}

using Setter = std::function<void(const YAML::Node&, const Ctx&, Scenario&, const std::vector<std::string>&)>;

struct Field {
  ScenarioKey doc;
  Setter set;
};

const std::vector<Field>& fields() {
  static const std::vector<Field> table = [] {
    std::vector<Field> f;
    auto add = [&f](std::string key, std::string flag, std::string desc, Setter s) {
      f.push_back({{std::move(key), std::move(flag), std::move(desc)}, std::move(s)});
    };
    auto add_bool = [&f](std::string key, std::string flag, std::string desc, Setter s) {
      f.push_back({{std::move(key), std::move(flag), std::move(desc), true}, std::move(s)});
    };
    using Models = std::vector<std::string>;
    add("name", "--name", "free-form label for the run",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.name = as_string(n, c); });
    add("model", "--model", "model to train (see `gpubench list`)",
        [](auto& n, auto& c, Scenario& s, const Models& models) {
          const std::string m = as_string(n, c);
          if (!models.empty() && std::find(models.begin(), models.end(), m) == models.end()) {
            fail(c, "unknown model '" + m + "'; known models: " + join(models, ", ") + did_you_mean(m, models));
          }
          s.model = m;
        });
    add("batch_size", "--batch-size", "samples per step (default: the model's; bounded on CPU)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.batch_size = as_int(n, c, 1, 1 << 24); });
    add("precision", "--precision", "fp32 | tf32 | bf16 | fp16 | amp (amp: PyTorch AMP, fp16 + loss scaling on GPUs, bf16 on the CPU)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.precision = as_enum(n, c, precision_names()); });
    add("memory_format", "--memory-format", "auto | contiguous | channels_last (auto: channels_last on GPUs)",
        [](auto& n, auto& c, Scenario& s, const Models&) {
          s.memory_format = as_enum(n, c, {"auto", "contiguous", "channels_last"});
        });
    add("device", "--device", "auto | cpu | cuda[:N] | rocm[:N] | mps",
        [](auto& n, auto& c, Scenario& s, const Models&) {
          const std::string d = as_string(n, c);
          static const std::regex re(R"(^(auto|cpu|mps|(cuda|rocm)(:[0-9]+)?)$)");
          if (!std::regex_match(d, re)) {
            fail(c, "expected auto, cpu, cuda, cuda:N, rocm, rocm:N or mps, got '" + d + "'");
          }
          s.device = d;
        });
    add("epochs", "--epochs", "timed epochs",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.epochs = as_int(n, c, 1, 1000000); });
    add("dataset_size", "--dataset-size", "samples per epoch (default 100000, the seeds' ImageNet subset)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.dataset_size = as_int(n, c, 1, INT64_MAX); });
    add("warmup_steps", "--warmup-steps", "untimed steps before the first epoch (default 10; CPU 2)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.warmup_steps = as_int(n, c, 0, 1000000); });
    add("optimizer.name", "--optimizer", "sgd | adamw (default: the model's)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.optimizer.name = as_enum(n, c, {"sgd", "adamw"}); });
    add("optimizer.lr", "--lr", "learning rate",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.optimizer.lr = as_double(n, c, 0, 1e6, true); });
    add("optimizer.momentum", "--momentum", "SGD momentum, in [0, 1)",
        [](auto& n, auto& c, Scenario& s, const Models&) {
          s.optimizer.momentum = as_double(n, c, 0, 0.999999, false);
        });
    add("optimizer.weight_decay", "--weight-decay", "weight decay (SGD: L2; AdamW: decoupled)",
        [](auto& n, auto& c, Scenario& s, const Models&) {
          s.optimizer.weight_decay = as_double(n, c, 0, 1e3, false);
        });
    add_bool("optimizer.nesterov", "--nesterov", "SGD Nesterov momentum (true/false)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.optimizer.nesterov = as_bool(n, c); });
    add("optimizer.beta1", "--beta1", "AdamW first-moment decay, in [0, 1)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.optimizer.beta1 = as_double(n, c, 0, 0.999999, false); });
    add("optimizer.beta2", "--beta2", "AdamW second-moment decay, in [0, 1)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.optimizer.beta2 = as_double(n, c, 0, 0.999999, false); });
    add("optimizer.eps", "--eps", "AdamW epsilon",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.optimizer.eps = as_double(n, c, 0, 1, true); });
    add("optimizer.implementation", "--optimizer-impl",
        "fused (ATen's fused kernels, default) | foreach (torch.optim's default on CUDA)",
        [](auto& n, auto& c, Scenario& s, const Models&) {
          s.optimizer.implementation = as_enum(n, c, {"fused", "foreach"});
        });
    add("seed", "--seed", "seed for initialisation and synthetic data",
        [](auto& n, auto& c, Scenario& s, const Models&) {
          s.seed = static_cast<uint64_t>(as_int(n, c, 0, INT64_MAX));
        });
    add("time_budget_s", "--time-budget", "stop after this much measured time: seconds or 90s/2m/1h (CPU default 60s)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.time_budget_s = as_duration_s(n, c); });
    add("duration_s", "--duration", "sustained run: train whole epochs for this long, e.g. 2h (reports drift)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.duration_s = as_duration_s(n, c); });
    add_bool("telemetry", "--telemetry", "sample power, clocks and temperature (true/false, default true)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.telemetry = as_bool(n, c); });
    add("telemetry_interval_s", "--telemetry-interval", "telemetry sampling period: seconds or 100ms (default 100ms)",
        [](auto& n, auto& c, Scenario& s, const Models&) {
          s.telemetry_interval_s = as_duration_s(n, c);
          if (s.telemetry_interval_s < 0.005) fail(c, "the sampling period must be at least 5ms");
        });
    add("telemetry_trace", "--telemetry-trace", "write the raw telemetry samples to this CSV file",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.telemetry_trace = as_string(n, c); });
    add("image_size", "--image-size", "image models: input side in pixels (default 224)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.image_size = as_int(n, c, 32, 4096); });
    add("num_classes", "--num-classes", "classification models: number of classes (default 1000)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.num_classes = as_int(n, c, 2, 1 << 24); });
    add("seq_len", "--seq-len", "sequence models: tokens per sequence (default 128)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.seq_len = as_int(n, c, 1, 1 << 20); });
    add("num_labels", "--num-labels", "sequence classification: number of labels (default 2)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.num_labels = as_int(n, c, 2, 1 << 20); });
    add("latent_size", "--latent-size", "diffusion UNet: latent side, 64 for 512-px images (default 64)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.latent_size = as_int(n, c, 8, 1024); });
    add("attention", "--attention", "sdpa (fused kernels, default) | math (explicit softmax attention)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.attention = as_enum(n, c, {"sdpa", "math"}); });
    add("layers", "--layers", "reduced model: transformer layers (BERT) or resnets per block (UNet)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.layers = as_int(n, c, 1, 1024); });
    add("width", "--width", "reduced model: hidden size (BERT) or first block's channels (UNet)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.width = as_int(n, c, 8, 1 << 16); });
    add("heads", "--heads", "reduced model: attention heads",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.heads = as_int(n, c, 1, 1024); });
    add("dropout", "--dropout", "override the model's dropout probability, in [0, 1)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.dropout = as_double(n, c, 0, 0.999, false); });
    add("grad_accumulation", "--grad-accumulation", "micro-batches of batch_size per optimizer step (default 1)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.grad_accumulation = as_int(n, c, 1, 1 << 16); });
    add_bool("gradient_checkpointing", "--gradient-checkpointing",
        "recompute each transformer layer / UNet block in backward to save memory (true/false)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.gradient_checkpointing = as_bool(n, c); });
    add_bool("cudnn_benchmark", "--cudnn-benchmark", "let cuDNN autotune convolutions (true/false, default true)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.cudnn_benchmark = as_bool(n, c); });
    add_bool("graph", "--cuda-graph",
        "capture forward, backward and optimizer step once in a CUDA graph and replay it (true/false; CUDA only, "
        "falls back to eager with a note elsewhere)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.graph = as_bool(n, c); });
    add("ddp_bucket_mb", "--bucket-mb", "multi-GPU: gradient all-reduce bucket size in MiB (default 25, as DDP)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.ddp_bucket_mb = as_double(n, c, 0.001, 65536, false); });
    add("ddp_timeout_s", "--ddp-timeout", "multi-GPU: fail the run when a collective or rendezvous takes longer "
        "(seconds or 30s/5m; default 5m)",
        [](auto& n, auto& c, Scenario& s, const Models&) {
          s.ddp_timeout_s = as_duration_s(n, c);
          if (s.ddp_timeout_s < 1) fail(c, "the timeout must be at least 1s");
        });
    add("output", "--output", "record path (default runs/<model>_<precision>_bs<N>_<time>.json)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.output = as_string(n, c); });
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

Origin origin_of(const YAML::Node& n, const std::string& source) {
  const YAML::Mark m = n.Mark();
  if (m.line < 0) return Origin{source, 0, 0};
  return Origin{source, m.line + 1, m.column + 1};
}

void merge_map(const YAML::Node& map, const std::string& prefix, const std::string& source, Scenario& s,
               const std::vector<std::string>& models) {
  std::set<std::string> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const YAML::Node& key_node = it->first;
    const YAML::Node& value = it->second;
    const Origin key_origin = origin_of(key_node, source);
    if (!key_node.IsScalar()) throw ScenarioError(key_origin, "", "keys must be plain words");
    const std::string key = prefix + key_node.Scalar();
    if (!seen.insert(key).second) throw ScenarioError(key_origin, key, "duplicate key");
    if (key == "optimizer" && value.IsMap()) {
      merge_map(value, "optimizer.", source, s, models);
      continue;
    }
    const Field* f = find_field(key == "optimizer" ? "optimizer.name" : key);
    if (f == nullptr) {
      throw ScenarioError(key_origin, key,
                          "unknown key" + did_you_mean(key_node.Scalar(), keys_with_prefix(prefix)) +
                              "; see `gpubench run --help` for the keys a scenario accepts");
    }
    const Origin value_origin = origin_of(value, source);
    f->set(value, Ctx{value_origin, f->doc.key}, s, models);
    s.origins[f->doc.key] = value_origin;
  }
}

Origin origin_from_byte(const std::string& text, size_t byte, const std::string& source) {
  int line = 1, col = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return Origin{source, line, col};
}

}  // namespace

ScenarioError::ScenarioError(Origin origin, std::string key, std::string problem)
    : std::runtime_error(make_message(origin, key, problem)),
      origin_(std::move(origin)),
      key_(std::move(key)),
      problem_(std::move(problem)) {}

double parse_duration_s(const std::string& text, const std::string& where) {
  return as_duration_s(YAML::Node(text), Ctx{Origin{where, 0, 0}, ""});
}

const std::vector<ScenarioKey>& scenario_keys() {
  static const std::vector<ScenarioKey> keys = [] {
    std::vector<ScenarioKey> k;
    for (const auto& f : fields()) k.push_back(f.doc);
    return k;
  }();
  return keys;
}

ScenarioLoader::ScenarioLoader(std::vector<std::string> known_models) : known_models_(std::move(known_models)) {}

void ScenarioLoader::load_file(const std::string& path, Scenario& s) const {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ScenarioError(Origin{path, 0, 0}, "", std::string("cannot read file: ") + std::strerror(errno));
  std::stringstream buf;
  buf << in.rdbuf();
  const bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  load_text(buf.str(), json ? "json" : "yaml", path, s);
}

void ScenarioLoader::load_text(const std::string& text, const std::string& format, const std::string& source,
                               Scenario& s) const {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw ScenarioError(Origin{source, 0, 0}, "", "file is empty: a scenario needs at least one key (e.g. model)");
  }
  std::string yaml_text = text;
  if (format == "json") {
    // Strict JSON syntax first (YAML would accept things JSON does not), then the same walk as YAML,
    // which keeps line and column for every value. Tabs are whitespace in JSON but not in YAML indentation;
    // JSON strings cannot contain raw tabs, so replacing them changes no value.
    try {
      const auto parsed = nlohmann::json::parse(text);
      (void)parsed;
    } catch (const nlohmann::json::parse_error& e) {
      std::string msg = e.what();
      const auto colon = msg.find(": ", msg.find("parse error"));
      if (colon != std::string::npos) msg = msg.substr(colon + 2);
      throw ScenarioError(origin_from_byte(text, e.byte > 0 ? e.byte - 1 : 0, source), "",
                          "JSON syntax error: " + msg);
    }
    std::replace(yaml_text.begin(), yaml_text.end(), '\t', ' ');
  }
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    throw ScenarioError(Origin{source, e.mark.line + 1, e.mark.column + 1}, "", "YAML syntax error: " + e.msg);
  }
  if (!root || root.IsNull()) {
    throw ScenarioError(Origin{source, 0, 0}, "",
                        "file has no scenario keys (only comments or null): a scenario needs at least one key");
  }
  if (!root.IsMap()) {
    throw ScenarioError(origin_of(root, source), "", "expected a mapping of scenario keys at the top level, got " +
                                                         std::string(root.IsSequence() ? "a list" : "a single value"));
  }
  merge_map(root, "", source, s, known_models_);
}

void ScenarioLoader::apply_override(const std::string& key, const std::string& value, const std::string& flag,
                                    Scenario& s) const {
  const Field* f = find_field(key);
  if (f == nullptr) throw ScenarioError(Origin{"command line " + flag, 0, 0}, key, "unknown scenario key");
  const Origin origin{"command line " + flag, 0, 0};
  f->set(YAML::Node(value), Ctx{origin, key}, s, known_models_);
  s.origins[key] = origin;
}

void ScenarioLoader::check(const Scenario& s) const {
  if (s.batch_size && s.dataset_size < *s.batch_size * s.grad_accumulation) {
    const auto it = s.origins.find("dataset_size");
    const Origin o = it != s.origins.end() ? it->second : Origin{"default", 0, 0};
    throw ScenarioError(o, "dataset_size",
                        "dataset_size (" + std::to_string(s.dataset_size) + ") is smaller than one step (batch_size " +
                            std::to_string(*s.batch_size) + " x grad_accumulation " +
                            std::to_string(s.grad_accumulation) + "): an epoch would contain no step");
  }
}

}  // namespace gpubench
