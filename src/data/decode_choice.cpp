#include "gpubench/data/decode_choice.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace gpubench::data {

namespace {

std::string rate(double images_per_s) { return std::to_string(std::lround(images_per_s)) + " images/s"; }

std::string share_text(double share) { return std::to_string(std::lround(share * 100)) + " %"; }

/// "nvJPEG (hardware backend)" and, where it is not the hardware engine, that it takes SM time.
std::string nvjpeg_name(const DecodeRates& r) {
  if (r.gpu_backend.empty()) return "nvJPEG";
  std::string s = "nvJPEG (" + r.gpu_backend + " backend";
  if (r.gpu_backend != "hardware") s += ": no JPEG engine used, decoding takes SM time";
  return s + ")";
}

}  // namespace

DecodeChoice choose_decode(const std::string& requested, int64_t workers, bool cuda_device) {
  DecodeChoice c;
  if (requested == "cpu") {
    c.reason = "decode: cpu was asked for";
    return c;
  }
  if (requested == "gpu") {
    c.try_gpu = c.required = true;
    c.reason = "decode: gpu was asked for";
    return c;
  }
  if (requested == "mixed") {
    c.try_gpu = c.mixed = c.required = true;
    c.reason = "decode: mixed was asked for: each batch split between the " + std::to_string(workers) +
               " workers (libjpeg-turbo) and nvJPEG, the workers' share raised while the device never waits for "
               "them and lowered when it does";
    return c;
  }
  if (!cuda_device) {
    c.reason = "decode: auto: the CPU (no CUDA device for nvJPEG)";
    return c;
  }
  // Until the run has measured, the pipeline is set up for every path (the files as bytes, nvJPEG open, the split
  // at the workers' whole batch); the calibration then picks one.
  c.try_gpu = c.mixed = c.calibrate = true;
  c.reason = "decode: auto: not calibrated (the run stopped before its calibration); the workers decoded every sample";
  return c;
}

double workers_while_training(const DecodeRates& r) {
  if (r.fed_cpu > 0 && r.step > 0 && r.fed_cpu < (1 - kFedTie) * r.step) return r.fed_cpu;
  return r.cpu;
}

double mixed_start_share(const DecodeRates& r) {
  const double workers = workers_while_training(r);
  if (r.batch <= 0 || r.step <= 0 || workers <= 0 || r.fed_gpu <= 0) return -1;
  const auto b = static_cast<double>(r.batch);
  const double t_step = b / r.step;
  const double cost = std::max(0.0, b / r.fed_gpu - t_step);  // a whole batch on nvJPEG, added to the step
  const double t_cpu = b / workers;                            // a whole batch on the workers, beside the step
  if (cost + t_cpu <= 0) return 1.0;
  return std::clamp((t_step + cost) / (cost + t_cpu), 0.0, 1.0);
}

DecodePlan plan_decode(const DecodeRates& r) {
  DecodePlan p;
  const std::string workers = std::to_string(r.workers) + " workers";
  const std::string why_no_gpu = r.gpu_unusable.empty() ? std::string("nvJPEG is not usable here") : r.gpu_unusable;
  if (r.data_only) {
    // No step to feed: the path that delivers the most is what this pipeline can do.
    if (r.gpu_usable && r.gpu > r.cpu * (1 + kFedTie)) {
      p.decode = "gpu";
      p.cpu_share = 0;
      p.expected = r.gpu;
      p.reason = "decode: auto (data_only, measured): " + nvjpeg_name(r) + " delivers " + rate(r.gpu) + ", the " +
                 workers + " " + rate(r.cpu);
    } else {
      p.expected = r.cpu;
      p.reason = "decode: auto (data_only, measured): the " + workers + " deliver " + rate(r.cpu) +
                 (r.gpu_usable ? ", " + nvjpeg_name(r) + " " + rate(r.gpu) : "; " + why_no_gpu);
    }
    return p;
  }
  const std::string figures =
      "the step alone trains " + rate(r.step) + ", the " + workers + " alone decode " + rate(r.cpu);
  if (r.step > 0 && r.fed_cpu >= (1 - kFedTie) * r.step) {
    p.expected = r.fed_cpu;
    p.reason = "decode: auto (measured): the CPU: " + figures + ", and fed by them the step trains " +
               rate(r.fed_cpu) + ": they keep it fed without taking GPU time from it";
    return p;
  }
  if (!r.gpu_usable) {
    const double fed = r.fed_cpu > 0 ? r.fed_cpu : std::min(r.step, r.cpu);
    p.expected = fed;
    p.reason = "decode: auto (measured): the CPU, as " + why_no_gpu + ": " + figures +
               (r.fed_cpu > 0 ? ", fed by them the step trains " + rate(r.fed_cpu) : std::string()) +
               (r.step > 0 && fed < (1 - kFedTie) * r.step
                    ? "; this run is bound by its input (more workers, data_workers, or a host with faster cores "
                      "would feed it)"
                    : "");
    return p;
  }
  // The step fed by each path: the best one, the CPU first among equals, then mixed.
  struct Candidate {
    const char* decode;
    double fed, share;
  };
  std::vector<Candidate> candidates;
  if (r.fed_cpu > 0) candidates.push_back({"cpu", r.fed_cpu, 1.0});
  if (r.fed_mixed > 0 && r.mixed_share >= kMinMixedShare && r.mixed_share < 1.0) {
    candidates.push_back({"mixed", r.fed_mixed, r.mixed_share});
  }
  if (r.fed_gpu > 0) candidates.push_back({"gpu", r.fed_gpu, 0.0});
  if (candidates.empty()) {
    // Nothing fed could be timed (a pass too short): split, and let the controller find the share.
    p.decode = "mixed";
    p.cpu_share = 1.0;
    p.reason = "decode: auto: mixed, unmeasured (the folder holds too few batches to time the fed step); " + figures;
    return p;
  }
  double best = 0;
  for (const auto& c : candidates) best = std::max(best, c.fed);
  const Candidate* pick = &candidates.front();
  for (const auto& c : candidates) {
    if (c.fed >= best * (1 - kFedTie)) {
      pick = &c;
      break;
    }
  }
  p.decode = pick->decode;
  p.cpu_share = pick->share;
  p.expected = pick->fed;
  std::string fed = "fed by the workers it trains " + rate(r.fed_cpu);
  if (r.fed_mixed > 0) fed += ", split " + share_text(r.mixed_share) + " to the workers " + rate(r.fed_mixed);
  if (r.fed_gpu > 0) fed += ", by " + nvjpeg_name(r) + " alone " + rate(r.fed_gpu);
  const std::string head = "decode: auto (measured): ";
  if (p.decode == "cpu") {
    p.reason = head + "the CPU: " + figures + "; " + fed;
  } else if (p.decode == "mixed") {
    p.reason = head + "mixed, the workers starting at " + share_text(p.cpu_share) + " of each batch and nvJPEG " +
               "the rest (the share then follows whether the step waits): " + figures + "; " + fed;
  } else {
    p.reason = head + "the GPU: " + figures + "; " + fed;
  }
  return p;
}

}  // namespace gpubench::data
