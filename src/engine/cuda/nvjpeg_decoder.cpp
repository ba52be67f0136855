#include "cuda/nvjpeg_decoder.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <type_traits>
#include <utility>


namespace gpubench::engine {

namespace {

// The nvJPEG C ABI we use (nvjpeg.h, CUDA 13; stable since CUDA 10), declared here so the build needs no nvJPEG.
constexpr int kMaxComponent = 4;
struct NvImage {
  unsigned char* channel[kMaxComponent];
  size_t pitch[kMaxComponent];
};
using Status = int;                            // nvjpegStatus_t: 0 = success
enum Backend { kDefault = 0, kHybrid = 1, kGpuHybrid = 2, kHardware = 3 };
constexpr int kOutputRGBI = 5;                 // NVJPEG_OUTPUT_RGBI

std::string status_text(Status s) {
  switch (s) {
    case 1: return "not initialized";
    case 2: return "invalid parameter";
    case 3: return "bad JPEG";
    case 4: return "JPEG not supported";
    case 5: return "allocator failure";
    case 6: return "execution failed";
    case 7: return "architecture mismatch";
    case 8: return "internal error";
    case 9: return "implementation not supported";
    default: return "status " + std::to_string(s);
  }
}

/// site-packages, found from where libtorch_cpu.so was loaded from (…/site-packages/torch/lib/libtorch_cpu.so).
std::string site_packages() {
  std::string found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        const char* name = info->dlpi_name;
        if (name != nullptr && std::strstr(name, "libtorch_cpu.so") != nullptr) {
          *static_cast<std::string*>(out) = name;
          return 1;
        }
        return 0;
      },
      &found);
  if (found.empty()) return {};
  return std::filesystem::path(found).parent_path().parent_path().parent_path().string();
}

std::vector<std::string> candidates(const std::string& first) {
  std::vector<std::string> c;
  if (!first.empty()) c.push_back(first);
  c.emplace_back("libnvjpeg.so.13");
  const std::string sp = site_packages();
  if (!sp.empty()) {
    namespace fs = std::filesystem;
    for (const std::string dir : {"torchvision.libs", "nvidia/cu13/lib", "nvidia/nvjpeg/lib"}) {
      std::error_code ec;
      for (fs::directory_iterator it(fs::path(sp) / dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
        const std::string n = it->path().filename().string();
        if (n.rfind("libnvjpeg", 0) == 0 && n.find(".so") != std::string::npos) c.push_back(it->path().string());
      }
    }
  }
  c.emplace_back("libnvjpeg.so");
  return c;
}

/// nvJPEG's own allocations go through these caches: its default cudaFree/cudaFreeHost synchronise the whole device
/// and stall the training stream (measured: a 2-4 % slower median step and 10-25 % slower p95 steps on the H200).
/// Blocks are kept for reuse (a freed block serves any later request it can hold, up to twice its size) and live
/// as long as the process.
class BlockCache {
 public:
  using Alloc = cudaError_t (*)(void**, size_t, unsigned);
  explicit BlockCache(Alloc alloc) : alloc_(alloc) {}
  int take(void** p, size_t n, unsigned flags) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = free_.lower_bound(n);
    if (it != free_.end() && it->first <= 2 * n + 4096) {
      *p = it->second;
      free_.erase(it);
      return 0;
    }
    const cudaError_t e = alloc_(p, n, flags);
    if (e != cudaSuccess) return static_cast<int>(e);
    size_[*p] = n;
    return 0;
  }
  int give(void* p) {
    if (p == nullptr) return 0;
    std::lock_guard<std::mutex> lk(mu_);
    const auto it = size_.find(p);
    if (it == size_.end()) return 1;
    free_.emplace(it->second, p);
    return 0;
  }

 private:
  Alloc alloc_;
  std::mutex mu_;
  std::multimap<size_t, void*> free_;
  std::map<void*, size_t> size_;
};

BlockCache& device_cache() {
  static BlockCache* c = new BlockCache([](void** p, size_t n, unsigned) { return cudaMalloc(p, n); });
  return *c;
}
BlockCache& pinned_cache() {
  static BlockCache* c = new BlockCache([](void** p, size_t n, unsigned flags) { return cudaHostAlloc(p, n, flags); });
  return *c;
}
int dev_malloc(void** p, size_t n) { return device_cache().take(p, n, 0); }
int dev_free(void* p) { return device_cache().give(p); }
int pinned_malloc(void** p, size_t n, unsigned flags) { return pinned_cache().take(p, n, flags); }
int pinned_free(void* p) { return pinned_cache().give(p); }
struct DevAllocator {
  int (*malloc_fn)(void**, size_t);
  int (*free_fn)(void*);
};
struct PinnedAllocator {
  int (*malloc_fn)(void**, size_t, unsigned);
  int (*free_fn)(void*);
};
DevAllocator g_dev_allocator{dev_malloc, dev_free};
PinnedAllocator g_pinned_allocator{pinned_malloc, pinned_free};

}  // namespace

struct NvjpegDecoder::Api {
  Status (*create_ex)(int, void*, void*, unsigned, void**) = nullptr;
  Status (*destroy)(void*) = nullptr;
  Status (*state_create)(void*, void**) = nullptr;
  Status (*state_destroy)(void*) = nullptr;
  Status (*batched_init)(void*, void*, int, int, int) = nullptr;
  Status (*batched)(void*, void*, const unsigned char* const*, const size_t*, NvImage*, cudaStream_t) = nullptr;
  // Optional: nvJPEG's own support check for the batched decoder.
  Status (*stream_create)(void*, void**) = nullptr;
  Status (*stream_destroy)(void*) = nullptr;
  Status (*stream_parse_header)(void*, const unsigned char*, size_t, void*) = nullptr;
  Status (*batched_supported)(void*, void*, int*) = nullptr;
  // Optional: regions of interest (nvjpegDecodeBatchedEx with one nvjpegDecodeParams_t per image).
  Status (*params_create)(void*, void**) = nullptr;
  Status (*params_destroy)(void*) = nullptr;
  Status (*params_output_format)(void*, int) = nullptr;
  Status (*params_roi)(void*, int, int, int, int) = nullptr;
  Status (*batched_ex)(void*, void*, const unsigned char* const*, const size_t*, NvImage*, void**, cudaStream_t) =
      nullptr;
};

std::unique_ptr<NvjpegDecoder> NvjpegDecoder::open(std::string& why, const Options& options) {
  std::unique_ptr<NvjpegDecoder> d(new NvjpegDecoder());
  std::string tried;
  for (const auto& c : candidates(options.library)) {
    d->lib_ = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (d->lib_ != nullptr) {
      d->library_ = c;
      break;
    }
    tried += (tried.empty() ? "" : ", ") + c;
  }
  if (d->lib_ == nullptr) {
    why = "nvJPEG not found (tried " + tried + "; set GPUBENCH_NVJPEG to libnvjpeg.so's path, or pip install nvidia-nvjpeg)";
    return nullptr;
  }
  d->api_ = std::make_unique<Api>();
  Api& a = *d->api_;
  auto sym = [&](const char* name, auto& fn) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(d->lib_, name));
    return fn != nullptr;
  };
  if (!sym("nvjpegCreateEx", a.create_ex) || !sym("nvjpegDestroy", a.destroy) ||
      !sym("nvjpegJpegStateCreate", a.state_create) || !sym("nvjpegJpegStateDestroy", a.state_destroy) ||
      !sym("nvjpegDecodeBatchedInitialize", a.batched_init) || !sym("nvjpegDecodeBatched", a.batched)) {
    why = d->library_ + " lacks the batched-decode functions (too old an nvJPEG)";
    return nullptr;
  }
  sym("nvjpegJpegStreamCreate", a.stream_create);
  sym("nvjpegJpegStreamDestroy", a.stream_destroy);
  sym("nvjpegJpegStreamParseHeader", a.stream_parse_header);
  sym("nvjpegDecodeBatchedSupported", a.batched_supported);
  const bool roi_calls = sym("nvjpegDecodeParamsCreate", a.params_create) &&
                         sym("nvjpegDecodeParamsDestroy", a.params_destroy) &&
                         sym("nvjpegDecodeParamsSetOutputFormat", a.params_output_format) &&
                         sym("nvjpegDecodeParamsSetROI", a.params_roi) && sym("nvjpegDecodeBatchedEx", a.batched_ex);
  d->roi_ok_ = roi_calls && options.roi;
  if (!roi_calls) d->roi_off_reason_ = "this nvJPEG has no batched ROI decoding (nvjpegDecodeBatchedEx)";
  if (roi_calls && !d->roi_ok_) d->roi_off_reason_ = "kernel_options.nvjpeg_roi: false";
  std::string errors;
  for (auto [backend, name] : {std::pair{kHardware, "hardware"}, std::pair{kGpuHybrid, "gpu_hybrid"},
                               std::pair{kDefault, "hybrid"}}) {
    const Status s = a.create_ex(backend, &g_dev_allocator, &g_pinned_allocator, 0, &d->handle_);
    if (s == 0) {
      d->backend_ = name;
      d->backend_fallback_ = errors;  // the backends tried before this one, and why each failed
      break;
    }
    d->handle_ = nullptr;
    errors += std::string(errors.empty() ? "" : "; ") + name + ": " + status_text(s);
  }
  if (d->handle_ == nullptr) {
    why = "nvJPEG (" + d->library_ + ") could not create a decoder: " + errors;
    return nullptr;
  }
  if (const Status s = a.state_create(d->handle_, &d->state_); s != 0) {
    why = "nvJPEG could not create a decoder state: " + status_text(s);
    return nullptr;
  }
  return d;
}

NvjpegDecoder::~NvjpegDecoder() {
  if (api_) {
    for (void* p : params_) api_->params_destroy(p);
    if (state_ != nullptr) api_->state_destroy(state_);
    if (handle_ != nullptr) api_->destroy(handle_);
  }
  // The library stays loaded: CUDA may still run its callbacks, and unloading buys nothing.
}

bool NvjpegDecoder::can_decode(const data::JpegInfo& info, const uint8_t* data, size_t size) const {
  if (info.progressive || info.arithmetic) return false;
  const bool rgb_like = info.components == 3 && info.color == "ycbcr";
  if (!(rgb_like || info.components == 1)) return false;
  const std::string& s = info.subsampling;
  if (!(s == "444" || s == "422" || s == "420" || s == "440" || s == "gray")) return false;
  if (info.width < 1 || info.height < 1 || info.width > 16384 || info.height > 16384) return false;
  const Api& a = *api_;
  if (a.stream_create == nullptr || a.stream_parse_header == nullptr || a.batched_supported == nullptr) return true;
  // One parsed-stream object per worker thread, reused (creating one per file allocates memory each time). The
  // loader joins its workers before the decoder goes away, so the objects die (thread exit) while it lives.
  struct StreamHolder {
    const Api* api = nullptr;
    void* stream = nullptr;
    ~StreamHolder() {
      if (stream != nullptr) api->stream_destroy(stream);
    }
  };
  thread_local StreamHolder holder;
  if (holder.stream == nullptr) {
    holder.api = &a;
    if (a.stream_create(handle_, &holder.stream) != 0) {
      holder.stream = nullptr;
      return false;
    }
  }
  int unsupported = 1;
  return a.stream_parse_header(handle_, data, size, holder.stream) == 0 &&
         a.batched_supported(handle_, holder.stream, &unsupported) == 0 && unsupported == 0;
}

bool NvjpegDecoder::decode(const std::vector<const uint8_t*>& data, const std::vector<size_t>& sizes,
                           const std::vector<uint8_t*>& dst, const std::vector<size_t>& pitch, cudaStream_t stream,
                           std::string& error, const std::vector<Roi>* roi) {
  const int n = static_cast<int>(data.size());
  if (n == 0) return true;
  if (n != initialized_batch_) {
    if (const Status s = api_->batched_init(handle_, state_, n, 1, kOutputRGBI); s != 0) {
      error = "nvjpegDecodeBatchedInitialize: " + status_text(s);
      initialized_batch_ = -1;
      return false;
    }
    initialized_batch_ = n;
  }
  std::vector<NvImage> out(static_cast<size_t>(n));
  for (size_t i = 0; i < out.size(); ++i) {
    std::memset(&out[i], 0, sizeof(NvImage));
    out[i].channel[0] = dst[i];
    out[i].pitch[0] = pitch[i];
  }
  if (roi != nullptr) {
    if (!roi_ok_ || roi->size() != data.size()) {
      error = roi_ok_ ? "one region of interest per file is needed" : "ROI decoding is off: " + roi_off_reason_;
      return false;
    }
    // Any failure here turns ROI decoding off for the decoder's life; the caller decodes the batch whole instead.
    auto off = [&](const char* call, Status s) {
      error = std::string(call) + ": " + status_text(s);
      roi_ok_ = false;
      roi_off_reason_ = error;
      initialized_batch_ = -1;
      return false;
    };
    const Api& a = *api_;
    while (params_.size() < out.size()) {
      void* p = nullptr;
      if (const Status s = a.params_create(handle_, &p); s != 0) return off("nvjpegDecodeParamsCreate", s);
      params_.push_back(p);
      if (const Status s = a.params_output_format(p, kOutputRGBI); s != 0) {
        return off("nvjpegDecodeParamsSetOutputFormat", s);
      }
    }
    for (size_t i = 0; i < out.size(); ++i) {
      const Roi& r = (*roi)[i];
      if (const Status s = a.params_roi(params_[i], r.x, r.y, r.w, r.h); s != 0) {
        return off("nvjpegDecodeParamsSetROI", s);
      }
    }
    const Status s = a.batched_ex(handle_, state_, data.data(), sizes.data(), out.data(), params_.data(), stream);
    return s == 0 || off("nvjpegDecodeBatchedEx", s);
  }
  if (const Status s = api_->batched(handle_, state_, data.data(), sizes.data(), out.data(), stream); s != 0) {
    error = "nvjpegDecodeBatched: " + status_text(s);
    initialized_batch_ = -1;  // a failed batch must be re-initialised
    return false;
  }
  return true;
}

}  // namespace gpubench::engine
