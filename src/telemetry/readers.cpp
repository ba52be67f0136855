#include "gpubench/telemetry/readers.hpp"

#include <algorithm>

namespace gpubench::telemetry {

std::unique_ptr<Reader> open_reader(const DeviceSelector& d, std::string* why_not) {
  if (d.device_type == "cuda") return open_nvml(d, why_not);
  if (d.device_type == "rocm") return open_rocm_smi(d, why_not);
  if (d.device_type == "cpu") return open_rapl(why_not);
  *why_not = d.device_type == "mps"
                 ? "Apple GPUs have no public power or clock interface without root (IOReport is private)"
                 : "no telemetry reader for device type '" + d.device_type + "'";
  return nullptr;
}

std::vector<ReaderStatus> probe_readers() {
  std::vector<ReaderStatus> out;
  auto probe = [&out](const std::string& name, std::unique_ptr<Reader> r, const std::string& why_not) {
    ReaderStatus s{name, r != nullptr, why_not};
    if (r) {
      const TelemetryInfo info = r->info();
      const TelemetrySample sample = r->read();
      s.detail = info.driver_version.empty() ? "" : "driver " + info.driver_version;
      if (sample.power_w) s.detail += (s.detail.empty() ? "" : ", ") + std::to_string(*sample.power_w) + " W now";
      if (!info.reason.empty()) s.detail += (s.detail.empty() ? "" : "; ") + info.reason;
    }
    out.push_back(s);
  };
  std::string why;
  auto nvml = open_nvml(DeviceSelector{"cuda", 0, ""}, &why);
  probe("nvml", std::move(nvml), why);
  why.clear();
  auto rocm = open_rocm_smi(DeviceSelector{"rocm", 0, ""}, &why);
  probe("rocm-smi", std::move(rocm), why);
  why.clear();
  auto rapl = open_rapl(&why);
  probe("rapl", std::move(rapl), why);
  out.push_back(ReaderStatus{"apple", false, "Apple GPUs have no public power or clock interface without root"});
  return out;
}

Sampler::Sampler(std::unique_ptr<Reader> reader, double interval_s)
    : reader_(std::move(reader)), interval_s_(interval_s), origin_(std::chrono::steady_clock::now()) {}

Sampler::~Sampler() { stop(); }

double Sampler::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin_).count();
}

void Sampler::start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_) return;
  running_ = true;
  stop_ = false;
  thread_ = std::thread([this] { loop(); });
}

void Sampler::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_) return;
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  running_ = false;
}

std::vector<TelemetrySample> Sampler::samples() const {
  std::lock_guard<std::mutex> lock(mu_);
  return samples_;
}

void Sampler::loop() {
  const auto period = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(interval_s_));
  auto next = std::chrono::steady_clock::now();
  for (;;) {
    TelemetrySample s = reader_->read();
    s.t_s = now_s();
    std::unique_lock<std::mutex> lock(mu_);
    samples_.push_back(s);
    next += period;  // a fixed grid, so slow reads do not stretch the period
    if (cv_.wait_until(lock, next, [this] { return stop_; })) return;
  }
}

}  // namespace gpubench::telemetry
