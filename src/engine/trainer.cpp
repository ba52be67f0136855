#include "trainer.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <torch/autograd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>

#include "cuda_graph.h"
#include "decode_calibration.h"
#include "gpubench/core/analysis/bottleneck.hpp"
#include "gpubench/core/check.hpp"
#include "gpubench/core/record/host_activity.hpp"
#include "gpubench/core/record/stats.hpp"
#include "gpubench/core/scenario/run_mode.hpp"
#include "host_clock.h"
#include "input_pipeline.h"
#include "optimizers.h"
#include "profiler.h"
#include "step_timer.h"
#include "training_step.h"

namespace gpubench::engine {

namespace {

bool stop_requested(const TrainingPlan& plan) {
  return plan.stop_requested != nullptr && plan.stop_requested->load(std::memory_order_relaxed);
}

void to_channels_last(torch::nn::Module& m) {
  torch::NoGradGuard no_grad;
  for (auto& p : m.parameters()) {
    if (p.dim() == 4) p.set_data(p.data().contiguous(at::MemoryFormat::ChannelsLast));
  }
}

/// Every machine of the job, from each rank's own description (a synchronising collective: every rank calls it).
std::vector<NodeRecord> describe_nodes(Communicator& comm, const EnvironmentRecord& e) {
  NodeRecord mine;
  mine.hostname = e.hostname;
  mine.address = local_address_towards(comm.info().master_addr);
  mine.ranks = {comm.rank()};
  mine.os = e.os;
  mine.cpu_model = e.cpu_model;
  mine.cpu_cores = e.cpu_cores;
  mine.host_memory_bytes = e.host_memory_bytes.value_or(0);
  mine.device_name = e.device_name;
  mine.libtorch_version = e.libtorch_version;
  mine.gpubench_version = e.gpubench_version;
  std::vector<NodeRecord> per_rank;
  for (const std::string& text : comm.gather_text(nlohmann::json(mine).dump())) {
    per_rank.push_back(nlohmann::json::parse(text).get<NodeRecord>());
  }
  return nodes_of_ranks(per_rank);
}

/// Why a distributed run stops after an epoch; the largest code over the ranks wins, so all agree.
enum StopCode { kGoOn = 0, kBudget = 1, kInterrupt = 2, kNonFinite = 3 };

/// One training run, step by step: prepare -> warm up -> capture (graph mode) -> timed epochs -> finish. Each step
/// is a member function; the state they share is here, not in one long function.
class TrainingRun {
 public:
  TrainingRun(const TrainingPlan& plan, Workload& workload, RunObserver& observer, RunRecord& record)
      : plan_(plan),
        s_(plan.scenario),
        workload_(workload),
        observer_(observer),
        record_(record),
        dev_(plan.device.device),
        batch_size_(*plan.scenario.batch_size * plan.scenario.grad_accumulation),
        dist_(plan.comm != nullptr),
        inference_(run_mode(plan.scenario) == RunMode::kInference),
        world_(plan.comm != nullptr ? plan.comm->world_size() : 1),
        fault_(FaultInjection::from_spec(plan.scenario.fault_inject)) {}

  void run() {
    GPUBENCH_CHECK(s_.batch_size.has_value() && *s_.batch_size > 0, "the engine resolves batch_size before training");
    GPUBENCH_CHECK(s_.warmup_steps.has_value(), "the engine resolves warmup_steps before training");
    prepare();
    warm_up();
    capture_graph();
    calibrate_input();
    start_timing();
    timed_epochs();
    finish();
    profile();
  }

 private:
  /// Model, synthetic batch, optimizer and (multi-process) gradient buckets on the device.
  void prepare() {
    observer_.on_phase("preparing model and data on " + plan_.device.id);
    module_ = workload_.module();
    module_->to(dev_);
    if (plan_.channels_last) to_channels_last(*module_);
    if (inference_) {
      module_->eval();
      // Inference keeps its weights in the autocast type, as deployments load them (torch_dtype=bfloat16 in
      // transformers, float16 in diffusers' pipelines): no per-step weight casts. Autocast stays on for the inputs.
      if (plan_.precision.autocast) {
        module_->to(*plan_.precision.autocast);
        note(std::string("inference: weights held in ") + c10::toString(*plan_.precision.autocast) +
             " (as a half-precision pipeline loads them), autocast on");
      }
    } else {
      module_->train();
    }
    if (dist_) {
      // Every rank starts from rank 0's weights and buffers, as DDP does at construction.
      plan_.comm->broadcast(module_->parameters());
      plan_.comm->broadcast(module_->buffers());
    }
    // Synthetic data: one batch generated on the device and reused every step, as PyTorch's synthetic
    // benchmarks do. This times the training step, not an input pipeline.
    at::Generator gen = at::globalContext().defaultGenerator(dev_);
    {
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_current_seed(s_.seed + static_cast<uint64_t>(dist_ ? plan_.comm->rank() : 0));  // own data per rank
    }
    batch_ = inference_ ? workload_.make_inference_batch(batch_size_, at::TensorOptions().device(dev_), gen)
                        : workload_.make_batch(batch_size_, at::TensorOptions().device(dev_), gen);  // all micro-batches
    if (plan_.channels_last) {
      for (auto& t : batch_.inputs) {
        if (t.dim() == 4) t = t.contiguous(at::MemoryFormat::ChannelsLast);
      }
    }
    if (s_.data == "folder") {
      observer_.on_phase("scanning " + s_.data_path + " and starting the input pipeline");
      input_ = std::make_unique<InputPipeline>(s_, plan_.device, workload_, batch_size_,
                                               dist_ ? plan_.comm->rank() : 0, world_, plan_.channels_last,
                                               record_.notes, plan_.stop_requested);
      record_.data = input_->describe();
      if (s_.data_only) {
        record_.model.train_flops_per_sample = 0;
        record_.model.attention_flops_per_sample = 0;
        note("data_only: the input pipeline is timed alone (no model step); throughput is what it delivers");
      }
    }
    record_.execution.graph_requested = s_.graph;
    if (inference_) {
      record_.execution.optimizer_implementation = "none";
    } else {
      optimizer_ = make_optimizer(s_.optimizer, module_->parameters());
      record_.execution.optimizer_implementation = optimizer_->implementation();
      if (dist_) buckets_ = std::make_unique<GradientBuckets>(*plan_.comm, module_->parameters(), s_.ddp_bucket_mb);
    }
    if (dist_) {
      DistributedRecord d;
      d.world_size = plan_.comm->world_size();
      d.backend = plan_.comm->backend_name();
      d.launcher = plan_.comm->info().launcher;
      d.bucket_mb = s_.ddp_bucket_mb;
      d.buckets = buckets_ ? static_cast<int64_t>(buckets_->bucket_count()) : 0;  // inference all-reduces nothing
      const RankInfo& info = plan_.comm->info();
      d.rendezvous = info.master_addr + ":" + std::to_string(info.master_port);
      d.nodes = describe_nodes(*plan_.comm, record_.environment);
      record_.distributed = d;
    }
    if (inference_) {
      step_ = [this] {
        c10::InferenceMode no_autograd;
        AutocastScope autocast(dev_.type(), plan_.precision.autocast);
        return workload_.infer(batch_);
      };
    } else {
      runner_ = std::make_unique<StepRunner>(plan_, workload_, batch_, *optimizer_, buckets_.get());
      StepRunner& r = *runner_;
      step_ = [&r] { return r.run(); };
    }
    timer_ = make_step_timer(plan_.device);
    record_.notes.push_back(std::string("step times: ") + timer_->method());
  }

  /// cuDNN autotuning, allocator growth, lazy initialisation; not timed.
  void warm_up() {
    const int64_t warmup = *s_.warmup_steps;
    observer_.on_phase("warm-up (" + std::to_string(warmup) + " steps)");
    warm_t0_ = Clock::now();
    for (int64_t i = 0; i < warmup; ++i) {
      if (stop_requested(plan_)) break;
      feed_untimed(-1, i, warmup);
      if (!s_.data_only) step_();
      count_step();
      observer_.on_step(StepProgress{true, 0, 0, i + 1, warmup, batch_size_, seconds_since(warm_t0_)});
    }
  }

  /// Graph mode: the whole step captured once the eager warm-up has done cuDNN autotuning and the first optimizer
  /// step; a graph that cannot be used is recorded with why, and the run goes on eager.
  void capture_graph() {
    if (!s_.graph || s_.data_only || stop_requested(plan_)) return;
    std::string why = graph_unsupported_reason(plan_, optimizer_.get());
    if (why.empty()) {
      observer_.on_phase(inference_ ? "capturing the inference step in a CUDA graph"
                                     : "capturing the training step in a CUDA graph");
      try {
        graph_ = capture_step(step_, /*side_warmup=*/3);
      } catch (const std::exception& e) {
        why = "capture failed: " + first_line(e.what());
      }
    }
    if (graph_) {
      record_.execution.mode = "cuda_graph";
      return;
    }
    record_.execution.graph_fallback = why;
    const std::string msg = "CUDA graph requested but not used (" + why + "); running eager";
    record_.notes.push_back(msg);
    observer_.on_note(msg);
  }

  /// decode: auto on a CUDA device: the step, the workers and nvJPEG measured on this host, and the path chosen from
  /// them (decode_calibration.h); untimed, after the warm-up and the graph capture, so the step is the timed one.
  void calibrate_input() {
    if (!input_ || !input_->wants_calibration() || stop_requested(plan_)) return;
    observer_.on_phase("decode: auto: timing the step, the workers and nvJPEG on this host");
    CalibrationOptions o;
    if (!s_.data_only) {
      o.step = [this] {
        if (graph_) {
          graph_->replay();
        } else {
          step_();
        }
      };
    }
    o.same_steps_everywhere = dist_;
    o.stop = plan_.stop_requested;
    const data::DecodePlan p = calibrate_decode(*input_, batch_, plan_.device, o);
    record_.data = input_->describe();
    if (!p.decode.empty()) note(p.reason);
  }

  /// The device idle and every rank at the same point; the warm-up's figures recorded.
  void start_timing() {
    synchronize(plan_.device);
    if (dist_) plan_.comm->gather(0.0);  // all ranks start the first epoch together
    record_.summary.warmup_steps = *s_.warmup_steps;
    record_.summary.warmup_seconds = seconds_since(warm_t0_);
    take_skipped();
    // An epoch is dataset_size samples in total: with N ranks each takes 1/N of them (as DistributedSampler does).
    const int64_t epoch_samples = input_ ? input_->epoch_images() : s_.dataset_size;
    steps_per_epoch_ = std::max<int64_t>(1, epoch_samples / (batch_size_ * world_));
    losses_.reserve(static_cast<size_t>(steps_per_epoch_));
    // A sustained run (duration_s) trains whole epochs until its time is up; `epochs`, if set, is then a maximum.
    max_epochs_ = (duration_s() > 0 && !s_.is_set("epochs")) ? INT64_MAX : s_.epochs;
  }

  void timed_epochs() {
    const std::string of_epochs = max_epochs_ == INT64_MAX ? "" : "/" + std::to_string(max_epochs_);
    for (int64_t e = 0; e < max_epochs_; ++e) {
      if (!dist_ && stop_requested(plan_)) {
        record_.summary.stopped_by = "interrupt";
        break;
      }
      if (duration_s() > 0 && measured_s_ >= duration_s()) break;
      observer_.on_phase("epoch " + std::to_string(e + 1) + of_epochs);
      EpochRecord ep = timed_epoch(e);
      scan_losses(ep);
      if (dist_) agree_on_stopping(e);
      record_.epochs.push_back(ep);
      observer_.on_epoch(ep);
      fault_.maybe_fire_after_epoch(plan_.comm, e + 1);
      if (record_.status != RunStatus::kOk || !record_.summary.stopped_by.empty()) break;
    }
  }

  /// One epoch: the timed steps between two device synchronisations, then its record (times, memory, telemetry).
  EpochRecord timed_epoch(int64_t e) {
    reset_memory_peaks(plan_.device);
    losses_.clear();
    const double page_cache = input_ ? input_->page_cache() : -1;
    synchronize(plan_.device);
    observer_.on_epoch_begin(e);
    const HostSample host0 = sample_host();
    const auto t0 = Clock::now();
    // The pass starts inside the timed epoch, as a DataLoader iterator does: filling the pipeline is part of it.
    if (input_) input_->start_pass(e, steps_per_epoch_);
    timer_->begin_epoch(steps_per_epoch_);
    if (buckets_) buckets_->begin_epoch(steps_per_epoch_);
    const double budget = budget_s();
    int64_t done = 0;
    double last_elapsed = 0;
    while (done < steps_per_epoch_) {
      if (!dist_ && stop_requested(plan_)) {
        record_.summary.stopped_by = "interrupt";
        break;
      }
      if (input_) input_->feed(batch_);
      // A replay overwrites the graph's loss tensor, so each step keeps a copy (one small device copy, no sync).
      if (s_.data_only) {
      } else if (inference_) {
        last_output_ = graph_ ? graph_->replay() : step_();  // a replay rewrites the same tensor: no copy kept
      } else {
        losses_.push_back(graph_ ? graph_->replay().clone() : step_());
      }
      timer_->mark();
      ++done;
      count_step();
      const double elapsed = seconds_since(t0);
      observer_.on_step(StepProgress{false, e, max_epochs_ == INT64_MAX ? 0 : max_epochs_, done, steps_per_epoch_,
                                     batch_size_, elapsed});
      // The budget is kept, not overshot by a step: the next step is not begun if one more as long as the last would
      // pass it (a CPU step can be tens of seconds).
      const double step_s = elapsed - last_elapsed;
      last_elapsed = elapsed;
      if (!dist_ && budget > 0 && measured_s_ + elapsed + step_s > budget && done < steps_per_epoch_) {
        record_.summary.stopped_by = "time_budget";
        break;
      }
    }
    synchronize(plan_.device);
    double seconds = seconds_since(t0);
    const std::optional<HostActivity> host =
        host_activity_between(host0, sample_host(), dist_ ? plan_.comm->info().local_world_size : 1);
    const std::optional<EpochTelemetry> local_telemetry = observer_.on_epoch_end(e, done * batch_size_);
    if (dist_) {
      GPUBENCH_CHECK(record_.distributed.has_value(), "a multi-process run has a distributed record");
      // The epoch ends when its slowest rank does; every rank's time goes into the record.
      const std::vector<double> per_rank = plan_.comm->gather(seconds);
      record_.distributed->rank_epoch_seconds.push_back(per_rank);
      record_.distributed->rank_comm_wait_seconds.push_back(plan_.comm->gather(buckets_ ? buckets_->end_epoch_wait_seconds() : 0.0));
      seconds = *std::max_element(per_rank.begin(), per_rank.end());
    }
    measured_s_ += seconds;

    EpochRecord ep;
    ep.index = e;
    ep.steps = done;
    ep.samples = done * batch_size_ * world_;
    ep.seconds = seconds;
    ep.samples_per_s = seconds > 0 ? static_cast<double>(ep.samples) / seconds : 0.0;
    const std::vector<double> step_ms = timer_->end_epoch_ms();
    ep.step_time = summarize_step_times(step_ms);
    ep.step_times_ms.reserve(step_ms.size());
    for (double v : step_ms) ep.step_times_ms.push_back(std::round(v * 1e4) / 1e4);
    all_step_ms_.insert(all_step_ms_.end(), step_ms.begin(), step_ms.end());
    const DeviceMemoryPeaks peaks = read_memory_peaks(plan_.device);
    ep.peak_allocated_bytes = with_graph_working_set(peaks.allocated_bytes, graph_.get());
    ep.peak_reserved_bytes = peaks.reserved_bytes;
    if (dev_.is_cpu()) ep.peak_host_rss_bytes = host_peak_rss_bytes();
    ep.skipped_steps = take_skipped();
    ep.complete = done == steps_per_epoch_;
    ep.host = host;
    if (input_) record_input(ep, page_cache);
    if (dist_) {
      gather_rank_telemetry(*plan_.comm, local_telemetry, ep);
    } else {
      ep.telemetry = local_telemetry;
    }
    return ep;
  }

  /// The epoch's losses, read once after it (one device-to-host copy): first, last, and the first non-finite one,
  /// which ends the run with status nan.
  void scan_losses(EpochRecord& ep) {
    if (inference_) {
      scan_output(ep);
      return;
    }
    if (losses_.empty()) return;
    const at::Tensor l = at::stack(losses_).to(at::kCPU, at::kDouble);
    const double* v = l.data_ptr<double>();
    ep.loss_first = v[0];
    ep.loss_last = v[l.numel() - 1];
    for (int64_t i = 0; i < l.numel(); ++i) {
      if (!std::isfinite(v[i])) {
        record_.status = RunStatus::kNan;
        record_.reason = "loss became non-finite (" + describe_loss(v[i]) + ") at epoch " + std::to_string(ep.index + 1) +
                         ", step " + std::to_string(i + 1) + "; lower the learning rate or use bf16/fp32";
        ep.loss_last = v[i];
        return;
      }
    }
  }

  /// Inference has no loss: the epoch's last output is checked once (one reduction after the epoch) and a
  /// non-finite value ends the run with status nan (fp16 overflow, for one).
  void scan_output(const EpochRecord& ep) {
    if (!last_output_.defined() || at::isfinite(last_output_).all().item<bool>()) return;
    record_.status = RunStatus::kNan;
    record_.reason = "the model's output became non-finite in epoch " + std::to_string(ep.index + 1) +
                     " (its last batch); use bf16 or fp32";
  }

  /// Steps the fp16 loss scaler skipped since the last call (training only).
  int64_t take_skipped() { return runner_ ? runner_->take_skipped() : 0; }

  /// Multi-process runs stop together: each rank votes (go on, time budget, interrupt, non-finite loss) and the
  /// largest vote wins on every rank, so no rank waits in a collective the others never enter.
  void agree_on_stopping(int64_t e) {
    int code = kGoOn;
    if (record_.status == RunStatus::kNan) {
      code = kNonFinite;
    } else if (stop_requested(plan_)) {
      code = kInterrupt;
    } else if (budget_s() > 0 && measured_s_ >= budget_s() && e + 1 < max_epochs_) {
      code = kBudget;
    }
    double most = 0;
    for (double c : plan_.comm->gather(code)) most = std::max(most, c);
    const auto agreed = static_cast<StopCode>(most);  // the gathered codes are whole numbers
    if (agreed == kInterrupt) record_.summary.stopped_by = "interrupt";
    if (agreed == kBudget) record_.summary.stopped_by = "time_budget";
    if (agreed == kNonFinite && record_.status == RunStatus::kOk) {
      record_.status = RunStatus::kNan;
      record_.reason = "loss became non-finite on another rank in epoch " + std::to_string(e + 1);
    }
  }

  /// The slowest rank, the sustained-run note, the summary, and the interrupted status.
  void finish() {
    if (dist_) {
      std::vector<double> total(static_cast<size_t>(world_), 0.0);
      for (const auto& per_rank : record_.distributed->rank_epoch_seconds) {
        for (size_t r = 0; r < per_rank.size(); ++r) total[r] += per_rank[r];
      }
      record_.distributed->slowest_rank = static_cast<int>(std::max_element(total.begin(), total.end()) - total.begin());
    }
    if (duration_s() > 0) {
      record_.scenario.epochs = static_cast<int64_t>(record_.epochs.size());
      record_.notes.push_back("sustained run: " + std::to_string(record_.epochs.size()) + " epochs in " +
                              std::to_string(static_cast<int64_t>(measured_s_)) + " s (duration_s " +
                              std::to_string(static_cast<int64_t>(duration_s())) +
                              " s); scenario.epochs is the count run");
    }
    summarize_run(record_, all_step_ms_);
    if (inference_) summarize_latency();
    if (input_) summarize_input();
    if (record_.summary.stopped_by == "interrupt" && record_.status == RunStatus::kOk) {
      record_.status = RunStatus::kInterrupted;
      record_.reason = "interrupted (SIGINT/SIGTERM) after " + std::to_string(record_.summary.steps) +
                       " timed steps; completed epochs are kept";
    }
  }

  /// Inference: per-batch latency percentiles over all timed batches (the step times: one batch's end to the
  /// next's, batches back to back, on the device's clock where there is one).
  void summarize_latency() {
    if (all_step_ms_.empty()) return;
    std::vector<double> v = all_step_ms_;
    std::sort(v.begin(), v.end());
    auto& m = record_.summary.metrics;
    for (const int q : {50, 90, 99}) {
      set_metric(m, Metric{"latency_p" + std::to_string(q) + "_ms", "per-batch latency p" + std::to_string(q), "ms",
                           Better::kLower, percentile_sorted(v, q)});
    }
  }

  /// `--profile`: separate steps under the profiler after the timed epochs (so their figures carry no profiler
  /// overhead), summarised into the record. In a multi-process run every rank takes the steps (they all-reduce);
  /// rank 0 profiles them, as it writes the record.
  void profile() {
    if (!s_.profile || s_.data_only || record_.status != RunStatus::kOk || record_.summary.stopped_by == "interrupt" ||
        stop_requested(plan_)) {
      return;
    }
    const int64_t steps = s_.profile_steps;
    observer_.on_phase("profiling " + std::to_string(steps) + " more steps (not timed)");
    int64_t fed = 0;
    auto step = [this, &fed, steps] {
      feed_untimed(-1000000, fed++, steps + 1);
      if (graph_) {
        graph_->replay();
      } else {
        step_();
      }
    };
    if (dist_ && plan_.comm->rank() != 0) {
      for (int64_t i = 0; i < steps + 1; ++i) step();
      synchronize(plan_.device);
      return;
    }
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path dir = fs::temp_directory_path(ec);
    const std::string trace =
        ec ? std::string() : (dir / ("gpubench-" + std::to_string(::getpid()) + "-profile.trace.json")).string();
    const ProfileCapture cap = profile_steps(plan_.device, steps, step, trace);
    take_skipped();  // fp16 skips in the profiled steps belong to no epoch
    if (cap.events.empty()) {
      note("no profile: " + cap.error);
      return;
    }
    if (!cap.error.empty()) note(cap.error);
    ProfileInputs in;
    in.steps = steps;
    in.model_flops_per_step = record_.model.train_flops_per_sample * static_cast<double>(batch_size_);
    in.attention_flops_per_step = record_.model.attention_flops_per_sample * static_cast<double>(batch_size_);
    in.peak_tflops = record_.summary.peak_tflops;
    in.peak_source = record_.summary.peak_source;
    if (record_.summary.step_time.count > 0) in.timed_step_ms = record_.summary.step_time.median_ms;
    ProfileRecord p = summarize_profile(cap.events, in);
    p.when = std::to_string(steps) + " steps after the timed epochs, plus one unrecorded step before them; not timed, "
             "so the epochs carry no profiler overhead" + std::string(graph_ ? " (graph replays)" : "");
    p.source = cap.source;
    p.trace_path = cap.trace_path;
    auto& m = record_.summary.metrics;
    set_metric(m, Metric{"device_busy_fraction", "device busy (profile)", "fraction", Better::kHigher,
                         p.busy_fraction_of_timed_step.value_or(p.busy_fraction)});
    set_metric(m, Metric{"device_idle_ms_per_step", "device idle per step (profile)", "ms", Better::kLower,
                         p.idle_ms_per_step});
    set_metric(m, Metric{"kernels_per_step", "kernels per step (profile)", "count", Better::kNeither,
                         p.kernels_per_step});
    if (p.matrix_tflops) {
      set_metric(m, Metric{"matrix_tflops", "GEMM/conv/attention kernel TFLOP/s (profile)", "TFLOP/s", Better::kHigher,
                           *p.matrix_tflops});
    }
    record_.profile = std::move(p);
  }

  void note(const std::string& msg) {
    record_.notes.push_back(msg);
    observer_.on_note(msg);
  }

  /// Untimed steps (warm-up, profile) with real data: step `i` of `total` gets the next batch of passes with their
  /// own shuffles (keys from `key` down, never an epoch's), as many passes over the folder as `total` needs.
  void feed_untimed(int64_t key, int64_t i, int64_t total) {
    if (!input_) return;
    const int64_t per_pass = std::max<int64_t>(1, input_->epoch_images() / (batch_size_ * world_));
    if (i % per_pass == 0) input_->start_pass(key - i / per_pass, std::min(per_pass, total - i));
    input_->feed(batch_);
  }

  /// The epoch's input-pipeline figures: how long the step waited for batches (the slowest rank's, in a
  /// multi-process run), what the loader could deliver, files skipped, and the page cache when it began.
  void record_input(EpochRecord& ep, double page_cache) {
    const InputPassStats p = input_->take_pass_stats();
    double wait = p.device_wait_s;
    if (dist_) {
      const std::vector<double> waits = plan_.comm->gather(wait);
      wait = *std::max_element(waits.begin(), waits.end());
    }
    input_wait_s_ += wait;
    auto& m = ep.metrics;
    set_metric(m, Metric{"input_wait_s", "input wait (device idle for its batch)", "s", Better::kLower, wait});
    set_metric(m, Metric{"input_wait_host_s", "host time blocked on the loader", "s", Better::kNeither, p.wait_s});
    set_metric(m, Metric{kInputWaitTag, "input wait share", "fraction", Better::kLower,
                         ep.seconds > 0 ? wait / ep.seconds : 0.0});
    const double capacity = p.loader_capacity_img_per_s() * world_;
    if (capacity > 0) {
      loader_capacity_.push_back(capacity);
      set_metric(m, Metric{"loader_img_per_s", "loader capacity (workers' time)", "images/s", Better::kHigher, capacity});
    }
    set_metric(m, Metric{"files_skipped", "files skipped", "count", Better::kLower, static_cast<double>(p.files_skipped)});
    if (record_.data && (record_.data->decode == "gpu" || record_.data->decode == "mixed")) {
      set_metric(m, Metric{"cpu_decoded_images", "images the GPU decoder left to the CPU", "count", Better::kLower,
                           static_cast<double>(p.cpu_decoded)});
    }
    if (record_.data && record_.data->decode == "mixed") {
      set_metric(m, Metric{"cpu_shared_images", "images the split gave the CPU workers", "count", Better::kNeither,
                           static_cast<double>(p.cpu_shared)});
      if (p.cpu_share_batches > 0) {
        set_metric(m, Metric{"cpu_share", "the workers' mean share of a batch", "fraction", Better::kNeither,
                             p.cpu_share_sum / static_cast<double>(p.cpu_share_batches)});
      }
    }
    if (page_cache >= 0) {
      set_metric(m, Metric{"page_cache_fraction", "files in the page cache at epoch start", "fraction",
                           Better::kNeither, page_cache});
    }
  }

  void summarize_input() {
    auto& m = record_.summary.metrics;
    if (record_.summary.seconds > 0) {
      set_metric(m, Metric{kInputWaitTag, "input wait share", "fraction", Better::kLower,
                           input_wait_s_ / record_.summary.seconds});
    }
    if (!loader_capacity_.empty()) {
      double sum = 0;
      for (double c : loader_capacity_) sum += c;
      set_metric(m, Metric{"loader_img_per_s", "loader capacity (workers' time)", "images/s", Better::kHigher,
                           sum / static_cast<double>(loader_capacity_.size())});
    }
    record_.data = input_->describe();
  }

  /// Warm-up and timed steps together: heartbeats for the launcher, and the fault-injection hook.
  void count_step() {
    ++steps_run_;
    if (dist_) plan_.comm->set_progress(steps_run_);
    fault_.maybe_fire(plan_.comm, steps_run_);
  }

  double budget_s() const { return s_.time_budget_s.value_or(0.0); }
  double duration_s() const { return s_.duration_s.value_or(0.0); }

  const TrainingPlan& plan_;
  const Scenario& s_;
  Workload& workload_;
  RunObserver& observer_;
  RunRecord& record_;
  const at::Device dev_;
  const int64_t batch_size_;  ///< samples per optimizer step on one rank (all micro-batches)
  const bool dist_;
  const bool inference_;  ///< mode: inference (forward only, no optimizer)
  const int world_;
  const FaultInjection fault_;

  std::shared_ptr<torch::nn::Module> module_;
  Batch batch_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<GradientBuckets> buckets_;
  std::unique_ptr<StepRunner> runner_;  ///< training only
  std::function<at::Tensor()> step_;    ///< one step: a training step (its loss) or an inference step (its output)
  at::Tensor last_output_;              ///< inference: the latest step's output
  std::unique_ptr<StepTimer> timer_;
  std::unique_ptr<StepGraph> graph_;
  std::unique_ptr<InputPipeline> input_;  ///< data: folder
  double input_wait_s_ = 0;
  std::vector<double> loader_capacity_;

  Clock::time_point warm_t0_;
  int64_t steps_run_ = 0;
  int64_t steps_per_epoch_ = 1;
  int64_t max_epochs_ = 0;
  double measured_s_ = 0;
  std::vector<double> all_step_ms_;
  std::vector<at::Tensor> losses_;
};

}  // namespace

void train(const TrainingPlan& plan, Workload& workload, RunObserver& observer, RunRecord& record) {
  TrainingRun(plan, workload, observer, record).run();
}

}  // namespace gpubench::engine
