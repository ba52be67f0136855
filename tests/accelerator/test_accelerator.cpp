// gpubench's test accelerator: an out-of-tree LibTorch backend (PrivateUse1, named "testaccel") whose memory is host
// memory. It exists so that CI can run gpubench's generic backend, the path every non-CUDA accelerator takes, without
// such hardware. It has what a real PrivateUse1 backend gives LibTorch:
//   - a caching device allocator that keeps statistics (allocated and reserved bytes, current and peak), has a
//     capacity (GPUBENCH_TESTACCEL_MEMORY, bytes; 16 GiB by default) and fails past it with LibTorch's out-of-memory
//     error, as a card does;
//   - a device guard with devices (GPUBENCH_TESTACCEL_DEVICES, 2 by default), streams and events; an event holds the
//     host time at which it was recorded, and since every kernel runs synchronously on the host, the time between two
//     events is the time the work between them took;
//   - the hooks LibTorch asks a PrivateUse1 backend for, and its name (c10::register_privateuse1_backend);
//   - operators: the few that make or view tensors are its own; every other goes through LibTorch's boxed CPU fallback
//     (its tensors are copied to the CPU, the CPU kernel runs, the results are copied back).
// Load it with `gpubench --backend-library PATH` (or the scenario key backend_library); the device is `testaccel`.

#include <ATen/EmptyTensor.h>
#include <ATen/core/GeneratorForPrivateuseone.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_cpu_dispatch.h>
#include <ATen/ops/set_cpu_dispatch.h>
#include <ATen/ops/view_native.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/convolution_backward.h>
#include <ATen/ops/from_blob.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/DeviceType.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace gpubench_testaccel {
namespace {

using c10::DeviceIndex;
constexpr auto kType = c10::DeviceType::PrivateUse1;

int64_t env_or(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  return (end != nullptr && *end == '\0' && n > 0) ? n : fallback;
}

DeviceIndex device_count() {
  static const auto n = static_cast<DeviceIndex>(env_or("GPUBENCH_TESTACCEL_DEVICES", 2));
  return n;
}

thread_local DeviceIndex current_device = 0;
thread_local c10::StreamId current_stream[16] = {};

// ---- memory: a caching allocator over aligned host memory, with the statistics LibTorch's DeviceAllocator reports --
struct Block {
  void* ptr;
  size_t size;  // rounded
  DeviceIndex device;
};

void update(c10::CachingDeviceAllocator::StatArray& stat, int64_t delta) {
  for (auto& s : stat) {
    s.current += delta;
    s.peak = std::max(s.peak, s.current);
    if (delta > 0) s.allocated += delta;
    else s.freed -= delta;
  }
}

class TestAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    const DeviceIndex d = current_device;
    if (nbytes == 0) return {nullptr, nullptr, &delete_block, c10::Device(kType, d)};
    const size_t size = (nbytes + 511) / 512 * 512;
    std::lock_guard<std::mutex> lock(mu_);
    auto& dev = devices_[d];
    Block* block = nullptr;
    if (auto it = dev.cache.find(size); it != dev.cache.end()) {
      block = it->second;
      dev.cache.erase(it);
    } else {
      if (dev.stats.reserved_bytes[0].current + static_cast<int64_t>(size) > capacity()) release_cache(d);
      if (dev.stats.reserved_bytes[0].current + static_cast<int64_t>(size) > capacity()) {
        ++dev.stats.num_ooms;
        TORCH_CHECK_WITH(OutOfMemoryError, false, "testaccel out of memory: tried to allocate ", size,
                         " bytes on device ", static_cast<int>(d), " with ", dev.stats.allocated_bytes[0].current,
                         " allocated of its ", capacity(), " bytes");
      }
      void* p = std::aligned_alloc(64, size);
      TORCH_CHECK(p != nullptr, "testaccel: the host has no memory for ", size, " bytes");
      block = new Block{p, size, d};
      update(dev.stats.reserved_bytes, static_cast<int64_t>(size));
      update(dev.stats.segment, 1);
    }
    update(dev.stats.allocated_bytes, static_cast<int64_t>(size));
    update(dev.stats.active_bytes, static_cast<int64_t>(size));
    update(dev.stats.requested_bytes, static_cast<int64_t>(nbytes));
    update(dev.stats.allocation, 1);
    live_[block->ptr] = nbytes;
    return {block->ptr, block, &delete_block, c10::Device(kType, d)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }

  bool initialized() override { return true; }
  void emptyCache(c10::MempoolId_t /*unused*/) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (DeviceIndex d = 0; d < device_count(); ++d) release_cache(d);
  }
  void recordStream(const c10::DataPtr& /*unused*/, c10::Stream /*unused*/) override {}
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(DeviceIndex device) override {
    std::lock_guard<std::mutex> lock(mu_);
    return devices_[device].stats;
  }
  void resetAccumulatedStats(DeviceIndex device) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto& s = devices_[device].stats;
    for (auto* a : {&s.allocation, &s.segment, &s.active, &s.allocated_bytes, &s.reserved_bytes, &s.active_bytes,
                    &s.requested_bytes}) {
      for (auto& stat : *a) stat.allocated = stat.freed = 0;
    }
    s.num_ooms = 0;
  }
  void resetPeakStats(DeviceIndex device) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto& s = devices_[device].stats;
    for (auto* a : {&s.allocation, &s.segment, &s.active, &s.allocated_bytes, &s.reserved_bytes, &s.active_bytes,
                    &s.requested_bytes}) {
      for (auto& stat : *a) stat.peak = stat.current;
    }
  }
  std::pair<size_t, size_t> getMemoryInfo(DeviceIndex device) override {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t used = devices_[device].stats.reserved_bytes[0].current;
    return {static_cast<size_t>(capacity() - used), static_cast<size_t>(capacity())};
  }

 private:
  static int64_t capacity() {
    static const int64_t bytes = env_or("GPUBENCH_TESTACCEL_MEMORY", int64_t{16} << 30);
    return bytes;
  }
  static void delete_block(void* ctx);
  void free_block(Block* block) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& dev = devices_[block->device];
    const auto it = live_.find(block->ptr);
    update(dev.stats.requested_bytes, -static_cast<int64_t>(it->second));
    live_.erase(it);
    update(dev.stats.allocated_bytes, -static_cast<int64_t>(block->size));
    update(dev.stats.active_bytes, -static_cast<int64_t>(block->size));
    update(dev.stats.allocation, -1);
    dev.cache.emplace(block->size, block);
  }
  void release_cache(DeviceIndex d) {  // mu_ held
    auto& dev = devices_[d];
    for (auto& [size, block] : dev.cache) {
      update(dev.stats.reserved_bytes, -static_cast<int64_t>(size));
      update(dev.stats.segment, -1);
      std::free(block->ptr);
      delete block;
    }
    dev.cache.clear();
  }
  struct Device {
    c10::CachingDeviceAllocator::DeviceStats stats;
    std::multimap<size_t, Block*> cache;
  };
  std::mutex mu_;
  std::map<DeviceIndex, Device> devices_;
  std::map<void*, size_t> live_;
};

TestAllocator allocator;
void TestAllocator::delete_block(void* ctx) {
  if (ctx != nullptr) allocator.free_block(static_cast<Block*>(ctx));
}

// ---- device guard: devices, streams, events that hold the host time they were recorded at -------------------------
struct Event {
  std::chrono::steady_clock::time_point at;
  bool recorded = false;
};

struct Guard final : public c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kType; }
  c10::Device exchangeDevice(c10::Device d) const override {
    const auto old = current_device;
    setDevice(d);
    return {kType, old};
  }
  c10::Device getDevice() const override { return {kType, current_device}; }
  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kType, "testaccel: not a testaccel device: ", d);
    TORCH_CHECK(d.index() < device_count(), "testaccel: device ", static_cast<int>(d.index()), " of ",
                static_cast<int>(device_count()));
    if (d.index() >= 0) current_device = d.index();
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.index() >= 0) current_device = d.index();
  }
  c10::Stream getStream(c10::Device d) const noexcept override {
    return c10::Stream::unpack3(current_stream[d.index() < 0 ? current_device : d.index()], d.index(), kType);
  }
  c10::Stream getNewStream(c10::Device d, int /*priority*/) const override {
    static std::atomic<c10::StreamId> next{1};
    return c10::Stream::unpack3(next++, d.index(), kType);
  }
  c10::Stream exchangeStream(c10::Stream s) const noexcept override {
    const auto old = getStream(s.device());
    current_stream[s.device_index()] = s.id();
    return old;
  }
  DeviceIndex deviceCount() const noexcept override { return device_count(); }
  void record(void** event, const c10::Stream& /*stream*/, const DeviceIndex /*device_index*/,
              const c10::EventFlag /*flag*/) const override {
    if (*event == nullptr) *event = new Event;
    auto* e = static_cast<Event*>(*event);
    e->at = std::chrono::steady_clock::now();
    e->recorded = true;
  }
  void block(void* /*event*/, const c10::Stream& /*stream*/) const override {}
  bool queryEvent(void* /*event*/) const override { return true; }
  void destroyEvent(void* event, const DeviceIndex /*device_index*/) const noexcept override {
    delete static_cast<Event*>(event);
  }
  bool queryStream(const c10::Stream& /*stream*/) const override { return true; }
  void synchronizeStream(const c10::Stream& /*stream*/) const override {}
  void synchronizeEvent(void* /*event*/) const override {}
  void synchronizeDevice(const DeviceIndex /*device_index*/) const override {}
  double elapsedTime(void* start, void* end, const DeviceIndex /*device_index*/) const override {
    const auto* a = static_cast<Event*>(start);
    const auto* b = static_cast<Event*>(end);
    TORCH_CHECK(a != nullptr && b != nullptr && a->recorded && b->recorded,
                "testaccel: both events must be recorded before their elapsed time is read");
    return std::chrono::duration<double, std::milli>(b->at - a->at).count();
  }
};
C10_REGISTER_GUARD_IMPL(PrivateUse1, Guard);

// ---- hooks ---------------------------------------------------------------------------------------------------------
struct Hooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  const at::Generator& getDefaultGenerator(DeviceIndex /*device_index*/) const override {
    return at::detail::getDefaultCPUGenerator();  // random numbers are drawn on the host, by the CPU kernels
  }
  at::Generator getNewGenerator(DeviceIndex /*device_index*/) const override {
    return at::detail::createCPUGenerator();
  }
  at::Device getDeviceFromPtr(void* /*data*/) const override { return {kType, current_device}; }
  bool isPinnedPtr(const void* /*data*/) const override { return false; }
  at::Allocator* getPinnedMemoryAllocator() const override { return c10::GetCPUAllocator(); }
  bool hasPrimaryContext(DeviceIndex /*device_index*/) const override { return true; }
  DeviceIndex deviceCount() const override { return device_count(); }
  void setCurrentDevice(DeviceIndex device) const override { current_device = device; }
  DeviceIndex getCurrentDevice() const override { return current_device; }
  DeviceIndex exchangeDevice(DeviceIndex device) const override {
    const auto old = current_device;
    current_device = device;
    return old;
  }
  DeviceIndex maybeExchangeDevice(DeviceIndex device) const override { return exchangeDevice(device); }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    at::native::resize_bytes_cpu(storage.unsafeGetStorageImpl(), newsize);
  }
};

// ---- operators -----------------------------------------------------------------------------------------------------
at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                               std::optional<bool> pin_memory, std::optional<c10::MemoryFormat> memory_format) {
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided, "testaccel: only strided tensors");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory), "testaccel: pinned memory is the CPU's");
  const c10::DeviceGuard guard(c10::device_or_default(device));
  return at::detail::empty_generic(size, &allocator, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                   c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype,
                         std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                         std::optional<bool> pin_memory) {
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided, "testaccel: only strided tensors");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory), "testaccel: pinned memory is the CPU's");
  const c10::DeviceGuard guard(c10::device_or_default(device));
  return at::detail::empty_strided_generic(size, stride, &allocator,
                                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                           c10::dtype_or_default(dtype));
}

// The same bytes seen as a CPU tensor (the device's memory is host memory), for copies.
at::Tensor host_alias(const at::Tensor& t) {
  if (!t.defined() || t.is_cpu()) return t;
  return at::from_blob(t.data_ptr(), t.sizes(), t.strides(), at::TensorOptions().dtype(t.scalar_type()));
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool /*non_blocking*/) {
  TORCH_CHECK(self.sizes() == dst.sizes(), "testaccel: copy between tensors of different shapes");
  if (self.numel() > 0) host_alias(dst).copy_(host_alias(self));
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  at::native::resize_(dst, self.sizes(), std::nullopt);
  return copy_from(self, dst, false);
}

const at::Tensor& resize(const at::Tensor& self, c10::IntArrayRef size,
                         std::optional<c10::MemoryFormat> memory_format) {
  return at::native::resize_(self, size, memory_format);
}

at::Tensor as_strided(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride,
                      std::optional<int64_t> storage_offset) {
  return at::cpu::as_strided(self, size, stride, storage_offset);  // metadata only
}

at::Tensor& set_storage(at::Tensor& self, at::Storage storage, int64_t storage_offset, c10::IntArrayRef size,
                        c10::IntArrayRef stride) {
  return at::cpu::set_(self, std::move(storage), storage_offset, size, stride);
}

// Convolutions: LibTorch sends a device it has no convolution for to these two operators (their default throws).
// They run LibTorch's CPU convolution on the device's own bytes and copy the results to the device.
at::Tensor on_device(const at::Tensor& host, c10::Device device) {
  return host.defined() ? host.to(device) : host;
}

at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                       c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed,
                       c10::IntArrayRef output_padding, int64_t groups) {
  std::optional<at::Tensor> host_bias;
  if (bias && bias->defined()) host_bias = host_alias(*bias);
  return on_device(at::convolution(host_alias(input), host_alias(weight), host_bias, stride, padding, dilation,
                                   transposed, output_padding, groups),
                   input.device());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, c10::IntArrayRef stride,
    c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed, c10::IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> output_mask) {
  const int64_t out_channels = transposed ? weight.size(1) * groups : weight.size(0);
  auto [gi, gw, gb] = at::convolution_backward(host_alias(grad_output), host_alias(input), host_alias(weight),
                                               std::vector<int64_t>{out_channels}, stride, padding, dilation,
                                               transposed, output_padding, groups, output_mask);
  const auto d = input.device();
  return {on_device(gi, d), on_device(gw, d), on_device(gb, d)};
}

// Module::to moves a parameter by swapping its tensor's contents (set_data), which LibTorch allows between dense
// tensors of its own backends only; a PrivateUse1 backend says which of its tensors may swap with which.
bool compatible_shallow_copy(const at::Tensor& self, const at::Tensor& from) {
  return self.layout() == c10::kStrided && from.layout() == c10::kStrided &&
         (self.is_privateuseone() || self.is_cpu()) && (from.is_privateuseone() || from.is_cpu());
}

void fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) { at::native::cpu_fallback(op, stack); }

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("resize_", resize);
  m.impl("as_strided", as_strided);
  m.impl("set_.source_Storage_storage_offset", set_storage);
  m.impl("view", at::native::view);
  m.impl("_reshape_alias", at::native::_reshape_alias);
  m.impl("_has_compatible_shallow_copy_type", compatible_shallow_copy);
  m.impl("convolution_overrideable", convolution);
  m.impl("convolution_backward_overrideable", convolution_backward);
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&fallback>()); }

const bool registered = [] {
  c10::register_privateuse1_backend("testaccel");
  c10::SetAllocator(kType, &allocator);
  at::RegisterPrivateUse1HooksInterface(new Hooks);
  return true;
}();

}  // namespace
}  // namespace gpubench_testaccel

/// What gpubench records as the backend's version (a backend library may export this; LibTorch has no such query).
extern "C" const char* gpubench_backend_version() { return "1.0 (gpubench test accelerator)"; }
