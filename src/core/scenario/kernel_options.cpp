#include "gpubench/core/scenario/kernel_options.hpp"

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace gpubench {

namespace {

KernelOptionInfo reach(std::string name, std::string env, std::string help, KernelReach KernelOptions::*member) {
  KernelOptionInfo i;
  i.name = std::move(name);
  i.type = "off|auto|on";
  i.env = std::move(env);
  i.help = std::move(help);
  i.applies = "kernels: fused, mode: generate";
  i.get = [member](const KernelOptions& o) { return nlohmann::json(reach_name(o.*member)); };
  i.set = [member](KernelOptions& o, const nlohmann::json& v) {
    o.*member = parse_reach(v.get<std::string>()).value_or(KernelReach::kAuto);
  };
  return i;
}

KernelOptionInfo flag(std::string name, std::string env, std::string help, std::string applies,
                      bool KernelOptions::*member) {
  KernelOptionInfo i;
  i.name = std::move(name);
  i.type = "BOOL";
  i.env = std::move(env);
  i.help = std::move(help);
  i.applies = std::move(applies);
  i.get = [member](const KernelOptions& o) { return nlohmann::json(o.*member); };
  i.set = [member](KernelOptions& o, const nlohmann::json& v) { o.*member = v.get<bool>(); };
  return i;
}

KernelOptionInfo integer(std::string name, std::string env, std::string help, int64_t lo, int64_t hi,
                         int64_t KernelOptions::*member) {
  KernelOptionInfo i;
  i.name = std::move(name);
  i.type = "INT";
  i.min = lo;
  i.max = hi;
  i.env = std::move(env);
  i.help = std::move(help);
  i.applies = "kernels: fused, mode: generate";
  i.get = [member](const KernelOptions& o) { return nlohmann::json(o.*member); };
  i.set = [member](KernelOptions& o, const nlohmann::json& v) { o.*member = v.get<int64_t>(); };
  return i;
}

}  // namespace

bool KernelOptions::operator==(const KernelOptions& o) const {
  for (const auto& i : kernel_option_table()) {
    if (i.get(*this) != i.get(o)) return false;
  }
  return true;
}

const std::vector<KernelOptionInfo>& kernel_option_table() {
  static const std::vector<KernelOptionInfo> table = [] {
    using K = KernelOptions;
    const std::string generate = "mode: generate";
    const std::string fused_generate = "kernels: fused, mode: generate";
    return std::vector<KernelOptionInfo>{
        reach("decode_run", "GPUBENCH_DECODE_RUN",
              "the run GEMV (each warp streams its run of weight rows into registers): off | auto (one token over 8 "
              "MiB of weights or more, where it measured faster; default) | on (every product it serves)",
              &K::decode_run),
        reach("decode_stream", "GPUBENCH_DECODE_STREAM",
              "the streamed GEMV (weights through a ring of shared memory by bulk copies): off | auto (one token over "
              "rows of 2,048+ and 8 MiB or more; default) | on (every product it serves)",
              &K::decode_stream),
        flag("decode_pdl", "GPUBENCH_DECODE_PDL",
             "launch the decode kernels programmatically on sm_90+, each requesting its weights while the one before "
             "finishes (default true)",
             fused_generate, &K::decode_pdl),
        flag("decode_evict_first", "GPUBENCH_DECODE_EVICT_FIRST",
             "the run and streamed GEMVs read weights with L2's evict_first priority (default true)", fused_generate,
             &K::decode_evict_first),
        flag("decode_greedy_tail", "GPUBENCH_DECODE_GREEDY_TAIL",
             "the greedy argmax, the token, the history and the next position inside the LM head's launch where the "
             "run GEMV takes it (default true)",
             fused_generate, &K::decode_greedy_tail),
        flag("decode_embed", "GPUBENCH_DECODE_EMBED",
             "the step's embedding rows in one programmatic launch (default true; false: ATen's operations)",
             fused_generate, &K::decode_embed),
        integer("attention_cluster_splits", "GPUBENCH_DECODE_ATTN_CLUSTER",
                "decode attention for one sequence on sm_90+: splits per thread-block cluster, combined in the "
                "cluster's shared memory (0-16, default 8; 0: the form whose last block combines)",
                0, 16, &K::attention_cluster_splits),
        integer("attention_min_split", "GPUBENCH_DECODE_ATTN_MIN_SPLIT",
                "decode attention: positions per split, at least (1-65536, default 64)", 1, 65536,
                &K::attention_min_split),
        flag("decode_one_kernel", "GPUBENCH_DECODE_STEP",
             "the whole decode step as one persistent kernel (default false: it measured slower on the H200 than "
             "the chain of kernels)",
             fused_generate, &K::decode_one_kernel),
        flag("flash_decode", "GPUBENCH_FLASH_DECODE",
             "decode attention by FlashAttention's KV-cache kernel where the kernels above do not take it (default "
             "true; false: masked SDPA)",
             generate, &K::flash_decode),
        flag("prefill_graph", "GPUBENCH_PREFILL_GRAPH",
             "capture the prompt's prefill as a CUDA graph and replay it each generation (default true)", generate,
             &K::prefill_graph),
        flag("nvjpeg_roi", "GPUBENCH_NVJPEG_ROI",
             "nvJPEG decodes only each image's crop window (batched ROI decode; default true)", "decode: gpu|mixed",
             &K::nvjpeg_roi),
    };
  }();
  return table;
}

const KernelOptionInfo* find_kernel_option(const std::string& name) {
  for (const auto& i : kernel_option_table()) {
    if (i.name == name) return &i;
  }
  return nullptr;
}

std::string reach_name(KernelReach r) {
  return r == KernelReach::kOff ? "off" : r == KernelReach::kOn ? "on" : "auto";
}

std::optional<KernelReach> parse_reach(const std::string& text) {
  if (text == "off" || text == "0") return KernelReach::kOff;
  if (text == "on" || text == "1") return KernelReach::kOn;
  if (text == "auto" || text.empty()) return KernelReach::kAuto;
  return std::nullopt;
}

std::vector<std::pair<std::string, nlohmann::json>> kernel_options_from_environment(
    const std::function<const char*(const char*)>& getenv) {
  std::vector<std::pair<std::string, nlohmann::json>> out;
  for (const auto& i : kernel_option_table()) {
    const char* raw = getenv(i.env.c_str());
    if (raw == nullptr || *raw == '\0') continue;  // unset or empty: the default
    const std::string v = raw;
    const auto bad = [&](const std::string& takes) {
      return std::invalid_argument(i.env + "='" + v + "': takes " + takes);
    };
    if (i.type == "off|auto|on") {
      const auto r = parse_reach(v);
      if (!r) throw bad("off|auto|on (or 0|1)");
      out.emplace_back(i.name, reach_name(*r));
    } else if (i.type == "BOOL") {
      // The old switches: "0" turns a default-on feature off; anything else leaves the default, except "1", which
      // turns a default-off one (decode_one_kernel) on.
      if (v == "0" || v == "false" || v == "off") {
        out.emplace_back(i.name, false);
      } else if (v == "1" || v == "true" || v == "on") {
        out.emplace_back(i.name, true);
      } else {
        throw bad("0|1");
      }
    } else {
      char* end = nullptr;
      errno = 0;
      const long long n = std::strtoll(v.c_str(), &end, 10);
      if (*end != '\0' || errno != 0 || n < i.min || n > i.max) {
        throw bad("an integer from " + std::to_string(i.min) + " to " + std::to_string(i.max));
      }
      out.emplace_back(i.name, static_cast<int64_t>(n));
    }
  }
  return out;
}

std::string describe_non_defaults(const KernelOptions& o) {
  static const KernelOptions defaults;
  std::string out;
  for (const auto& i : kernel_option_table()) {
    const nlohmann::json v = i.get(o);
    if (v == i.get(defaults)) continue;
    out += (out.empty() ? "" : ", ") + i.name + " " + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

void to_json(nlohmann::json& j, const KernelOptions& o) {
  j = nlohmann::json::object();
  for (const auto& i : kernel_option_table()) j[i.name] = i.get(o);
}

void from_json(const nlohmann::json& j, KernelOptions& o) {
  o = KernelOptions{};
  if (!j.is_object()) return;
  for (const auto& i : kernel_option_table()) {
    const auto it = j.find(i.name);
    if (it == j.end()) continue;
    const bool ok = i.type == "off|auto|on" ? it->is_string() && parse_reach(it->get<std::string>()).has_value()
                    : i.type == "BOOL"      ? it->is_boolean()
                                            : it->is_number_integer();
    if (!ok) throw std::runtime_error("scenario \"kernel_options." + i.name + "\" must be " + i.type + ", got " + it->dump());
    i.set(o, *it);
  }
}

}  // namespace gpubench
