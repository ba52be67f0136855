#include "training_step.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "cuda_graph.h"
#include "fp8.h"

namespace gpubench::engine {

StepRunner::StepRunner(const TrainingPlan& plan, Workload& w, const Batch& batch, Optimizer& opt,
                       GradientBuckets* buckets)
    : plan_(plan), workload_(w), batch_(batch), opt_(opt), buckets_(buckets) {
  if (plan.precision.loss_scaling) {
    scaler_.emplace(plan.device.device);
    skipped_on_device_ =
        at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(plan.device.device));
  }
}

at::Tensor StepRunner::run() {
  if (buckets_ != nullptr) {
    buckets_
        ->zero_grads();  // gradients are views into the all-reduce buckets: zero them, keep them
  } else {
    opt_.zero_grad();
  }
  // precision: fp8: every converted layer's weight in FP8 for this step, in two launches rather than two a layer.
  if (const fp8::Plan* fp8_plan = fp8::active_plan()) fp8_plan->quantize_weights();
  const int64_t k = plan_.scenario.grad_accumulation;
  const int64_t micro = *plan_.scenario.batch_size;
  at::Tensor loss_sum;
  for (int64_t m = 0; m < k; ++m) {
    at::Tensor loss;
    if (buckets_ != nullptr) buckets_->begin_micro_batch(m == k - 1);
    {
      AutocastScope autocast(plan_.device.device.type(), plan_.precision.autocast);
      loss = workload_.loss(k == 1 ? batch_ : slice_batch(batch_, m * micro, micro));
    }
    // The mean over k micro-batches: the same gradient as one batch k times larger (without
    // BatchNorm).
    const at::Tensor scaled = k == 1 ? loss : loss / static_cast<double>(k);
    (scaler_ ? scaler_->scale(scaled) : scaled).backward();
    loss_sum = loss_sum.defined() ? loss_sum + loss.detach() : loss.detach();
  }
  const at::Tensor loss = k == 1 ? loss_sum : loss_sum / static_cast<double>(k);
  if (buckets_ != nullptr) buckets_->finish();  // gradients are now averaged over the ranks
  if (!scaler_) {
    opt_.step();
    return loss;
  }
  const at::Tensor found_inf = scaler_->unscale(opt_.params());
  if (opt_.skips_on_device()) {
    // Fused optimizers skip an overflowed step on the device: no host synchronisation, capturable.
    opt_.step(found_inf);
    skipped_on_device_.add_(found_inf);
  } else if (found_inf.item<float>() == 0.0f) {
    // As PyTorch's GradScaler.step with a foreach optimizer: the decision needs the flag on the
    // host.
    opt_.step();
  } else {
    ++skipped_;
  }
  scaler_->update(found_inf);
  return loss;
}

int64_t StepRunner::take_skipped() {
  int64_t n = std::exchange(skipped_, 0);
  if (skipped_on_device_.defined()) {
    n += std::llround(skipped_on_device_.item<double>());
    skipped_on_device_.zero_();  // in place: a captured graph keeps adding into this tensor
  }
  return n;
}

/// Why the whole step cannot be captured for this plan; empty when it can. `opt` is null in
/// inference mode (a forward pass alone: no all-reduces, no recomputation, no optimizer to check).
std::string graph_unsupported_reason(const TrainingPlan& plan, const Optimizer* optimizer) {
  if (!cuda_graphs_compiled()) return "this gpubench was built without its CUDA module (GPUBENCH_CUDA=OFF)";
  if (!backend_of(plan.device).has(Capability::kGraphCapture)) {
    return "CUDA graphs need a CUDA device, served by gpubench's CUDA backend (this run is on " + plan.device.id +
           ", its " + backend_name(backend_of(plan.device).kind()) + " backend)";
  }
  if (optimizer == nullptr) return {};
  const Optimizer& opt = *optimizer;
  if (plan.comm != nullptr) {
    return "multi-process runs launch their all-reduces from backward hooks, which are not "
           "captured yet";
  }
  if (plan.scenario.option<bool>("gradient_checkpointing").value_or(false)) {
    return "gradient checkpointing saves and restores the RNG state from the host, which a capture "
           "cannot do";
  }
  if (!opt.capturable()) {
    return std::string("the ") + opt.implementation() + " " + plan.scenario.optimizer.name +
           " keeps its step count on the host; use optimizer.implementation: fused";
  }
  if (plan.precision.loss_scaling && !opt.skips_on_device()) {
    return "fp16 loss scaling with a foreach optimizer decides each skip on the host; use the "
           "fused optimizer";
  }
  return {};
}

FaultInjection FaultInjection::from_spec(const std::string& spec) {
  FaultInjection f;
  if (spec.empty()) return f;
  const char* v = spec.c_str();
  char action[8] = {};
  char when[16] = {};
  long long n = -1;
  if (std::sscanf(v, "%7[a-z]-rank:%d:%15[a-z-]:%lld", action, &f.rank, when, &n) != 4) return f;
  const std::string a = action, w = when;
  f.signal = a == "kill" ? SIGKILL : a == "term" ? SIGTERM : a == "stop" ? SIGSTOP : 0;
  if (w == "step") f.step = n;
  if (w == "after-epoch") f.after_epoch = n;
  return f;
}
void FaultInjection::maybe_fire(const Communicator* comm, int64_t step_now) const {
  if (mine(comm) && step_now == step) std::raise(signal);
}
void FaultInjection::maybe_fire_after_epoch(const Communicator* comm, int64_t epoch_1based) const {
  if (mine(comm) && epoch_1based == after_epoch) std::raise(signal);
}

std::string describe_loss(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

/// Multi-process runs: every rank's telemetry for the epoch goes to every rank; the record keeps
/// each rank's and the job's totals. A rank without telemetry contributes an empty entry, which
/// leaves the totals unknown (not too low).
void gather_rank_telemetry(Communicator& comm, const std::optional<EpochTelemetry>& local,
                           EpochRecord& ep) {
  const std::vector<std::string> texts =
      comm.gather_text(local ? nlohmann::json(*local).dump() : std::string());
  bool any = false;
  for (const auto& t : texts) {
    EpochTelemetry r;
    if (!t.empty()) {
      r = nlohmann::json::parse(t).get<EpochTelemetry>();
      any = true;
    }
    ep.rank_telemetry.push_back(std::move(r));
  }
  if (!any) {
    ep.rank_telemetry.clear();
    return;
  }
  ep.telemetry = combine_devices(ep.rank_telemetry, ep.samples);
}

}  // namespace gpubench::engine
