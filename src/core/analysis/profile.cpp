#include "gpubench/core/analysis/profile.hpp"

#include "core/text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>
#include <map>
#include <tuple>

namespace gpubench {

namespace {

using text::lower;

bool has_any(const std::string& s, std::initializer_list<const char*> parts) {
  return std::any_of(parts.begin(), parts.end(), [&s](const char* p) { return s.find(p) != std::string::npos; });
}

bool starts_with_any(const std::string& s, std::initializer_list<const char*> prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(), [&s](const char* p) { return s.rfind(p, 0) == 0; });
}

bool is_device(ProfileEvent::Kind k) {
  return k == ProfileEvent::Kind::kKernel || k == ProfileEvent::Kind::kMemcpy || k == ProfileEvent::Kind::kMemset;
}

/// Idle time between device work shorter than this is not a gap (launch latency between back-to-back kernels).
constexpr int64_t kGapNs = 1000;

struct Interval {
  int64_t start, end;
};

/// Length of the union of intervals clipped to [lo, hi], and how many gaps longer than 1 us separate them.
std::pair<int64_t, int64_t> union_length(std::vector<Interval> v, int64_t lo, int64_t hi) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  int64_t total = 0, gaps = 0;
  int64_t cur_s = 0, cur_e = 0;
  bool open = false;
  for (const auto& iv : v) {
    const int64_t s = std::max(iv.start, lo), e = std::min(iv.end, hi);
    if (e <= s) continue;
    if (open && s <= cur_e) {
      cur_e = std::max(cur_e, e);
      continue;
    }
    if (open) {
      total += cur_e - cur_s;
      if (s - cur_e > kGapNs) ++gaps;
    }
    cur_s = s;
    cur_e = e;
    open = true;
  }
  if (open) total += cur_e - cur_s;
  return {total, gaps};
}

/// Work attributed to one name: a device kernel's duration, or a CPU operator's self time (its duration less its
/// children's on the same thread, as PyTorch's self_cpu_time).
struct Work {
  const std::string* name;
  int64_t start_ns, end_ns;
  double ns;
};

/// CPU operators as work: self times, and the top-level operators' intervals as the busy intervals.
void cpu_operator_work(const std::vector<ProfileEvent>& events, std::vector<Work>& work, std::vector<Interval>& busy) {
  std::map<int64_t, std::vector<const ProfileEvent*>> by_lane;
  for (const auto& e : events) {
    if (e.kind == ProfileEvent::Kind::kCpuOp && e.end_ns >= e.start_ns) by_lane[e.lane].push_back(&e);
  }
  for (auto& [lane, ops] : by_lane) {
    // Parents first: earlier start, and for equal starts the longer one.
    std::sort(ops.begin(), ops.end(), [](const ProfileEvent* a, const ProfileEvent* b) {
      return std::tie(a->start_ns, b->end_ns) < std::tie(b->start_ns, a->end_ns);
    });
    std::vector<size_t> open;  // indices into `work` of the enclosing operators
    for (const ProfileEvent* op : ops) {
      while (!open.empty() && work[open.back()].end_ns <= op->start_ns) open.pop_back();
      const double ns = static_cast<double>(op->end_ns - op->start_ns);
      if (open.empty()) {
        busy.push_back({op->start_ns, op->end_ns});
      } else {
        work[open.back()].ns -= ns;  // the parent's self time excludes this child
      }
      work.push_back(Work{&op->name, op->start_ns, op->end_ns, ns});
      open.push_back(work.size() - 1);
    }
  }
  for (auto& w : work) w.ns = std::max(0.0, w.ns);
}

}  // namespace

bool is_step_marker(const std::string& name) {
  return name == kProfileStepMarker || name.rfind("ProfilerStep#", 0) == 0;
}

bool is_launch_call(const std::string& name) {
  return name.find("LaunchKernel") != std::string::npos || name.find("cuLaunch") != std::string::npos ||
         name.find("GraphLaunch") != std::string::npos;
}

const std::vector<std::pair<std::string, std::string>>& kernel_categories() {
  static const std::vector<std::pair<std::string, std::string>> c{
      {"gemm_fp8", "GEMM (FP8)"},         {"gemm_conv", "GEMM/conv"},  {"attention", "attention"},
      {"normalization", "normalisation"},
      {"elementwise", "elementwise/activation"}, {"reduction", "reduction/softmax/loss"},
      {"optimizer", "optimizer"},         {"memcpy", "memory copies"}, {"communication", "communication"},
      {"input", "input pipeline"},        {"other", "other"}};
  return c;
}

std::string category_display_name(const std::string& id) {
  for (const auto& [key, name] : kernel_categories()) {
    if (key == id) return name;
  }
  return id;
}

namespace {
/// cuBLASLt's nvjet kernels name their types after the architecture: nvjet_[smNN_]<types>_<tile>..., one letter a
/// type (h fp16, t bf16, s fp32; q e4m3 and r e5m2, read off an FP8 run's profile on the H200: qqtst for the forward
/// products, qrtst and qrsss for the backward ones).
bool nvjet_fp8(const std::string& n) {
  const size_t at = n.find("nvjet_");
  if (at == std::string::npos) return false;
  size_t pos = at + 6;
  while (pos < n.size()) {
    const size_t end = std::min(n.find('_', pos), n.size());
    const std::string token = n.substr(pos, end - pos);
    const bool arch = token.size() > 2 && token.compare(0, 2, "sm") == 0 &&
                      std::all_of(token.begin() + 2, token.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!arch) {
      return !token.empty() &&
             std::all_of(token.begin(), token.end(), [](char c) { return c >= 'a' && c <= 'z'; }) &&
             token.find_first_of("qr") != std::string::npos;
    }
    pos = end + 1;
  }
  return false;
}
}  // namespace

std::string kernel_category(const std::string& raw) {
  const std::string n = lower(raw);
  if (has_any(n, {"nccl", "gloo", "allreduce", "all_reduce", "allgather", "all_gather", "reducescatter",
                  "reduce_scatter", "c10d::", "broadcast"})) {
    return "communication";
  }
  if (starts_with_any(n, {"memcpy", "memset"})) return "memcpy";
  // The input pipeline's own kernels (nvJPEG's, gpubench's crop kernel): before GEMM/conv, whose "conv" pattern
  // would otherwise take nvJPEG's colour "Conversion".
  if (has_any(n, {"nvjpeg", "crop_resize_normalize", "dali::"})) return "input";
  if (has_any(n, {"adam", "sgd", "multi_tensor_apply", "_foreach_", "_amp_", "amp_update", "non_finite",
                  "optimizer"})) {
    return "optimizer";
  }
  // cuDNN's SDPA backward also runs two helpers (dO.O and dQ conversion) outside its main kernel.
  if (has_any(n, {"flash", "fmha", "attention", "sdpa", "mha_", "convert_dq_to", "dot_do_o"})) return "attention";
  if (has_any(n, {"layer_norm", "layernorm", "batch_norm", "batchnorm", "bn_fw", "bn_bw", "group_norm", "groupnorm",
                  "rms_norm", "rmsnorm", "instance_norm", "welford", "gammabeta"})) {
    return "normalization";
  }
  // FP8 matrix products (precision: fp8): cuBLASLt's kernels name their FP8 operand types; ATen's op is _scaled_mm.
  // A GEMM naming an FP8 type (ATen's elementwise casts to FP8 name the type too, and are not GEMMs).
  const bool fp8_type = has_any(n, {"e4m3", "e5m2", "f8f8", "fp8", "float8"});
  if ((fp8_type && has_any(n, {"gemm", "nvjet", "cutlass", "xmma", "cublas", "matmul", "tensorop"})) ||
      has_any(n, {"_scaled_mm"}) || nvjet_fp8(n)) {
    return "gemm_fp8";
  }
  if (has_any(n, {"gemm", "nvjet", "cutlass", "xmma", "conv", "cudnn", "wgrad", "dgrad", "fprop", "cublas", "winograd",
                  "tensorop", "mkldnn", "onednn", "matmul", "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm",
                  "aten::linear"})) {
    return "gemm_conv";
  }
  if (has_any(n, {"reduce", "softmax", "nll_loss", "cross_entropy", "loss", "aten::sum", "aten::mean", "aten::max",
                  "aten::min", "argmax", "cumsum", "norm_kernel"})) {
    return "reduction";
  }
  if (has_any(n, {"autograd::engine", "backward0", "backward1"})) return "other";  // autograd's bookkeeping (CPU)
  // gpubench's own memory passes (fused kernels, FP8's amax and casts) are elementwise work too.
  if (has_any(n, {"elementwise", "vectorized", "unrolled", "gelu", "relu", "silu", "sigmoid", "tanh", "dropout",
                  "swiglu", "rotary", "amax_kernel", "cast_transpose",
                  "add", "mul", "div", "sub", "copy", "fill", "where", "threshold", "clamp", "cat", "masked", "index",
                  "embedding", "scatter", "gather", "pow", "sqrt", "exp", "neg", "cast", "to_copy", "zero", "bernoulli",
                  "rand", "uniform", "pool"})) {
    return "elementwise";
  }
  return "other";
}

bool is_matrix_category(const std::string& c) { return c == "gemm_conv" || c == "gemm_fp8" || c == "attention"; }

bool is_memory_category(const std::string& c) {
  return c == "elementwise" || c == "normalization" || c == "reduction" || c == "optimizer" || c == "memcpy";
}

std::string short_kernel_name(const std::string& name) {
  std::string s = name;
  if (s.rfind("void ", 0) == 0) s = s.substr(5);
  // Namespaces every ATen kernel shares say nothing; the template arguments (the functor: Gelu, Mul, ...) do.
  for (const char* noise : {"(anonymous namespace)::", "at::native::", "at::cuda::", "c10::", "std::"}) {
    const std::string n = noise;
    for (size_t at = s.find(n); at != std::string::npos; at = s.find(n, at)) s.erase(at, n.size());
  }
  // A trailing parameter list "(...)" at nesting depth 0 is dropped.
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') ++depth;
      if (s[i] == '(' && --depth == 0) {
        if (i > 0) s.resize(i);
        break;
      }
    }
  }
  if (s.size() > 120) s = s.substr(0, 117) + "...";
  return s;
}

namespace {

/// The idle gaps over 1 us between consecutive device work within [lo, hi], summed by the work that ran last before
/// each gap (the one reaching furthest) and the work that ended it, by short name; the `most` largest, most first.
std::vector<ProfileGap> idle_gaps(std::vector<Work> work, int64_t lo, int64_t hi, double steps, size_t most) {
  std::sort(work.begin(), work.end(), [](const Work& a, const Work& b) { return a.start_ns < b.start_ns; });
  std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>> by_pair;  // total ns, count
  const std::string* last = nullptr;
  int64_t reach = 0;
  for (const auto& w : work) {
    const int64_t s = std::max(w.start_ns, lo), e = std::min(w.end_ns, hi);
    if (e <= s) continue;
    if (last != nullptr && s - reach > kGapNs) {
      auto& g = by_pair[{short_kernel_name(*last), short_kernel_name(*w.name)}];
      g.first += s - reach;
      ++g.second;
    }
    if (last == nullptr || e > reach) {
      reach = e;
      last = w.name;
    }
  }
  std::vector<ProfileGap> out;
  for (const auto& [names, total] : by_pair) {
    out.push_back(ProfileGap{names.first, names.second, static_cast<double>(total.first) / 1e6 / steps,
                             static_cast<double>(total.second) / steps});
  }
  std::sort(out.begin(), out.end(), [](const ProfileGap& a, const ProfileGap& b) {
    return std::tie(b.ms_per_step, a.after, a.before) < std::tie(a.ms_per_step, b.after, b.before);
  });
  if (out.size() > most) out.resize(most);
  return out;
}

}  // namespace

ProfileRecord summarize_profile(const std::vector<ProfileEvent>& events, const ProfileInputs& in) {
  ProfileRecord p;
  p.steps = in.steps;
  p.peak_source = in.peak_source;
  if (in.steps <= 0) return p;
  const double steps = static_cast<double>(in.steps);

  std::vector<Work> work;
  std::vector<Interval> busy;
  for (const auto& e : events) {
    if (!is_device(e.kind) || e.end_ns <= e.start_ns) continue;
    work.push_back(Work{&e.name, e.start_ns, e.end_ns, static_cast<double>(e.end_ns - e.start_ns)});
    busy.push_back({e.start_ns, e.end_ns});
  }
  const bool device_work = !work.empty();
  if (!device_work) cpu_operator_work(events, work, busy);

  // The window: the step markers, stretched to the last device event (the device finishes after the host's marker).
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const auto& e : events) {
    if (e.kind != ProfileEvent::Kind::kStep) continue;
    lo = std::min(lo, e.start_ns);
    hi = std::max(hi, e.end_ns);
  }
  if (lo == INT64_MAX) {
    for (const auto& w : work) {
      lo = std::min(lo, w.start_ns);
      hi = std::max(hi, w.end_ns);
    }
  }
  for (const auto& w : work) {
    if (w.start_ns >= lo) hi = std::max(hi, w.end_ns);
  }
  if (lo == INT64_MAX || hi <= lo) return p;

  std::map<std::string, ProfileCategory> cats;
  std::map<std::string, ProfileKernel> by_name;
  double kernel_ns = 0;
  int64_t count = 0;
  for (const auto& w : work) {
    if (w.end_ns <= lo || w.start_ns >= hi) continue;
    const std::string& name = *w.name;
    const std::string c = kernel_category(name);
    auto& cat = cats[c];
    cat.category = c;
    cat.ms_per_step += w.ns;
    cat.kernels_per_step += 1;
    auto& kn = by_name[name];
    kn.name = name;
    kn.category = c;
    kn.calls_per_step += 1;
    kn.ms_per_step += w.ns;
    kernel_ns += w.ns;
    ++count;
  }
  const auto [busy_ns, gaps] = union_length(busy, lo, hi);
  const double window_ns = static_cast<double>(hi - lo);
  p.wall_ms_per_step = window_ns / 1e6 / steps;
  p.busy_ms_per_step = static_cast<double>(busy_ns) / 1e6 / steps;
  p.idle_ms_per_step = std::max(0.0, window_ns - static_cast<double>(busy_ns)) / 1e6 / steps;
  p.busy_fraction = window_ns > 0 ? static_cast<double>(busy_ns) / window_ns : 0.0;
  if (in.timed_step_ms && *in.timed_step_ms > 0) {
    p.timed_step_ms = in.timed_step_ms;
    p.busy_fraction_of_timed_step = std::min(1.0, p.busy_ms_per_step / *in.timed_step_ms);
  }
  p.kernels_per_step = static_cast<double>(count) / steps;
  p.gaps_per_step = static_cast<double>(gaps) / steps;
  if (device_work) p.idle_gaps = idle_gaps(work, lo, hi, steps, 5);
  for (const auto& e : events) {
    if (e.kind == ProfileEvent::Kind::kLaunchApi && e.start_ns >= lo && e.start_ns < hi) {
      p.launch_api_ms_per_step += static_cast<double>(e.end_ns - e.start_ns) / 1e6 / steps;
    }
  }

  double matrix_ns = 0, gemm_ns = 0, attention_ns = 0;
  for (const auto& [id, name] : kernel_categories()) {
    const auto it = cats.find(id);
    if (it == cats.end()) continue;
    ProfileCategory c = it->second;
    if (is_matrix_category(id)) matrix_ns += c.ms_per_step;
    if (id == "gemm_conv" || id == "gemm_fp8") gemm_ns += c.ms_per_step;
    if (id == "attention") attention_ns = c.ms_per_step;
    c.fraction = kernel_ns > 0 ? c.ms_per_step / kernel_ns : 0.0;
    c.ms_per_step /= 1e6 * steps;
    c.kernels_per_step /= steps;
    p.categories.push_back(c);
  }
  std::vector<ProfileKernel> all;
  for (auto& [name, k] : by_name) {
    k.fraction = kernel_ns > 0 ? k.ms_per_step / kernel_ns : 0.0;
    k.mean_us = k.calls_per_step > 0 ? k.ms_per_step / k.calls_per_step / 1e3 : 0.0;
    k.ms_per_step /= 1e6 * steps;
    k.calls_per_step /= steps;
    k.name = short_kernel_name(k.name);
    all.push_back(k);
  }
  std::sort(all.begin(), all.end(), [](const ProfileKernel& a, const ProfileKernel& b) {
    return std::tie(b.ms_per_step, a.name) < std::tie(a.ms_per_step, b.name);
  });
  if (all.size() > in.top_kernels) all.resize(in.top_kernels);
  p.top_kernels = std::move(all);

  if (in.model_flops_per_step > 0 && matrix_ns > 0) {
    p.matrix_tflops = in.model_flops_per_step * steps / (matrix_ns / 1e9) / 1e12;
    if (in.peak_tflops && *in.peak_tflops > 0) p.matrix_peak_fraction = *p.matrix_tflops / *in.peak_tflops;
    const double attention = std::min(in.attention_flops_per_step, in.model_flops_per_step);
    if (attention > 0 && attention_ns > 0 && gemm_ns > 0) {
      p.attention_tflops = attention * steps / (attention_ns / 1e9) / 1e12;
      p.gemm_tflops = (in.model_flops_per_step - attention) * steps / (gemm_ns / 1e9) / 1e12;
    }
  }
  return p;
}

std::vector<ProfileEvent> events_from_chrome_trace(const nlohmann::json& trace) {
  const nlohmann::json* list = &trace;
  if (trace.is_object()) {
    const auto it = trace.find("traceEvents");
    if (it == trace.end() || !it->is_array()) throw std::runtime_error("not a Chrome trace: no \"traceEvents\" array");
    list = &*it;
  } else if (!trace.is_array()) {
    throw std::runtime_error("not a Chrome trace: neither an object with \"traceEvents\" nor an array of events");
  }
  std::vector<ProfileEvent> out;
  for (const auto& e : *list) {
    if (!e.is_object() || e.value("ph", "") != "X") continue;
    const auto ts = e.find("ts"), dur = e.find("dur"), name = e.find("name"), cat = e.find("cat");
    if (ts == e.end() || dur == e.end() || name == e.end() || cat == e.end() || !ts->is_number() ||
        !dur->is_number() || !name->is_string() || !cat->is_string()) {
      continue;
    }
    ProfileEvent p;
    p.name = name->get<std::string>();
    const std::string c = cat->get<std::string>();
    if (c == "kernel") {
      p.kind = ProfileEvent::Kind::kKernel;
    } else if (c == "gpu_memcpy") {
      p.kind = ProfileEvent::Kind::kMemcpy;
    } else if (c == "gpu_memset") {
      p.kind = ProfileEvent::Kind::kMemset;
    } else if (c == "cpu_op") {
      p.kind = ProfileEvent::Kind::kCpuOp;
    } else if (c == "user_annotation" && is_step_marker(p.name)) {
      p.kind = ProfileEvent::Kind::kStep;
    } else if ((c == "cuda_runtime" || c == "cuda_driver") && is_launch_call(p.name)) {
      p.kind = ProfileEvent::Kind::kLaunchApi;
    } else {
      continue;
    }
    const double start_us = ts->get<double>(), dur_us = dur->get<double>();
    // Bounded so that every end, and the distance between any two instants, fits an int64 in ns: starts from -1e15
    // to 4e15 us (unix-epoch microseconds are 1.8e15 now; 4e15 is the year 2096), durations up to 1e15 us (31
    // years), so ends stay within 5e18 ns and the widest window within 6e18 ns (int64 holds 9.2e18).
    if (!std::isfinite(start_us) || !std::isfinite(dur_us) || dur_us < 0 || dur_us > 1e15 || start_us < -1e15 ||
        start_us > 4e15) {
      continue;
    }
    p.start_ns = std::llround(start_us * 1000.0);
    p.end_ns = p.start_ns + std::llround(dur_us * 1000.0);
    const auto tid = e.find("tid");
    if (tid != e.end() && tid->is_number_integer()) p.lane = tid->get<int64_t>();
    out.push_back(std::move(p));
  }
  return out;
}

int64_t count_steps(const std::vector<ProfileEvent>& events) {
  return std::count_if(events.begin(), events.end(),
                       [](const ProfileEvent& e) { return e.kind == ProfileEvent::Kind::kStep; });
}

}  // namespace gpubench
