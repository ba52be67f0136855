#include "gpubench/core/scenario/scenario_loader.hpp"

#include "gpubench/core/io/files.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sys/stat.h>
#include <set>
#include <sstream>

namespace gpubench {

namespace {

constexpr size_t kMaxScalarBytes = 4096;          // longer than any path or name a scenario needs
constexpr size_t kMaxFileBytes = 1 << 20;          // a scenario file is a few hundred bytes
constexpr double kMaxDurationS = 366.0 * 24 * 3600;  // a year: longer durations are typos

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

// A quoted YAML/JSON scalar ("256") is a string, not a number: refusing it keeps files unambiguous.
bool is_quoted(const YAML::Node& n) { return n.Tag() == "!"; }

std::string scalar(const YAML::Node& n, const Ctx& c, const std::string& expected) {
  if (!n.IsScalar()) fail(c, "expected " + expected + ", got " + kind_of(n));
  // Type tags (`!!str 5`, `!custom x`) would change what a value means; a scenario has no use for them.
  if (!n.Tag().empty() && n.Tag() != "?" && n.Tag() != "!") {
    fail(c, "type tags are not accepted (got '" + n.Tag() + "'); write the plain value");
  }
  if (n.Scalar().size() > kMaxScalarBytes) {
    fail(c, "value is " + std::to_string(n.Scalar().size()) + " characters long; at most " +
                std::to_string(kMaxScalarBytes) + " are accepted");
  }
  return n.Scalar();
}

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

/// Seconds from "90", "1.5", "90s", "2m", "1.5h" or "500ms": a plain decimal number (digits, one optional point,
/// an optional exponent) and an optional unit, with optional blanks around. Parsed by hand: no regular expression
/// (std::regex recurses per character and overflows the stack on long input).
std::optional<double> parse_duration(const std::string& text) {
  size_t i = 0;
  auto blank = [&text](size_t k) { return k < text.size() && (text[k] == ' ' || text[k] == '\t'); };
  while (blank(i)) ++i;
  const size_t start = i;
  size_t digits = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i, ++digits;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i, ++digits;
  }
  if (digits == 0) return std::nullopt;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    size_t k = i + 1;
    if (k < text.size() && (text[k] == '+' || text[k] == '-')) ++k;
    const size_t exp_start = k;
    while (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k]))) ++k;
    if (k == exp_start) return std::nullopt;
    i = k;
  }
  double v = std::strtod(text.substr(start, i - start).c_str(), nullptr);
  while (blank(i)) ++i;
  size_t unit_end = i;
  while (unit_end < text.size() && std::isalpha(static_cast<unsigned char>(text[unit_end]))) ++unit_end;
  const std::string unit = text.substr(i, unit_end - i);
  i = unit_end;
  while (blank(i)) ++i;
  if (i != text.size()) return std::nullopt;
  if (unit == "ms") v /= 1000.0;
  else if (unit == "m" || unit == "min") v *= 60.0;
  else if (unit == "h") v *= 3600.0;
  else if (!unit.empty() && unit != "s") return std::nullopt;
  return v;
}

double as_duration_s(const YAML::Node& n, const Ctx& c) {
  const std::string expected = "a duration > 0 such as 90, 90s, 2m or 1.5h";
  const std::string text = scalar(n, c, expected);
  if (is_quoted(n)) fail(c, "expected " + expected + ", got the string \"" + text + "\"");
  const std::optional<double> v = parse_duration(text);
  if (!v || !(*v > 0) || !std::isfinite(*v)) fail(c, "expected " + expected + ", got '" + text + "'");
  if (*v > kMaxDurationS) fail(c, "'" + text + "' is longer than a year; at most 366 days are accepted");
  return *v;
}

/// auto | cpu | mps | cuda | rocm | cuda:N | rocm:N with N a device ordinal from 0 to 1023.
bool valid_device(const std::string& d) {
  if (d == "auto" || d == "cpu" || d == "mps" || d == "cuda" || d == "rocm") return true;
  const auto colon = d.find(':');
  if (colon == std::string::npos) return false;
  const std::string type = d.substr(0, colon), index = d.substr(colon + 1);
  if (type != "cuda" && type != "rocm") return false;
  if (index.empty() || index.size() > 4 || index.find_first_not_of("0123456789") != std::string::npos) return false;
  return std::stoi(index) <= 1023;  // at most 4 digits: cannot overflow
}

using Setter = std::function<void(const YAML::Node&, const Ctx&, Scenario&, const std::vector<std::string>&)>;

struct Field {
  ScenarioKey doc;
  Setter set;
};

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
    add("mode", "--mode", "train|inference",
        "train (forward, backward, optimizer step; default) | inference (eval mode, no gradients, no optimizer: "
        "throughput and per-batch latency percentiles; sd-unet: one denoising step with classifier-free guidance)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.mode = as_enum(n, c, {"train", "inference"}); });
    add("batch_size", "--batch-size", "INT", "samples per step (default: the model's; bounded on CPU)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.batch_size = as_int(n, c, 1, 1 << 24); });
    add("precision", "--precision", "fp32|tf32|bf16|fp16|amp", "fp32 | tf32 | bf16 | fp16 | amp (amp: PyTorch AMP, fp16 + loss scaling on GPUs, bf16 on the CPU)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.precision = as_enum(n, c, precision_names()); });
    add("memory_format", "--memory-format", "auto|contiguous|channels_last", "auto | contiguous | channels_last (auto: channels_last on GPUs)",
        [](auto& n, auto& c, Scenario& s, const Models&) {
          s.memory_format = as_enum(n, c, {"auto", "contiguous", "channels_last"});
        });
    add("device", "--device", "auto|cpu|cuda[:N]|rocm[:N]|mps", "auto | cpu | cuda[:N] | rocm[:N] | mps",
        [](auto& n, auto& c, Scenario& s, const Models&) {
          const std::string d = as_string(n, c);
          if (!valid_device(d)) fail(c, "expected auto, cpu, cuda, cuda:N, rocm, rocm:N or mps (N from 0 to 1023), got '" +
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
    add("time_budget_s", "--time-budget", "DURATION", "stop after this much measured time: seconds or 90s/2m/1h (CPU default 60s)",
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
        [](auto& n, auto& c, Scenario& s, const Models&) { s.telemetry_trace = as_string(n, c); });
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
        [](auto& n, auto& c, Scenario& s, const Models&) { s.data_path = as_string(n, c); });
    add("data_workers", "--data-workers", "INT", "data: folder: decoding threads per rank (default 0: the cores less one, shared by the ranks)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.data_workers = as_int(n, c, 0, 1024); });
    add("decode", "--decode", "auto|cpu|gpu", "data: folder: cpu (libjpeg-turbo on the workers) | gpu (nvJPEG, hardware decoder where the GPU has one) | auto (gpu where it works, default)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.decode = as_enum(n, c, {"auto", "cpu", "gpu"}); });
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
    add("ddp_bucket_mb", "--bucket-mb", "NUMBER", "multi-GPU: gradient all-reduce bucket size in MiB (default 25, as DDP)",
        [](auto& n, auto& c, Scenario& s, const Models&) { s.ddp_bucket_mb = as_double(n, c, 0.001, 65536, false); });
    add("ddp_timeout_s", "--ddp-timeout", "DURATION", "multi-GPU: fail the run when a collective or rendezvous takes longer "
        "(seconds or 30s/5m; default 5m)",
        [](auto& n, auto& c, Scenario& s, const Models&) {
          s.ddp_timeout_s = as_duration_s(n, c);
          if (s.ddp_timeout_s < 1) fail(c, "the timeout must be at least 1s");
        });
    add("output", "--output", "FILE", "record path, or - for standard output (default runs/<model>_<device>_<precision>_bs<N>.json; _2, _3, ... when taken)",
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

/// A model's own key, read as its declaration says.
nlohmann::json option_value(const ModelOption& o, const YAML::Node& n, const Ctx& c) {
  switch (o.type) {
    case ModelOption::Type::kInt:
      return as_int(n, c, static_cast<int64_t>(o.min), static_cast<int64_t>(o.max));
    case ModelOption::Type::kFloat: return as_double(n, c, o.min, o.max, false);
    case ModelOption::Type::kBool: return as_bool(n, c);
    case ModelOption::Type::kChoice: return as_enum(n, c, o.choices);
  }
  fail(c, "unknown option type");
}

using FindOption = std::function<const ModelOption*(const std::string&, const Scenario&)>;

/// Sets `key` from `value`: a common key through its field, a model's own key through its declaration. Returns
/// false when neither knows the key.
bool set_key(const std::string& key, const YAML::Node& value, const Origin& origin, Scenario& s,
             const std::vector<std::string>& models, const FindOption& find_option) {
  if (const Field* f = find_field(key)) {
    f->set(value, Ctx{origin, f->doc.key}, s, models);
    s.origins[f->doc.key] = origin;
    return true;
  }
  if (const ModelOption* o = find_option(key, s)) {
    s.model_options[key] = option_value(*o, value, Ctx{origin, key});
    s.origins[key] = origin;
    return true;
  }
  return false;
}

Origin origin_of(const YAML::Node& n, const std::string& source) {
  const YAML::Mark m = n.Mark();
  if (m.line < 0) return Origin{source, 0, 0};
  return Origin{source, m.line + 1, m.column + 1};
}

void merge_map(const YAML::Node& map, const std::string& prefix, const std::string& source, Scenario& s,
               const std::vector<std::string>& models, const FindOption& find_option,
               const std::vector<std::string>& option_keys) {
  std::set<std::string> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    // Copies: the iterator's pair is a temporary proxy, and references into it dangle (ASan:
    // stack-use-after-scope).
    const YAML::Node key_node = it->first;
    const YAML::Node value = it->second;
    const Origin key_origin = origin_of(key_node, source);
    if (!key_node.IsScalar()) throw ScenarioError(key_origin, "", "keys must be plain words");
    const std::string key = prefix + key_node.Scalar();
    if (!seen.insert(key).second) throw ScenarioError(key_origin, key, "duplicate key");
    if (key == "optimizer" && value.IsMap()) {
      merge_map(value, "optimizer.", source, s, models, find_option, option_keys);
      continue;
    }
    if (!set_key(key == "optimizer" ? "optimizer.name" : key, value, origin_of(value, source), s, models,
                 prefix.empty() ? find_option : FindOption([](const std::string&, const Scenario&) { return nullptr; }))) {
      std::vector<std::string> known = keys_with_prefix(prefix);
      if (prefix.empty()) known.insert(known.end(), option_keys.begin(), option_keys.end());
      throw ScenarioError(key_origin, key,
                          "unknown key" + did_you_mean(key_node.Scalar(), known) +
                              "; see `gpubench run --help` for the keys a scenario accepts");
    }
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

bool has_extension(const std::string& path, const std::string& ext) {
  if (path.size() < ext.size()) return false;
  std::string tail = path.substr(path.size() - ext.size());
  std::transform(tail.begin(), tail.end(), tail.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return tail == ext;  // file-name case does not matter: run.JSON is JSON
}

/// The whole file, refusing what is not a regular file (a FIFO would block, /dev/zero never ends) and anything
/// over kMaxFileBytes: the records' bounded reader, with its problems reported as scenario errors.
std::string read_scenario_file(const std::string& path) {
  try {
    return read_text_file(path, kMaxFileBytes, "scenario file");
  } catch (const FileReadError& e) {
    throw ScenarioError(Origin{path, 0, 0}, "", e.problem());
  }
}

/// yaml-cpp parses nested collections recursively: refuse nesting no scenario needs before it can exhaust the stack
/// (flow brackets deeper than kMaxDepth, or block indentation wider than kMaxIndent columns).
void check_nesting(const std::string& text, const std::string& source) {
  constexpr int kMaxDepth = 32;
  constexpr size_t kMaxIndent = 256;
  int depth = 0;
  char quote = 0;
  bool comment = false, line_start = true;
  size_t indent = 0, line = 1, column = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    ++column;
    if (ch == '\n') {
      comment = false;
      line_start = true;
      indent = 0;
      ++line;
      column = 0;
      if (quote == '\'') quote = 0;  // single-quoted scalars may span lines, but a stray quote must not hide the rest
      continue;
    }
    if (line_start) {
      if (ch == ' ' || ch == '-' || ch == '?' || ch == ':') {
        if (++indent > kMaxIndent) {
          throw ScenarioError(Origin{source, static_cast<int>(line), static_cast<int>(column)}, "",
                              "nested or indented more than " + std::to_string(kMaxIndent) +
                                  " columns deep; a scenario is a flat mapping");
        }
        continue;
      }
      line_start = false;
    }
    if (comment) continue;
    if (quote != 0) {
      if (ch == '\\' && quote == '"') ++i;
      else if (ch == quote) quote = 0;
      continue;
    }
    if (ch == '"' || ch == '\'') quote = ch;
    else if (ch == '#') comment = true;
    else if (ch == '[' || ch == '{') {
      if (++depth > kMaxDepth) {
        throw ScenarioError(Origin{source, static_cast<int>(line), static_cast<int>(column)}, "",
                            "brackets nested more than " + std::to_string(kMaxDepth) +
                                " deep; a scenario is a flat mapping");
      }
    } else if ((ch == ']' || ch == '}') && depth > 0) {
      --depth;
    }
  }
}

/// A scenario file is one YAML document. yaml-cpp 0.7's LoadAll never returns on a stray ',' after the first value
/// (its parser reports a new empty document forever), so the parser is asked for at most a second document here.
void check_single_document(const std::string& text, const std::string& source) {
  struct Events : YAML::EventHandler {
    void OnDocumentStart(const YAML::Mark& m) override { start = m; }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
    YAML::Mark start;
  };
  std::istringstream in(text);
  YAML::Parser parser(in);
  Events events;
  if (!parser.HandleNextDocument(events)) return;
  if (!parser.HandleNextDocument(events)) return;
  const YAML::Mark m = events.start;
  throw ScenarioError(Origin{source, m.line >= 0 ? m.line + 1 : 0, m.column >= 0 ? m.column + 1 : 0}, "",
                      "file holds more than one YAML document (a '---' separator, or stray text after the first "
                      "value); a scenario file is one document");
}

/// Strict JSON syntax (YAML would accept things JSON does not). A number beyond double range is no syntax error:
/// it is blanked here so the rest is still checked, and the YAML walk then names its key and line.
void check_json_syntax(const std::string& text, const std::string& source) {
  struct Sax : nlohmann::json::json_sax_t {
    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override { return true; }
    bool key(string_t&) override { return true; }
    bool end_object() override { return true; }
    bool start_array(std::size_t) override { return true; }
    bool end_array() override { return true; }
    bool parse_error(std::size_t position, const std::string& token, const nlohmann::json::exception& e) override {
      error_position = position;
      error_token = token;
      error_id = e.id;
      message = e.what();
      return false;
    }
    std::size_t error_position = 0;
    std::string error_token, message;
    int error_id = 0;
  };
  std::string copy = text;
  for (int attempt = 0; attempt < 10000; ++attempt) {
    Sax sax;
    nlohmann::json::sax_parse(copy, &sax);
    if (sax.message.empty()) return;
    const size_t end = std::min(sax.error_position, copy.size());
    if (sax.error_id == 406 && sax.error_token.size() <= end) {  // out of range: blank the number, check the rest
      const size_t begin = end - sax.error_token.size();
      copy.replace(begin, sax.error_token.size(), "0" + std::string(sax.error_token.size() - 1, ' '));
      continue;
    }
    std::string msg = sax.message;
    const auto colon = msg.find(": ", msg.find("parse error"));
    if (colon != std::string::npos) msg = msg.substr(colon + 2);
    throw ScenarioError(origin_from_byte(text, end > 0 ? end - 1 : 0, source), "", "JSON syntax error: " + msg);
  }
  throw ScenarioError(Origin{source, 0, 0}, "", "JSON has too many numbers out of range");
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

ScenarioLoader::ScenarioLoader(ModelOptions models) : models_(std::move(models)) {
  for (const auto& [name, options] : models_) {
    known_models_.push_back(name);
    for (const auto& o : options) {
      const auto [it, first] = merged_options_.emplace(o.key, o);
      if (first) continue;
      ModelOption& m = it->second;
      if (m.type != o.type) continue;  // read as the first declaration's type; check() applies the model's own
      m.min = std::min(m.min, o.min);
      m.max = std::max(m.max, o.max);
      for (const auto& c : o.choices) {
        if (std::find(m.choices.begin(), m.choices.end(), c) == m.choices.end()) m.choices.push_back(c);
      }
    }
  }
}

const ModelOption* ScenarioLoader::find_option(const std::string& key, const Scenario& s) const {
  if (s.is_set("model")) {
    const auto model = models_.find(s.model);
    if (model != models_.end()) {
      for (const auto& o : model->second) {
        if (o.key == key) return &o;
      }
    }
  }
  const auto it = merged_options_.find(key);
  return it == merged_options_.end() ? nullptr : &it->second;
}

ScenarioKey ModelOption::as_key() const {
  std::string type_name = "INT";
  if (type == Type::kFloat) type_name = "NUMBER";
  if (type == Type::kBool) type_name = "BOOL";
  if (type == Type::kChoice) {
    type_name.clear();
    for (const auto& c : choices) type_name += (type_name.empty() ? "" : "|") + c;
  }
  return ScenarioKey{key, flag, help, type == Type::kBool, true, type_name};
}

std::vector<ScenarioKey> all_scenario_keys(const ModelOptions& models) {
  std::vector<ScenarioKey> out = scenario_keys();
  // A key several models declare with different help says each model's ("bert-base: ...; sd-unet: ...").
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> helps;
  for (const auto& [name, options] : models) {
    for (const auto& o : options) {
      auto it = std::find_if(out.begin(), out.end(), [&o](const ScenarioKey& k) { return k.key == o.key; });
      if (it == out.end()) out.push_back(o.as_key());
      helps[o.key].emplace_back(name, o.help);
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

void ScenarioLoader::load_file(const std::string& path, Scenario& s) const {
  load_text(read_scenario_file(path), has_extension(path, ".json") ? "json" : "yaml", path, s);
}

void ScenarioLoader::load_text(const std::string& text, const std::string& format, const std::string& source,
                               Scenario& s) const {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw ScenarioError(Origin{source, 0, 0}, "", "file is empty: a scenario needs at least one key (e.g. model)");
  }
  if (text.size() > kMaxFileBytes) {
    throw ScenarioError(Origin{source, 0, 0}, "", "file is " + std::to_string(text.size()) +
                                                       " bytes; a scenario file is at most 1 MiB");
  }
  check_nesting(text, source);
  std::string yaml_text = text;
  if (format == "json") {
    check_json_syntax(text, source);
    // Tabs are whitespace in JSON but not in YAML indentation; JSON strings cannot contain raw tabs, so replacing
    // them changes no value. The YAML walk then keeps line and column for every value.
    std::replace(yaml_text.begin(), yaml_text.end(), '\t', ' ');
  }
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
    check_single_document(yaml_text, source);
  } catch (const ScenarioError&) {
    throw;
  } catch (const YAML::ParserException& e) {
    throw ScenarioError(Origin{source, e.mark.line + 1, e.mark.column + 1}, "", "YAML syntax error: " + e.msg);
  } catch (const YAML::Exception& e) {
    throw ScenarioError(Origin{source, e.mark.line + 1, e.mark.column + 1}, "", "unreadable YAML: " + e.msg);
  }
  if (!root || root.IsNull()) {
    throw ScenarioError(Origin{source, 0, 0}, "",
                        "file has no scenario keys (only comments or null): a scenario needs at least one key");
  }
  if (!root.IsMap()) {
    throw ScenarioError(origin_of(root, source), "", "expected a mapping of scenario keys at the top level, got " +
                                                         std::string(root.IsSequence() ? "a list" : "a single value"));
  }
  try {
    std::vector<std::string> option_keys;
    for (const auto& k : all_scenario_keys(models_)) {
      if (k.per_model) option_keys.push_back(k.key);
    }
    merge_map(root, "", source, s, known_models_, [this](const std::string& k, const Scenario& sc) { return find_option(k, sc); },
              option_keys);
  } catch (const ScenarioError&) {
    throw;
  } catch (const YAML::Exception& e) {  // a node yaml-cpp cannot convert: still the file's fault, still named
    throw ScenarioError(Origin{source, e.mark.line + 1, e.mark.column + 1}, "", "unreadable YAML: " + e.msg);
  }
}

void ScenarioLoader::apply_override(const std::string& key, const std::string& value, const std::string& flag,
                                    Scenario& s) const {
  const Origin origin{"command line " + flag, 0, 0};
  if (!set_key(key, YAML::Node(value), origin, s, known_models_, [this](const std::string& k, const Scenario& sc) { return find_option(k, sc); })) {
    throw ScenarioError(origin, key, "unknown scenario key");
  }
}

void ScenarioLoader::check(const Scenario& s) const {
  // Every model key set must be the chosen model's, within that model's declaration (two models may declare one
  // key with different ranges; the value was read by the first declaration).
  const auto model = models_.find(s.model);
  for (const auto& [key, value] : s.model_options) {
    const auto where = s.origins.find(key);
    const Origin origin = where != s.origins.end() ? where->second : Origin{"scenario", 0, 0};
    const ModelOption* own = nullptr;
    if (model != models_.end()) {
      for (const auto& o : model->second) {
        if (o.key == key) own = &o;
      }
    }
    if (own == nullptr) {
      if (models_.empty() || model == models_.end()) continue;  // no declarations to check against
      std::vector<std::string> takers;
      for (const auto& [name, options] : models_) {
        for (const auto& o : options) {
          if (o.key == key) takers.push_back(name);
        }
      }
      throw ScenarioError(origin, key, "not a key of " + s.model +
                                           (takers.empty() ? std::string("") : "; it applies to " + join(takers, ", ")));
    }
    if (!value.is_null()) {
      const YAML::Node node(value.is_string() ? value.get<std::string>() : value.dump());
      option_value(*own, node, Ctx{origin, key});  // throws with this model's range
    }
  }
  auto origin_of = [&s](const std::string& key) {
    const auto it = s.origins.find(key);
    return it != s.origins.end() ? it->second : Origin{"default", 0, 0};
  };
  if (s.data == "folder" && s.data_path.empty()) {
    throw ScenarioError(origin_of("data"), "data_path", "data: folder needs data_path, the ImageFolder root");
  }
  if (s.data != "folder") {
    for (const char* key : {"data_path", "data_workers", "decode", "prefetch", "data_only"}) {
      if (s.is_set(key) && (std::string(key) != "data_only" || s.data_only)) {
        throw ScenarioError(origin_of(key), key, std::string(key) + " applies to data: folder (this scenario's data is " + s.data + ")");
      }
    }
  }
  if (s.mode == "inference") {
    if (s.grad_accumulation > 1) {
      throw ScenarioError(origin_of("grad_accumulation"), "grad_accumulation",
                          "grad_accumulation applies to mode: train (inference has no gradients to accumulate)");
    }
    if (s.data_only) {
      throw ScenarioError(origin_of("data_only"), "data_only", "data_only times the input pipeline alone; use mode: train");
    }
  }
  if (s.batch_size && s.dataset_size < *s.batch_size * s.grad_accumulation) {
    // Point at whichever of the two keys the user set (dataset_size first): a default has no file or line.
    const bool dataset_set = s.origins.count("dataset_size") != 0;
    const std::string key = dataset_set || s.origins.count("batch_size") == 0 ? "dataset_size" : "batch_size";
    const auto it = s.origins.find(key);
    const Origin o = it != s.origins.end() ? it->second : Origin{"default", 0, 0};
    throw ScenarioError(o, key,
                        "dataset_size (" + std::to_string(s.dataset_size) + ") is smaller than one step (batch_size " +
                            std::to_string(*s.batch_size) + " x grad_accumulation " +
                            std::to_string(s.grad_accumulation) + "): an epoch would contain no step");
  }
}

}  // namespace gpubench
