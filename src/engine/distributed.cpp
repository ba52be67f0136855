#include "distributed.h"

#include <ATen/record_function.h>

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#ifdef GPUBENCH_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#ifdef GPUBENCH_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#include <c10/core/Event.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "host_clock.h"
#include "torch_compat.h"

namespace gpubench::engine {

namespace {

using std::chrono::milliseconds;

milliseconds to_ms(double s) { return milliseconds(static_cast<int64_t>(s * 1000.0)); }

/// `member`: one of the world's rendezvous connections (counted by the server, which waits for all of them);
/// otherwise an extra connection (heartbeats, failure probes) that the count must not include.
c10::intrusive_ptr<c10d::TCPStore> connect_store(const RankInfo& info, bool member, double timeout_s) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<std::uint16_t>(info.master_port);
  o.isServer = member && info.rank == 0;
  o.numWorkers = member ? std::optional<std::size_t>(info.world_size) : std::nullopt;
  o.waitWorkers = member;  // every member checks in (the count), the server then waits for all
  o.timeout = to_ms(timeout_s);
  return c10::make_intrusive<c10d::TCPStore>(info.master_addr, o);
}

std::string heartbeat_key(int rank) { return "gpubench/heartbeat/" + std::to_string(rank); }

#ifdef GPUBENCH_WITH_GLOO
/// Where this rank's Gloo traffic leaves from: GLOO_SOCKET_IFNAME's interface when set; loopback for a one-host job;
/// else this host's address on the route to the rendezvous host, which the other nodes reach it at. (Gloo's default,
/// the address the host's own name resolves to, is loopback where the name is not in DNS or /etc/hosts, and then the
/// other nodes' connections go to themselves.)
std::shared_ptr<gloo::transport::Device> gloo_device(const RankInfo& info) {
  if (!info.gloo_interface.empty()) return c10d::ProcessGroupGloo::createDeviceForInterface(info.gloo_interface);
  if (info.master_addr == "127.0.0.1" || info.master_addr == "localhost") {
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  }
  const std::string local = local_address_towards(info.master_addr);
  return local.empty() ? c10d::ProcessGroupGloo::createDefaultDevice()
                       : c10d::ProcessGroupGloo::createDeviceForHostname(local);
}
#endif

}  // namespace

struct Communicator::Impl {
  RankInfo info;
  at::Device device{at::kCPU};
  double timeout_s = 300;
  std::string backend_name;
  c10::intrusive_ptr<c10d::TCPStore> store;
  c10::intrusive_ptr<c10d::Backend> backend;
  std::vector<c10::intrusive_ptr<c10d::Work>> pending;
  std::mutex pending_mutex;
  // Heartbeat: its own store connection, so it never interleaves with the main thread's requests.
  std::thread heartbeat;
  std::mutex hb_mutex;
  std::condition_variable hb_cv;
  bool hb_stop = false;
};

Communicator::Communicator(const RankInfo& info, const at::Device& device, double timeout_s)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.info = info;
  m.device = device;
  m.timeout_s = timeout_s;
  try {
    m.store = connect_store(info, true, timeout_s);
  } catch (const std::exception& e) {
    throw std::runtime_error("rank " + std::to_string(info.rank) + " could not meet the other " +
                             std::to_string(info.world_size - 1) + " rank(s) at " + info.master_addr + ":" +
                             std::to_string(info.master_port) + " within " + std::to_string(int(timeout_s)) +
                             " s: " + std::string(e.what()).substr(0, std::string(e.what()).find('\n')));
  }
  if (device.is_cuda()) {
#ifdef GPUBENCH_WITH_NCCL
    // NCCL's own error handling stays as PyTorch sets it (SkipCleanUp: the watchdog takes a rank down after a
    // timed-out collective). On the H200 x2, CleanUpOnly (TORCH_NCCL_ASYNC_ERROR_HANDLING=2) left rank 0 hung after a
    // peer stopped, which is worse; the launcher writes the record when rank 0 cannot
    // (results/2026-11-30-h200x2-nccl-faults).
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    opts->timeout = to_ms(timeout_s);
    m.backend = c10::make_intrusive<c10d::ProcessGroupNCCL>(m.store, info.rank, info.world_size, opts);
    m.backend_name = "nccl";
#else
    throw std::runtime_error("this gpubench was built without NCCL (nccl.h was not found at configure time)");
#endif
  } else if (device.is_cpu()) {
#ifdef GPUBENCH_WITH_GLOO
    auto opts = c10d::ProcessGroupGloo::Options::create(to_ms(timeout_s));
    opts->devices.push_back(gloo_device(info));
    m.backend = c10::make_intrusive<c10d::ProcessGroupGloo>(m.store, info.rank, info.world_size, opts);
    m.backend_name = "gloo";
#else
    throw std::runtime_error("this gpubench was built without Gloo (install libgloo-dev and reconfigure)");
#endif
  } else {
    throw std::runtime_error("multi-process training needs CUDA/ROCm (NCCL) or the CPU (Gloo); " +
                             device.str() + " has no c10d backend");
  }
  m.heartbeat = std::thread([this] {
    Impl& im = *impl_;
    c10::intrusive_ptr<c10d::TCPStore> hb;
    try {
      hb = connect_store(im.info, false, im.timeout_s);
    } catch (...) {
      return;  // no heartbeat: failures then name no rank, nothing worse
    }
    int64_t beat = 0;
    std::unique_lock<std::mutex> lock(im.hb_mutex);
    while (!im.hb_stop) {
      const std::string v = std::to_string(++beat) + ":" + std::to_string(progress_.load());
      try {
        hb->set(heartbeat_key(im.info.rank), std::vector<uint8_t>(v.begin(), v.end()));
      } catch (...) {
        return;  // the store (rank 0) is gone
      }
      im.hb_cv.wait_for(lock, milliseconds(300));
    }
  });
}

Communicator::~Communicator() {
  {
    std::lock_guard<std::mutex> lock(impl_->hb_mutex);
    impl_->hb_stop = true;
  }
  impl_->hb_cv.notify_all();
  if (impl_->heartbeat.joinable()) impl_->heartbeat.join();
#ifdef GPUBENCH_WITH_NCCL
  if (auto* nccl = dynamic_cast<c10d::ProcessGroupNCCL*>(impl_->backend.get())) {
    try {
      nccl->shutdown();
    } catch (...) {
    }
  }
#endif
}

int Communicator::rank() const { return impl_->info.rank; }
int Communicator::world_size() const { return impl_->info.world_size; }
const std::string& Communicator::backend_name() const { return impl_->backend_name; }
const RankInfo& Communicator::info() const { return impl_->info; }

void Communicator::broadcast(const std::vector<at::Tensor>& tensors) {
  at::NoGradGuard no_grad;
  for (const auto& t : tensors) {
    std::vector<at::Tensor> one{t.is_contiguous() ? t : t.contiguous()};
    impl_->backend->broadcast(one, c10d::BroadcastOptions{})->wait();
    if (!one[0].is_same(t)) t.copy_(one[0]);
  }
}

std::vector<double> Communicator::gather(double value) {
  const int n = world_size();
  at::Tensor slots = at::zeros({n}, at::TensorOptions().dtype(at::kDouble).device(impl_->device));
  slots[rank()].fill_(value);
  std::vector<at::Tensor> one{slots};
  impl_->backend->allreduce(one)->wait();
  const at::Tensor host = one[0].to(at::kCPU);
  return std::vector<double>(host.data_ptr<double>(), host.data_ptr<double>() + n);
}

std::vector<std::string> Communicator::gather_text(const std::string& text) {
  const int n = world_size();
  int64_t longest = 0;
  for (double len : gather(static_cast<double>(text.size()))) longest = std::max(longest, static_cast<int64_t>(len));
  if (longest == 0) return std::vector<std::string>(static_cast<size_t>(n));
  // Each rank fills its own row with its bytes; a sum all-reduce then holds every row (doubles carry 0..255 exactly).
  at::Tensor rows = at::zeros({n, longest}, at::TensorOptions().dtype(at::kDouble));
  double* own = rows[rank()].data_ptr<double>();
  for (size_t i = 0; i < text.size(); ++i) own[i] = static_cast<unsigned char>(text[i]);
  std::vector<at::Tensor> one{rows.to(impl_->device)};
  impl_->backend->allreduce(one)->wait();
  const at::Tensor host = one[0].to(at::kCPU).contiguous();
  std::vector<std::string> out(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    const double* v = host[r].data_ptr<double>();
    std::string& s = out[static_cast<size_t>(r)];
    for (int64_t i = 0; i < longest && v[i] != 0.0; ++i) s.push_back(static_cast<char>(static_cast<int>(v[i])));
  }
  return out;
}

bool Communicator::any(bool value) {
  for (double v : gather(value ? 1.0 : 0.0)) {
    if (v != 0.0) return true;
  }
  return false;
}

void Communicator::allreduce_async(at::Tensor& t) {
  std::vector<at::Tensor> one{t};
  // Named for --profile (free when no profiler is on): the backend is called directly, not through the dispatcher.
  RECORD_FUNCTION("c10d::allreduce_launch", std::vector<c10::IValue>());
  auto work = impl_->backend->allreduce(one);
  std::lock_guard<std::mutex> lock(impl_->pending_mutex);
  impl_->pending.push_back(std::move(work));
}

void Communicator::wait_all() {
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  {
    std::lock_guard<std::mutex> lock(impl_->pending_mutex);
    works.swap(impl_->pending);
  }
  RECORD_FUNCTION("c10d::allreduce_wait", std::vector<c10::IValue>());  // the exposed share, in a profile
  for (auto& w : works) w->wait();
}

std::string Communicator::describe_unresponsive_ranks() {
  const Impl& m = *impl_;
  try {
    auto probe = connect_store(m.info, false, 5.0);
    auto read_all = [&] {
      std::map<int, std::pair<int64_t, int64_t>> beats;  // rank -> (beat, progress)
      for (int r = 0; r < m.info.world_size; ++r) {
        if (r == m.info.rank || !probe->check({heartbeat_key(r)})) continue;
        const auto raw = probe->get(heartbeat_key(r));
        const std::string v(raw.begin(), raw.end());
        const auto colon = v.find(':');
        beats[r] = {std::stoll(v.substr(0, colon)), std::stoll(v.substr(colon + 1))};
      }
      return beats;
    };
    const auto first = read_all();
    std::this_thread::sleep_for(milliseconds(1500));
    const auto second = read_all();
    std::string dead, lowest;
    int64_t low = INT64_MAX;
    for (int r = 0; r < m.info.world_size; ++r) {
      if (r == m.info.rank) continue;
      auto a = first.find(r), b = second.find(r);
      if (b == second.end() || (a != first.end() && a->second.first == b->second.first)) {
        dead += (dead.empty() ? "" : ", ") + std::to_string(r);
      } else if (b->second.second < low) {
        low = b->second.second;
        lowest = std::to_string(r);
      }
    }
    if (!dead.empty()) return "rank " + dead + " stopped responding (process gone or killed)";
    if (!lowest.empty() && low < progress_.load()) {
      return "rank " + lowest + " is alive but behind (at step " + std::to_string(low) + "): it hung";
    }
    return "every rank is still alive";
  } catch (const std::exception&) {
    return m.info.rank == 0 ? "the other ranks cannot be reached"
                            : "rank 0 (which hosts the rendezvous store) stopped responding";
  }
}

// ---------------------------------------------------------------------------------------------------------------

std::vector<size_t> bucket_starts(const std::vector<int64_t>& bytes_in_order, int64_t cap_bytes) {
  std::vector<size_t> starts;
  int64_t filled = 0;
  for (size_t i = 0; i < bytes_in_order.size(); ++i) {
    if (starts.empty() || (filled > 0 && filled + bytes_in_order[i] > cap_bytes)) {
      starts.push_back(i);
      filled = 0;
    }
    filled += bytes_in_order[i];
  }
  return starts;
}

struct GradientBuckets::Impl {
  Communicator* comm = nullptr;
  std::vector<at::Tensor> params;            // in bucket order (reverse registration order)
  std::vector<size_t> bucket_of;             // per entry of `params`
  at::Tensor storage;                        // every gradient, contiguous
  std::vector<at::Tensor> buckets;           // views of `storage`
  std::vector<at::Tensor> grad_views;        // per entry of `params`
  std::vector<compat::GradAccumulatorPtr> accumulators;  // keep the hooked nodes alive
  std::vector<int64_t> size_of_bucket;       // parameter count per bucket
  std::vector<int64_t> pending;              // gradients still missing per bucket in this backward
  size_t next_to_launch = 0;
  bool sync = true;
  std::mutex mutex;
  // Exposed communication time: device events around the wait on the gradients' device (c10::Event, timing on), the
  // host clock on the CPU.
  bool device_events = false;
  int64_t marks = 0;
  double host_wait_s = 0;
  std::vector<std::unique_ptr<c10::Event>> before, after;

  void launch_ready_locked() {
    while (next_to_launch < buckets.size() && pending[next_to_launch] == 0) launch_locked(next_to_launch++);
  }
  void launch_locked(size_t b) {
    buckets[b].div_(static_cast<double>(comm->world_size()));  // average, as DDP divides before the sum
    comm->allreduce_async(buckets[b]);
  }
  void on_gradient(size_t b) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!sync) return;
    if (--pending[b] == 0) launch_ready_locked();
  }
};

GradientBuckets::GradientBuckets(Communicator& comm, const std::vector<at::Tensor>& params, double bucket_mb)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.comm = &comm;
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    if (it->requires_grad()) m.params.push_back(*it);
  }
  if (m.params.empty()) throw std::runtime_error("no trainable parameters to all-reduce");
  std::vector<int64_t> bytes;
  int64_t total = 0;
  for (const auto& p : m.params) {
    bytes.push_back(p.numel() * static_cast<int64_t>(p.element_size()));
    total += p.numel();
    if (p.scalar_type() != m.params.front().scalar_type()) {
      throw std::runtime_error("gradient buckets need one parameter dtype");
    }
  }
  const std::vector<size_t> starts = bucket_starts(bytes, static_cast<int64_t>(bucket_mb * 1024 * 1024));
  m.storage = at::zeros({total}, m.params.front().options().requires_grad(false));
  int64_t offset = 0;
  for (size_t b = 0; b < starts.size(); ++b) {
    const size_t end = b + 1 < starts.size() ? starts[b + 1] : m.params.size();
    int64_t numel = 0;
    for (size_t i = starts[b]; i < end; ++i) numel += m.params[i].numel();
    m.buckets.push_back(m.storage.narrow(0, offset, numel));
    int64_t inner = offset;
    for (size_t i = starts[b]; i < end; ++i) {
      const at::Tensor& p = m.params[i];
      // Same strides as the parameter (channels_last too), so optimizers see the layout they expect.
      m.grad_views.push_back(m.storage.narrow(0, inner, p.numel()).as_strided(p.sizes(), p.strides()));
      m.bucket_of.push_back(b);
      inner += p.numel();
    }
    m.size_of_bucket.push_back(static_cast<int64_t>(end - starts[b]));
    offset += numel;
  }
  m.pending = m.size_of_bucket;
  for (size_t i = 0; i < m.params.size(); ++i) {
    auto acc = torch::autograd::impl::grad_accumulator(m.params[i]);
    const size_t b = m.bucket_of[i];
    Impl* raw = impl_.get();
    acc->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [raw, b](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
          raw->on_gradient(b);
          return outputs;
        }));
    m.accumulators.push_back(std::move(acc));
  }
  m.device_events = m.storage.is_cuda();
  zero_grads();
}

GradientBuckets::~GradientBuckets() {
  // The hooks point at impl_: detach the gradients so no later backward can reach them.
  for (auto& p : impl_->params) p.mutable_grad().reset();
}

void GradientBuckets::zero_grads() {
  Impl& m = *impl_;
  m.storage.zero_();
  for (size_t i = 0; i < m.params.size(); ++i) {
    if (!m.params[i].grad().defined() || !m.params[i].grad().is_same(m.grad_views[i])) {
      m.params[i].mutable_grad() = m.grad_views[i];
    }
  }
}

void GradientBuckets::begin_micro_batch(bool last) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->sync = last;
  if (last) {
    impl_->pending = impl_->size_of_bucket;
    impl_->next_to_launch = 0;
  }
}

void GradientBuckets::finish() {
  Impl& m = *impl_;
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    while (m.next_to_launch < m.buckets.size()) m.launch_locked(m.next_to_launch++);  // unused parameters
  }
  if (m.device_events) {
    const c10::Device device = m.storage.device();
    const c10::Stream stream = c10::impl::getDeviceGuardImpl(device.type())->getStream(device);
    while (static_cast<int64_t>(m.before.size()) <= m.marks) {
      m.before.push_back(std::make_unique<c10::Event>(device.type(), c10::EventFlag::BACKEND_DEFAULT));
      m.after.push_back(std::make_unique<c10::Event>(device.type(), c10::EventFlag::BACKEND_DEFAULT));
    }
    m.before[m.marks]->record(stream);
    m.comm->wait_all();
    m.after[m.marks]->record(stream);
    ++m.marks;
    return;
  }
  const auto t0 = Clock::now();
  m.comm->wait_all();
  m.host_wait_s += seconds_since(t0);
}

size_t GradientBuckets::bucket_count() const { return impl_->buckets.size(); }

void GradientBuckets::begin_epoch(int64_t /*max_steps*/) {
  impl_->marks = 0;
  impl_->host_wait_s = 0;
}

double GradientBuckets::end_epoch_wait_seconds() {
  double s = impl_->host_wait_s;
  for (int64_t i = 0; i < impl_->marks; ++i) s += impl_->before[i]->elapsedTime(*impl_->after[i]) / 1000.0;
  return s;
}

}  // namespace gpubench::engine
