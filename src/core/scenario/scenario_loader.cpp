#include "gpubench/core/scenario/scenario_loader.hpp"

#include "core/scenario/values.h"
#include "gpubench/core/io/files.hpp"
#include "gpubench/core/scenario/precision.hpp"
#include "gpubench/core/scenario/run_mode.hpp"

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

using namespace scenario_detail;  // NOLINT(google-build-using-namespace): the value readers

namespace {

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
    // An alias of the named model's key is stored under the key; before a model is named, as written (the
    // loader's apply_aliases moves it once the model is known).
    const bool alias = std::find(o->aliases.begin(), o->aliases.end(), key) != o->aliases.end();
    const std::string& name = alias ? o->key : key;
    // A key and its alias in one place (one file, or both as flags) contradict each other; a flag over a file's
    // value is an override as any other.
    const auto set = s.origins.find(name);
    const auto layer = [](const std::string& source) {
      return source.rfind("command line", 0) == 0 ? std::string("command line") : source;
    };
    if (alias && set != s.origins.end() && layer(set->second.source) == layer(origin.source)) {
      throw ScenarioError(origin, key, key + " is " + s.model + "'s " + name + ", which " + set->second.describe() +
                                           " also sets; give one");
    }
    s.model_options[name] = option_value(*o, value, Ctx{origin, key});
    s.origins[name] = origin;
    return true;
  }
  return false;
}

Origin origin_of(const YAML::Node& n, const std::string& source) {
  const YAML::Mark m = n.Mark();
  if (m.line < 0) return Origin{source, 0, 0};
  return Origin{source, m.line + 1, m.column + 1};
}

/// Merges every key of `map`; a key's problem is added to `errors` and the next key is read (validate shows all of a
/// file's problems at once, not one per try).
void merge_map(const YAML::Node& map, const std::string& prefix, const std::string& source, Scenario& s,
               const std::vector<std::string>& models, const FindOption& find_option,
               const std::vector<std::string>& option_keys, std::vector<ScenarioError>& errors) {
  std::set<std::string> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    // Copies: the iterator's pair is a temporary proxy, and references into it dangle (ASan:
    // stack-use-after-scope).
    const YAML::Node key_node = it->first;
    const YAML::Node value = it->second;
    const Origin key_origin = origin_of(key_node, source);
    try {
      if (!key_node.IsScalar()) throw ScenarioError(key_origin, "", "keys must be plain words");
      const std::string key = prefix + key_node.Scalar();
      if (!seen.insert(key).second) throw ScenarioError(key_origin, key, "duplicate key");
      if ((key == "optimizer" || key == "kernel_options") && value.IsMap()) {
        merge_map(value, key + ".", source, s, models, find_option, option_keys, errors);
        continue;
      }
      const FindOption none = [](const std::string&, const Scenario&) { return nullptr; };
      if (!set_key(key == "optimizer" ? "optimizer.name" : key, value, origin_of(value, source), s, models,
                   prefix.empty() ? find_option : none)) {
        std::vector<std::string> known = keys_with_prefix(prefix);
        if (prefix.empty()) known.insert(known.end(), option_keys.begin(), option_keys.end());
        throw ScenarioError(key_origin, key,
                            "unknown key" + did_you_mean(key_node.Scalar(), known) +
                                "; see `gpubench run --help` for the keys a scenario accepts");
      }
    } catch (const ScenarioError& e) {
      errors.push_back(e);
    } catch (const YAML::Exception& e) {  // a node yaml-cpp cannot convert: still the file's fault, still named
      errors.emplace_back(Origin{source, e.mark.line + 1, e.mark.column + 1}, "", "unreadable YAML: " + e.msg);
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

namespace {
std::string joined_messages(const std::vector<ScenarioError>& errors) {
  std::string out;
  for (const auto& e : errors) out += (out.empty() ? "" : "\n") + std::string(e.what());
  return out;
}
}  // namespace

ScenarioError::ScenarioError(std::vector<ScenarioError> errors)
    : std::runtime_error(joined_messages(errors)),
      origin_(errors.at(0).origin()),
      key_(errors.at(0).key()),
      problem_(errors.at(0).problem()),
      others_(errors.size() > 1 ? std::move(errors) : std::vector<ScenarioError>{}) {}

double parse_duration_s(const std::string& text, const std::string& where) {
  return as_duration_s(YAML::Node(text), Ctx{Origin{where, 0, 0}, ""});
}

ScenarioLoader::ScenarioLoader(std::vector<std::string> known_models) : known_models_(std::move(known_models)) {}

ScenarioLoader::ScenarioLoader(ModelOptions models) : models_(std::move(models)) {
  for (const auto& [name, options] : models_) {
    known_models_.push_back(name);
    for (const auto& o : options) {
      for (const auto& a : o.aliases) {  // read as written, by the key's declaration, until the model is known
        ModelOption as_written = o;
        as_written.key = a;
        as_written.aliases.clear();
        merged_options_.emplace(a, as_written);
      }
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
      for (const auto& o : model->second) {
        if (std::find(o.aliases.begin(), o.aliases.end(), key) != o.aliases.end()) return &o;
      }
    }
  }
  const auto it = merged_options_.find(key);
  return it == merged_options_.end() ? nullptr : &it->second;
}

void apply_key_aliases(const std::vector<ModelOption>& own, Scenario& s) {
  for (const auto& o : own) {
    for (const auto& alias : o.aliases) {
      const bool declared = std::any_of(own.begin(), own.end(), [&alias](const ModelOption& x) { return x.key == alias; });
      const auto it = s.model_options.find(alias);
      if (declared || it == s.model_options.end()) continue;
      const auto origin = s.origins.find(alias);
      const Origin where = origin != s.origins.end() ? origin->second : Origin{"scenario", 0, 0};
      if (s.model_options.count(o.key) != 0 && s.origins.count(o.key) != 0) {
        throw ScenarioError(where, alias, alias + " is " + s.model + "'s " + o.key + ", which is also set; give one");
      }
      s.model_options[o.key] = it->second;
      s.model_options.erase(it);
      if (origin != s.origins.end()) {
        s.origins[o.key] = where;
        s.origins.erase(alias);
      }
    }
  }
}

void ScenarioLoader::apply_aliases(Scenario& s) const {
  const auto model = models_.find(s.model);
  if (model != models_.end()) apply_key_aliases(model->second, s);
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
    std::vector<ScenarioError> errors;
    merge_map(root, "", source, s, known_models_, [this](const std::string& k, const Scenario& sc) { return find_option(k, sc); },
              option_keys, errors);
    if (!errors.empty()) throw ScenarioError(std::move(errors));
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
  // Every rule is checked and every broken one reported (validate lists a file's problems at once).
  std::vector<ScenarioError> errors;
  const auto fail = [&errors](Origin origin, const std::string& key, const std::string& problem) {
    errors.emplace_back(std::move(origin), key, problem);
  };
  // Every model key set must be the chosen model's, within that model's declaration (two models may
  // declare one key with different ranges; the value was read by the first declaration).
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
      // Another model's alias of a key this model has: name this model's ("llama calls it hidden (--hidden)").
      std::string hint;
      for (const auto& [name, options] : models_) {
        for (const auto& o : options) {
          const bool aliased = std::find(o.aliases.begin(), o.aliases.end(), key) != o.aliases.end();
          const bool ours = std::any_of(model->second.begin(), model->second.end(),
                                        [&o](const ModelOption& x) { return x.key == o.key; });
          if (aliased && ours && hint.empty()) hint = "; " + s.model + " calls it " + o.key + " (" + o.flag + ")";
        }
      }
      fail(origin, key,
           "not a key of " + s.model + (takers.empty() ? std::string("") : "; it applies to " + join(takers, ", ")) +
               hint);
      continue;
    }
    if (!value.is_null()) {
      const YAML::Node node(value.is_string() ? value.get<std::string>() : value.dump());
      try {
        option_value(*own, node, Ctx{origin, key});  // throws with this model's range
      } catch (const ScenarioError& e) {
        errors.push_back(e);
      }
    }
  }
  auto origin_of = [&s](const std::string& key) {
    const auto it = s.origins.find(key);
    return it != s.origins.end() ? it->second : Origin{"default", 0, 0};
  };
  // A scenario made in code or read from a record was not parsed by the key: its mode is checked here as well.
  const std::optional<RunMode> mode = parse_run_mode(s.mode);
  if (!mode) fail(origin_of("mode"), "mode", "expected train, inference or generate, got '" + s.mode + "'");
  if (s.data == "folder" && s.data_path.empty()) {
    fail(origin_of("data"), "data_path", "data: folder needs data_path, the ImageFolder root");
  }
  if (!builtin_device(s.device) && s.backend_library.empty()) {
    fail(origin_of("device"), "device",
         "expected auto, cpu, cuda, cuda:N, rocm, rocm:N, mps, xpu or xpu:N, got '" + s.device +
             "' (an out-of-tree accelerator's device NAME[:N] needs its backend_library, --backend-library PATH)");
  }
  if (s.data != "folder") {
    for (const char* key : {"data_path", "data_workers", "decode", "prefetch", "data_only"}) {
      if (s.is_set(key) && (std::string(key) != "data_only" || s.data_only)) {
        fail(
            origin_of(key), key,
            std::string(key) + " applies to data: folder (this scenario's data is " + s.data + ")");
      }
    }
  }
  const std::optional<Precision> precision = parse_precision(s.precision);
  if (!precision) {
    fail(origin_of("precision"), "precision", "expected fp32, tf32, bf16, fp16, amp or fp8, got '" + s.precision + "'");
  }
  if (precision != Precision::kFp8) {
    for (const char* key :
         {"fp8_grad_format", "fp8_scaling", "fp8_amax_history", "fp8_lm_head", "fp8_classifier"}) {
      if (s.is_set(key)) {
        fail(origin_of(key), key,
             std::string(key) + " applies to precision: fp8 (this scenario's precision is " +
                 s.precision + ")");
      }
    }
  } else if (mode != RunMode::kTrain) {
    fail(origin_of("precision"), "precision",
         "precision: fp8 is FP8 training (mode: train); this scenario's mode is " + s.mode);
  }
  if (precision == Precision::kFp8 && s.fp8_scaling == "delayed" && s.graph) {
    fail(origin_of("fp8_scaling"), "fp8_scaling",
         "fp8_scaling: delayed keeps the position in its amax history on the host, which a CUDA "
         "graph "
         "replay would not advance; use fp8_scaling: tensor or rowwise with graph: true");
  }
  if (s.is_set("fp8_amax_history") && s.fp8_scaling != "delayed") {
    fail(origin_of("fp8_amax_history"), "fp8_amax_history",
         "fp8_amax_history applies to fp8_scaling: delayed (this scenario's scaling is " +
             s.fp8_scaling + ")");
  }
  if (mode != RunMode::kGenerate) {
    for (const char* key : {"prompt_tokens", "new_tokens", "kv_cache_dtype"}) {
      if (s.is_set(key)) {
        fail(origin_of(key), key,
             std::string(key) + " applies to mode: generate (this scenario's mode is " + s.mode +
                 ")");
      }
    }
  } else {
    if (s.data != "synthetic") {
      fail(origin_of("data"), "data",
           "mode: generate reads no data set: its prompts are random token ids");
    }
    for (const char* key : {"duration_s", "profile", "grad_accumulation"}) {
      if (s.is_set(key)) {
        fail(origin_of(key), key,
             std::string(key) + " applies to mode: train and inference, not generate");
      }
    }
  }
  if (mode == RunMode::kInference || mode == RunMode::kGenerate) {
    if (s.grad_accumulation > 1) {
      fail(origin_of("grad_accumulation"), "grad_accumulation",
           "grad_accumulation applies to mode: train (inference has no gradients to accumulate)");
    }
    if (s.data_only) {
      fail(origin_of("data_only"), "data_only",
           "data_only times the input pipeline alone; use mode: train");
    }
  }
  if (s.batch_size && s.dataset_size < *s.batch_size * s.grad_accumulation) {
    // Point at whichever of the two keys the user set (dataset_size first): a default has no file
    // or line.
    const bool dataset_set = s.origins.count("dataset_size") != 0;
    const std::string key =
        dataset_set || s.origins.count("batch_size") == 0 ? "dataset_size" : "batch_size";
    const auto it = s.origins.find(key);
    const Origin o = it != s.origins.end() ? it->second : Origin{"default", 0, 0};
    fail(o, key,
         "dataset_size (" + std::to_string(s.dataset_size) +
             ") is smaller than one step (batch_size " + std::to_string(*s.batch_size) +
             " x grad_accumulation " + std::to_string(s.grad_accumulation) +
             "): an epoch would contain no step");
  }
  if (!errors.empty()) throw ScenarioError(std::move(errors));
}

}  // namespace gpubench
