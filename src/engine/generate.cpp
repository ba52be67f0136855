// mode: generate: a prompt, then new tokens one at a time, greedy, over a static KV cache; every timed generation is
// one epoch of the record (docs/generate.md).

#include "generate.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>

#include "copy_rate.h"
#include "cuda_graph.h"
#include "decode/decode_ops.h"
#include "gpubench/core/analysis/bottleneck.hpp"
#include "gpubench/core/analysis/identity.hpp"
#include "gpubench/core/check.hpp"
#include "gpubench/core/record/host_activity.hpp"
#include "gpubench/core/record/stats.hpp"
#include "models/decoder.h"
#include "precision.h"
#include "host_clock.h"
#include "step_timer.h"

namespace gpubench::engine {

namespace {

/// Positions per attention window: a decode step at position p attends to the first multiple of this above p (one
/// CUDA graph per window), so its attention reads at most this many unused positions.
constexpr int64_t kWindowStep = 64;

at::ScalarType cache_type(const std::string& requested, const std::optional<at::ScalarType>& weights) {
  if (requested == "bf16") return at::kBFloat16;
  if (requested == "fp16") return at::kHalf;
  if (requested == "fp32") return at::kFloat;
  return weights.value_or(at::kFloat);
}

std::string type_name(at::ScalarType t) {
  return t == at::kBFloat16 ? "bf16" : t == at::kHalf ? "fp16" : t == at::kFloat ? "fp32" : c10::toString(t);
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return percentile_sorted(v, 50);
}

class GenerateRun {
 public:
  GenerateRun(const TrainingPlan& plan, Workload& workload, RunObserver& observer, RunRecord& record)
      : plan_(plan),
        s_(plan.scenario),
        workload_(workload),
        observer_(observer),
        record_(record),
        dev_(plan.device.device),
        batch_(*plan.scenario.batch_size),
        prompt_(plan.scenario.prompt_tokens.value_or(512)),
        fresh_(plan.scenario.new_tokens.value_or(128)),
        fused_(plan.scenario.fused_kernels()) {}

  void run() {
    prepare();
    warm_up();
    capture_prefill();
    capture_graphs();
    measure_bandwidth();
    timed_generations();
    measure_prefill_forward();
    finish();
  }

 private:
  void prepare() {
    observer_.on_phase("preparing model, prompts and the KV cache on " + plan_.device.id);
    gen_ = workload_.generator();
    GPUBENCH_CHECK(gen_ != nullptr, "the resolver lets only decoders generate");
    module_ = workload_.module();
    module_->to(dev_);
    module_->eval();
    // The weights in the precision's type, as a half-precision deployment loads them, and no autocast: every operation
    // runs in that type (transformers' generate on a bf16 model does the same), with no cast kernels per token.
    if (plan_.precision.autocast) module_->to(*plan_.precision.autocast);
    c10::InferenceMode no_autograd;
    const at::ScalarType kv = cache_type(s_.kv_cache_dtype, plan_.precision.autocast);
    gen_->allocate(batch_, prompt_ + fresh_, at::TensorOptions().device(dev_).dtype(kv));
    at::Generator g = at::globalContext().defaultGenerator(dev_);
    {
      std::lock_guard<std::mutex> lock(g.mutex());
      g.set_current_seed(s_.seed);
    }
    const auto ids = at::TensorOptions().device(dev_).dtype(at::kLong);
    prompts_ = at::randint(0, gen_->vocab(), {batch_, prompt_}, g, ids);
    token_ = at::zeros({batch_, 1}, ids);
    pos_ = at::zeros({1}, ids);
    out_ = at::zeros({batch_, fresh_}, ids);
    for (const auto& p : module_->parameters()) weight_bytes_ += p.numel() * static_cast<int64_t>(p.element_size());
    kv_bytes_ = gen_->cache_bytes();
    kv_per_position_ = kv_bytes_ / std::max<int64_t>(1, batch_ * (prompt_ + fresh_));
    graphs_wanted_ = backend_of(plan_.device).has(Capability::kGraphCapture) && (s_.graph || !s_.is_set("graph"));
    record_.execution.graph_requested = graphs_wanted_;
    record_.execution.optimizer_implementation = "none";
    describe("generate: a " + std::to_string(prompt_) + "-token prompt prefilled in one forward, then " +
         std::to_string(fresh_) + " tokens, greedy (argmax), one per step; KV cache " + type_name(kv) + ", " +
         std::to_string(kv_bytes_ >> 20) + " MiB for " + std::to_string(batch_) + " x " + std::to_string(prompt_ + fresh_) +
         " positions; weights " + std::to_string(weight_bytes_ >> 20) + " MiB");
    timer_ = make_step_timer(plan_.device);
    record_.notes.push_back(std::string("token times: ") + timer_->method());
    record_.notes.push_back(std::string("decode attention: ") +
                            (fused_ && dev_.is_cuda() ? "gpubench's split kernel where it serves (execution.fusions: "
                                                        "decode_attention), else "
                                                      : "") +
                            (gen_->flash_decode() ? "FlashAttention's variable-length kernel over the keys in use"
                                                  : "SDPA over the attention window with a mask of the keys in use"));
  }

  /// The prompt's forward: cache positions 0..P-1 and the first new token (its argmax) in the token buffer.
  void prefill() {
    c10::InferenceMode no_autograd;
    AutocastScope autocast(dev_.type(), std::nullopt);  // the weights are already in the autocast type
    const at::Tensor next = gen_->prefill(prompts_).argmax(-1, /*keepdim=*/true);
    token_.copy_(next);
    out_.narrow(1, 0, 1).copy_(next);
    pos_.fill_(prompt_);
  }

  /// One new token: the token at device position pos_ goes in, the next one comes out (argmax), the position moves
  /// on. Everything stays on the device, so a captured step replays as is.
  at::Tensor decode_step(int64_t window) {
    c10::InferenceMode no_autograd;
    AutocastScope autocast(dev_.type(), std::nullopt);
    if (fused_ && gen_->decode_greedy({token_, pos_, out_, prompt_ - 1}, window)) return token_;
    const at::Tensor logits = gen_->decode(token_, pos_, window);
    const at::Tensor next = fused_ ? fused::decode_argmax(logits) : logits.argmax(-1, /*keepdim=*/true);
    out_.index_copy_(1, pos_ - (prompt_ - 1), next);
    token_.copy_(next);
    pos_.add_(1);
    return next;
  }

  /// The attention window of the step that feeds position `p`.
  int64_t window_for(int64_t p) const { return std::min(prompt_ + fresh_, (p / kWindowStep + 1) * kWindowStep); }

  /// One whole generation, eager or with the captured prefill and steps; a mark after the first token and after each
  /// next one.
  void generate_once(bool timed) {
    if (timed) timer_->begin_epoch(fresh_);
    if (prefill_graph_) {
      prefill_graph_->replay();
    } else {
      prefill();
    }
    if (timed) timer_->mark();
    for (int64_t i = 1; i < fresh_; ++i) {
      const int64_t window = window_for(prompt_ + i - 1);
      const auto g = graphs_.find(window);
      if (g != graphs_.end()) {
        g->second->replay();
      } else {
        decode_step(window);
      }
      if (timed) timer_->mark();
    }
  }

  void warm_up() {
    const int64_t n = std::max<int64_t>(1, s_.warmup_steps.value_or(1));
    observer_.on_phase("warm-up (" + std::to_string(n) + " untimed generation" + (n > 1 ? "s" : "") + ")");
    warm_t0_ = Clock::now();
    for (int64_t i = 0; i < n; ++i) generate_once(false);
    synchronize(plan_.device);
  }

  /// The prompt's forward, its cache writes and the first token (prefill()) as one CUDA graph, captured after the eager
  /// warm-up and replayed by every generation: eager, the time to first token is mostly the host's few hundred
  /// launches (a 512-token TinyLlama prefill is ~2 ms of GPU work). The prompts stay where they are, so a replay
  /// prefills them again. kernel_options.prefill_graph: false keeps it eager, to measure it; a failed capture (e.g. out of memory
  /// for the graph's own pool at a large batch) falls back to eager, said in the notes.
  void capture_prefill() {
    if (!graphs_wanted_ || !cuda_graphs_compiled()) return;
    if (!s_.kernel_options.prefill_graph) {
      describe("prefill: eager (kernel_options.prefill_graph: false)");
      return;
    }
    observer_.on_phase("capturing the prefill in a CUDA graph");
    try {
      prefill_graph_ = capture_step(
          [this] {
            prefill();
            return token_;
          },
          1);
      describe("prefill: one CUDA graph (the prompt's forward, its cache writes and the first token), captured once "
               "and replayed by every generation");
    } catch (const std::exception& e) {
      prefill_graph_.reset();
      release_cached_memory(plan_.device);
      note("prefill not captured in a CUDA graph (" + first_line(e.what()) + "); prefilling eager");
    }
  }

  /// One CUDA graph of the decode step per attention window, captured after the eager warm-up.
  void capture_graphs() {
    if (!graphs_wanted_) return;
    if (fresh_ < 2) {  // no decode step: the prefill is the whole generation
      if (prefill_graph_) record_.execution.mode = "cuda_graph";
      return;
    }
    std::string why = cuda_graphs_compiled() ? "" : "this build has no CUDA graphs";
    if (why.empty()) {
      observer_.on_phase("capturing the decode step in CUDA graphs (one per " + std::to_string(kWindowStep) +
                         "-position attention window)");
      try {
        for (int64_t p = prompt_; p < prompt_ + fresh_ - 1; ++p) {
          const int64_t window = window_for(p);
          if (graphs_.count(window)) continue;
          // The side-stream warm-up runs the step for real: positions from the first decode one, within the cache.
          {
            c10::InferenceMode no_autograd;
            pos_.fill_(prompt_);
          }
          const int warmup = static_cast<int>(std::min<int64_t>(3, fresh_ - 1));
          graphs_[window] = capture_step([this, window] { return decode_step(window); }, warmup);
        }
      } catch (const std::exception& e) {
        graphs_.clear();
        why = "capture failed: " + first_line(e.what());
      }
    }
    if (!graphs_.empty()) {
      record_.execution.mode = "cuda_graph";
      return;
    }
    record_.execution.graph_fallback = why;
    note("CUDA graph requested but not used (" + why + "); decoding eager");
  }

  /// The device's copy rate (copy_rate.h): what a memory-bound decode step can read at most.
  void measure_bandwidth() {
    c10::InferenceMode no_autograd;
    bandwidth_ = measure_copy_rate_gbs(plan_.device, dev_.is_cpu() ? (int64_t{256} << 20) : (int64_t{1} << 30)) * 1e9;
  }

  /// The prompt's forward alone, as mode: inference runs it (every position's logits, no cache, no argmax): what the
  /// time to first token is held against, run as the prefill ran (captured in a CUDA graph where the prefill was,
  /// so that the ratio compares the same kind of launch). Median of three, after the timed generations; skipped where
  /// it does not fit in memory (its logits for every position are the largest tensor of all).
  void measure_prefill_forward() {
    if (record_.status != RunStatus::kOk || !record_.summary.stopped_by.empty()) return;
    try {
      Batch b;
      b.inputs.push_back(prompts_);
      const auto forward = [this, &b] {
        c10::InferenceMode no_autograd;
        AutocastScope autocast(dev_.type(), std::nullopt);
        return workload_.infer(b);
      };
      std::unique_ptr<StepGraph> graph;
      if (prefill_graph_) {
        try {
          graph = capture_step(forward, 1);
        } catch (const c10::OutOfMemoryError&) {
          throw;
        } catch (const std::exception& e) {
          note("the prompt's forward alone not captured (" + first_line(e.what()) + "): timed eager");
        }
      }
      std::vector<double> ms;
      for (int i = 0; i < 3; ++i) {
        synchronize(plan_.device);
        const auto t0 = Clock::now();
        if (graph) {
          graph->replay();
        } else {
          forward();
        }
        synchronize(plan_.device);
        ms.push_back(seconds_since(t0) * 1e3);
      }
      prefill_forward_ms_ = median_of(ms);
    } catch (const c10::OutOfMemoryError&) {
      release_cached_memory(plan_.device);
      note("the prompt's forward alone (every position's logits) does not fit in memory: not measured");
    }
  }

  void timed_generations() {
    record_.summary.warmup_steps = s_.warmup_steps.value_or(1);
    record_.summary.warmup_seconds = seconds_since(warm_t0_);
    for (int64_t e = 0; e < s_.epochs; ++e) {
      if (plan_.stop_requested != nullptr && plan_.stop_requested->load()) {
        record_.summary.stopped_by = "interrupt";
        break;
      }
      if (s_.time_budget_s && measured_s_ >= *s_.time_budget_s) {
        record_.summary.stopped_by = "time_budget";
        break;
      }
      observer_.on_phase("generation " + std::to_string(e + 1) + "/" + std::to_string(s_.epochs));
      EpochRecord ep = timed_generation(e);
      record_.epochs.push_back(ep);
      observer_.on_epoch(ep);
      if (record_.status != RunStatus::kOk) break;
    }
  }

  EpochRecord timed_generation(int64_t e) {
    reset_memory_peaks(plan_.device);
    synchronize(plan_.device);
    observer_.on_epoch_begin(e);
    const HostSample host0 = sample_host();
    const auto t0 = Clock::now();
    generate_once(true);
    synchronize(plan_.device);
    const double seconds = seconds_since(t0);
    const std::optional<HostActivity> host = host_activity_between(host0, sample_host());
    measured_s_ += seconds;
    const std::optional<EpochTelemetry> telemetry = observer_.on_epoch_end(e, batch_ * fresh_);
    const std::vector<double> ms = timer_->end_epoch_ms();  // [time to first token, then each next token's]
    EpochRecord ep;
    ep.index = e;
    ep.steps = fresh_;
    ep.samples = batch_ * fresh_;
    ep.seconds = seconds;
    ep.samples_per_s = seconds > 0 ? static_cast<double>(ep.samples) / seconds : 0;
    const double ttft = ms.empty() ? seconds * 1e3 : ms.front();
    const std::vector<double> itl(ms.begin() + (ms.empty() ? 0 : 1), ms.end());
    ep.step_time = summarize_step_times(itl);
    for (double v : itl) ep.step_times_ms.push_back(std::round(v * 1e4) / 1e4);
    all_itl_.insert(all_itl_.end(), itl.begin(), itl.end());
    const DeviceMemoryPeaks peaks = read_memory_peaks(plan_.device);
    ep.peak_allocated_bytes = with_graph_working_set(peaks.allocated_bytes, prefill_graph_.get());
    for (const auto& [window, graph] : graphs_) {
      ep.peak_allocated_bytes = with_graph_working_set(ep.peak_allocated_bytes, graph.get());
    }
    ep.peak_reserved_bytes = peaks.reserved_bytes;
    if (dev_.is_cpu()) ep.peak_host_rss_bytes = host_peak_rss_bytes();
    ep.complete = true;
    ep.host = host;
    ep.telemetry = telemetry;
    const double decode_s = std::accumulate(itl.begin(), itl.end(), 0.0) / 1e3;
    const double prefill_rate = ttft > 0 ? static_cast<double>(batch_ * prompt_) / (ttft / 1e3) : 0;
    const double decode_rate = decode_s > 0 ? static_cast<double>(batch_ * (fresh_ - 1)) / decode_s : 0;
    ttft_.push_back(ttft);
    prefill_rate_.push_back(prefill_rate);
    if (decode_rate > 0) decode_rate_.push_back(decode_rate);
    e2e_ms_.push_back(seconds * 1e3);
    auto& m = ep.metrics;
    set_metric(m, Metric{"ttft_ms", "time to first token", "ms", Better::kLower, ttft});
    set_metric(m, Metric{"prefill_tokens_per_s", "prefill", "tokens/s", Better::kHigher, prefill_rate});
    if (decode_rate > 0) {
      set_metric(m, Metric{"decode_tokens_per_s", "decode", "tokens/s", Better::kHigher,
                           decode_rate});
      set_metric(m, Metric{"tpot_ms", "time per output token (decode)", "ms", Better::kLower, decode_s * 1e3 / static_cast<double>(fresh_ - 1)});
    }
    set_metric(m, Metric{"e2e_latency_ms", "end-to-end latency", "ms", Better::kLower, seconds * 1e3});
    // Non-finite logits give garbage argmaxes, not NaNs: a token outside the vocabulary says the model broke.
    const at::Tensor bad = (out_ < 0).logical_or(out_ >= gen_->vocab()).any();
    if (bad.item<bool>()) {
      record_.status = RunStatus::kNan;
      record_.reason = "generation " + std::to_string(e + 1) + " produced tokens outside the vocabulary";
    }
    note_tokens(e);
    return ep;
  }

  /// The first timed generation's tokens in the notes (sequence 0's first ones and a digest of all: runs of other
  /// kernel settings on the same prompts must agree); a later generation that differs from it (the same prompts,
  /// greedy) is noted too: a kernel is not deterministic.
  void note_tokens(int64_t e) {
    const at::Tensor all = out_.to(at::kCPU).contiguous();
    const int64_t* t = all.data_ptr<int64_t>();
    // over the tokens' int64 values as they lie in memory
    const std::string digest = fnv1a_hex({reinterpret_cast<const char*>(t), all.numel() * sizeof(int64_t)});
    if (e == 0) {
      tokens_digest_ = digest;
      std::string first;
      for (int64_t i = 0; i < std::min<int64_t>(8, fresh_); ++i) first += (i ? ", " : "") + std::to_string(t[i]);
      record_.notes.push_back("generated tokens: sequence 0 begins [" + first + "]; FNV-1a digest of all " +
                              std::to_string(all.numel()) + " new tokens " + digest);
    } else if (digest != tokens_digest_ && !tokens_differ_) {
      tokens_differ_ = true;
      record_.notes.push_back("generation " + std::to_string(e + 1) +
                              "'s tokens differ from the first timed generation's (the same prompts, greedy): the "
                              "decode step is not deterministic");
    }
  }

  void finish() {
    summarize_run(record_, all_itl_);
    if (fused_ && !gen_->greedy_note().empty()) record_.notes.push_back("decode step: " + gen_->greedy_note());
    if (record_.summary.stopped_by == "interrupt" && record_.status == RunStatus::kOk) {
      record_.status = RunStatus::kInterrupted;
      record_.reason = "interrupted (SIGINT/SIGTERM) after " + std::to_string(record_.epochs.size()) + " generations";
    }
    auto& m = record_.summary.metrics;
    const auto spread = [&m](const std::string& tag, const std::string& name, const std::string& unit, Better better,
                             std::vector<double> v) {
      if (v.empty()) return;
      std::sort(v.begin(), v.end());
      const StepTimeStats st = summarize_step_times(v);
      set_metric(m, Metric{tag, name + " (median of generations)", unit, better, percentile_sorted(v, 50)});
      set_metric(m, Metric{tag + "_p90", name + " p90", unit, better, percentile_sorted(v, 90)});
      set_metric(m, Metric{tag + "_p99", name + " p99", unit, better, percentile_sorted(v, 99)});
      set_metric(m, Metric{tag + "_stdev", name + " stdev over generations", unit, Better::kLower, st.stdev_ms});
    };
    spread("prefill_tokens_per_s", "prefill", "tokens/s", Better::kHigher, prefill_rate_);
    spread("decode_tokens_per_s", "decode", "tokens/s", Better::kHigher, decode_rate_);
    spread("ttft_ms", "time to first token", "ms", Better::kLower, ttft_);
    spread("e2e_latency_ms", "end-to-end latency", "ms", Better::kLower, e2e_ms_);
    // llama-bench's names: pp<P> and tg<N> tokens/s, and pg<P>,<N> the whole generation's (prompt + new tokens).
    const std::string pp = "pp" + std::to_string(prompt_), tg = "tg" + std::to_string(fresh_);
    if (!prefill_rate_.empty()) {
      set_metric(m, Metric{pp + "_tokens_per_s", pp + " (llama-bench: prompt processing)", "tokens/s", Better::kHigher,
                           median_of(prefill_rate_)});
    }
    if (!decode_rate_.empty()) {
      set_metric(m, Metric{tg + "_tokens_per_s", tg + " (llama-bench: text generation)", "tokens/s", Better::kHigher,
                           median_of(decode_rate_)});
    }
    if (!e2e_ms_.empty()) {
      set_metric(m, Metric{"pg" + std::to_string(prompt_) + "_" + std::to_string(fresh_) + "_tokens_per_s",
                           "pg (llama-bench: prompt and generation together)", "tokens/s", Better::kHigher,
                           static_cast<double>(batch_ * (prompt_ + fresh_)) / (median_of(e2e_ms_) / 1e3)});
    }
    if (!all_itl_.empty()) {
      std::vector<double> v = all_itl_;
      std::sort(v.begin(), v.end());
      for (const int q : {50, 90, 99}) {
        set_metric(m, Metric{"itl_p" + std::to_string(q) + "_ms", "inter-token latency p" + std::to_string(q), "ms",
                             Better::kLower, percentile_sorted(v, q)});
      }
      set_metric(m, Metric{"tpot_ms", "time per output token (decode, mean)", "ms", Better::kLower,
                           std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size())});
    }
    if (prefill_forward_ms_ > 0 && !ttft_.empty()) {
      set_metric(m, Metric{"prefill_forward_ms", "the prompt's forward alone (all positions' logits)", "ms",
                           Better::kLower, prefill_forward_ms_});
      set_metric(m, Metric{"ttft_over_prefill_forward", "time to first token / the prompt's forward alone", "",
                           Better::kLower, median_of(ttft_) / prefill_forward_ms_});
    }
    set_metric(m, Metric{"kv_cache_bytes", "KV cache", "bytes", Better::kNeither, static_cast<double>(kv_bytes_)});
    if (record_.summary.peak_allocated_bytes && *record_.summary.peak_allocated_bytes > 0) {
      set_metric(m, Metric{"kv_cache_share", "KV cache share of peak memory", "fraction", Better::kNeither,
                           static_cast<double>(kv_bytes_) / static_cast<double>(*record_.summary.peak_allocated_bytes)});
    }
    if (record_.summary.joules_per_sample) {
      set_metric(m, Metric{"joules_per_output_token", "energy per output token", "J", Better::kLower,
                           *record_.summary.joules_per_sample});
    }
    roofline();
  }

  /// What a decode step must read (every weight once, and the KV cache up to its position: at the mean position of
  /// the decode steps) against the measured copy rate, and its FLOPs against the device's dense peak where the device
  /// table has it. The verdict (bottleneck.hpp) follows the larger bound and how close the run came to it.
  void roofline() {
    if (decode_rate_.empty() || bandwidth_ <= 0) return;
    auto& m = record_.summary.metrics;
    const double mean_context = static_cast<double>(prompt_) + static_cast<double>(fresh_) / 2.0;
    const double step_bytes = static_cast<double>(weight_bytes_) +
                              static_cast<double>(kv_per_position_ * batch_) * mean_context;
    const double memory_ms = step_bytes / bandwidth_ * 1e3;
    const double step_flops = static_cast<double>(batch_) * gen_->flops_per_token(static_cast<int64_t>(mean_context));
    const std::optional<double> peak = record_.summary.peak_tflops;
    const double compute_ms = peak && *peak > 0 ? step_flops / (*peak * 1e12) * 1e3 : 0;
    const double measured_ms = static_cast<double>(batch_) / median_of(decode_rate_) * 1e3;
    const double bound_ms = std::max(memory_ms, compute_ms);
    set_metric(m, Metric{"copy_bandwidth_gb_per_s", "measured copy rate (read + write)", "GB/s", Better::kHigher,
                         bandwidth_ / 1e9});
    set_metric(m, Metric{"decode_step_bytes", "bytes a decode step reads (weights + KV cache)", "bytes",
                         Better::kNeither, step_bytes});
    set_metric(m, Metric{"decode_step_ms", "decode step (median generation)", "ms", Better::kLower, measured_ms});
    set_metric(m, Metric{"decode_memory_bound_ms", "decode step at the copy rate", "ms", Better::kNeither, memory_ms});
    if (compute_ms > 0) {
      set_metric(m, Metric{"decode_compute_bound_ms", "decode step at the dense peak", "ms", Better::kNeither,
                           compute_ms});
    }
    set_metric(m, Metric{"decode_bound_tokens_per_s", "decode bound (roofline)", "tokens/s", Better::kHigher,
                         static_cast<double>(batch_) / (bound_ms / 1e3)});
    set_metric(m, Metric{kDecodeBoundFractionTag, "decode: fraction of the roofline bound reached", "fraction",
                         Better::kHigher, bound_ms / measured_ms});
  }

  void note(const std::string& msg) {
    record_.notes.push_back(msg);
    observer_.on_note(msg);
  }
  /// A fact about the run (not a warning): into the notes, and said as a phase.
  void describe(const std::string& msg) {
    record_.notes.push_back(msg);
    observer_.on_phase(msg);
  }

  const TrainingPlan& plan_;
  const Scenario& s_;
  Workload& workload_;
  RunObserver& observer_;
  RunRecord& record_;
  const at::Device dev_;
  const int64_t batch_, prompt_, fresh_;
  const bool fused_;  ///< kernels: fused: the greedy choice by fused::decode_argmax too

  TextGenerator* gen_ = nullptr;
  std::shared_ptr<torch::nn::Module> module_;
  at::Tensor prompts_, token_, pos_, out_;
  int64_t weight_bytes_ = 0, kv_bytes_ = 0, kv_per_position_ = 0;
  bool graphs_wanted_ = false;
  std::unique_ptr<StepGraph> prefill_graph_;              ///< capture_prefill's, where it was captured
  std::map<int64_t, std::unique_ptr<StepGraph>> graphs_;  ///< by attention window
  std::unique_ptr<StepTimer> timer_;
  double bandwidth_ = 0, prefill_forward_ms_ = 0;
  Clock::time_point warm_t0_;
  double measured_s_ = 0;
  std::vector<double> all_itl_, ttft_, prefill_rate_, decode_rate_, e2e_ms_;
  std::string tokens_digest_;
  bool tokens_differ_ = false;
};

}  // namespace

void generate(const TrainingPlan& plan, Workload& workload, RunObserver& observer, RunRecord& record) {
  GenerateRun(plan, workload, observer, record).run();
}

}  // namespace gpubench::engine
