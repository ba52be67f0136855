#include "input_pipeline.h"

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "gpubench/data/decode_choice.hpp"
#include "gpubench/data/decode_split.hpp"
#include "gpubench/data/loader.hpp"
#include "cuda/gpu_jpeg_stage.h"
#include "host_clock.h"

namespace gpubench::engine {

namespace {

constexpr const char* kAugmentation =
    "RandomResizedCrop(size, scale=(0.08, 1), ratio=(3/4, 4/3), bilinear, antialias) + RandomHorizontalFlip(0.5) + "
    "Normalize(ImageNet mean/std), as torchvision's ImageNet training recipe";

constexpr int kDeviceSlots = 2;  // finished batches on the device: one being consumed, one ready

int64_t default_workers(int world) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max<int64_t>(1, (static_cast<int64_t>(cores) - 1) / std::max(1, world));
}

}  // namespace

at::Tensor normalize_into(const at::Tensor& u8_nhwc, at::Tensor& out) {
  const auto opts = at::TensorOptions().dtype(at::kFloat).device(out.device());
  const at::Tensor mean =
      at::tensor({kImageNetMean[0], kImageNetMean[1], kImageNetMean[2]}, opts).view({1, 3, 1, 1});
  const at::Tensor inv =
      at::tensor({1 / kImageNetStd[0], 1 / kImageNetStd[1], 1 / kImageNetStd[2]}, opts).view({1, 3, 1, 1});
  out.copy_(u8_nhwc.permute({0, 3, 1, 2}));
  out.sub_(mean).mul_(inv);
  return out;
}

struct InputPipeline::Impl {
  struct Slot {
    at::Tensor images, labels, staging, labels_pinned, descs_pinned, descs_dev;
    std::unique_ptr<c10::Event> ready, consumed;  ///< on an accelerator: the batch is on it; the step has read it
    bool consumed_recorded = false;
  };

  data::ImageFolder folder;
  std::unique_ptr<data::FolderLoader> loader;
  at::Device device = at::kCPU;
  bool cuda = false, gpu_decode = false;
  bool mixed = false;       ///< decode: mixed: `split` steers the workers' share of each batch
  data::DecodeSplit split;
  bool calibrate = false;   ///< decode: auto on a CUDA device: the run measures, then apply_plan
  std::string why_not_gpu;  ///< why nvJPEG is not open (empty when it is)
  data::LoaderOptions loader_options;  ///< what the loader was made with (the CPU path rebuilds it in pixel mode)
  int64_t batch = 0, out_size = 224, take = 0;
  int64_t workers = 0;
  int world = 1;
  DataRecord record;
  std::vector<Slot> slots;
  at::Tensor mean, inv_std, arena;
  std::optional<c10::Stream> side;  ///< the copies' (and the GPU stage's) stream on an accelerator
  std::unique_ptr<GpuJpegStage> decoder;
  GpuJpegStage::Hooks hooks;  ///< stage_hooks(), made once where nvJPEG opens
  /// Per step: an event before the wait for the batch and one after its copy, on the compute stream. The time
  /// between them on the device is how long the GPU sat idle for input (the host may wait while the GPU is still
  /// busy with earlier steps: that wait costs nothing, and this does not count it).
  std::vector<std::pair<std::unique_ptr<c10::Event>, std::unique_ptr<c10::Event>>> marks;
  size_t marks_used = 0;
  bool decode_failure_noted = false;
  std::vector<std::string>* notes = nullptr;

  /// The record's data.decoder for the path set now.
  std::string decoder_text() const {
    if (gpu_decode) return decoder->describe();
    return data::jpeg_library_version() + " on " + std::to_string(workers) +
           " worker threads (crop window only, DCT-domain downscaling where the crop allows)";
  }

  /// Waits (holding `lk`) until no pass is running and the prefetch thread is outside the loader.
  void wait_idle(std::unique_lock<std::mutex>& lk) {
    cv.wait(lk, [&] { return stop || (!active && !busy); });
  }

  std::mutex mu;
  std::condition_variable cv;
  std::deque<int> ready, free_slots;
  bool stop = false, active = false, busy = false;
  int64_t gen = 0;
  std::string error;
  InputPassStats pass;
  int64_t fallback_decodes = 0;
  std::thread thread;

  void prefetch_loop() {
    std::optional<c10::DeviceGuard> guard;
    if (cuda) guard.emplace(device);
    for (;;) {
      int r = -1;
      int64_t g = 0;
      {
        std::unique_lock<std::mutex> lk(mu);
        cv.wait(lk, [&] { return stop || (active && error.empty() && !free_slots.empty()); });
        if (stop) return;
        r = free_slots.front();
        free_slots.pop_front();
        g = gen;
        busy = true;
      }
      data::HostBatch* hb = nullptr;
      std::string err;
      double stage_s = 0;
      double share = -1;
      try {
        const auto w0 = Clock::now();
        hb = loader->next();
        if (mixed && hb != nullptr) {
          // A pass's first batch always waits for workers that just started: it says nothing about the split.
          const double waited = seconds_since(w0);
          int64_t queued = 0;
          {
            std::lock_guard<std::mutex> lk(mu);
            queued = static_cast<int64_t>(ready.size());
          }
          share = hb->index == 0 ? split.share() : split.update(waited, queued);
          loader->set_cpu_share(share);
        }
        const auto t0 = Clock::now();
        if (hb != nullptr) prepare(*hb, slots[static_cast<size_t>(r)]);
        stage_s = seconds_since(t0);
      } catch (const std::exception& e) {
        err = e.what();
      }
      if (hb != nullptr) loader->release(hb);
      std::lock_guard<std::mutex> lk(mu);
      busy = false;
      if (hb != nullptr && err.empty()) {
        pass.stage_busy_s += stage_s;
        pass.stage_images += batch;
        if (share >= 0) {
          pass.cpu_share_sum += share;
          ++pass.cpu_share_batches;
        }
      }
      if (!err.empty()) error = err;
      if (hb != nullptr && err.empty() && g == gen) {
        ready.push_back(r);
      } else {
        free_slots.push_back(r);
        if (hb == nullptr && g == gen) active = false;  // the pass is done
      }
      cv.notify_all();
    }
  }

  void prepare(data::HostBatch& hb, Slot& slot) {
    std::optional<c10::StreamGuard> sg;
    if (cuda) {
      sg.emplace(*side);
      if (slot.consumed_recorded) slot.consumed->block(*side);  // the step has read this slot's last batch
    }
    std::memcpy(slot.labels_pinned.data_ptr<int64_t>(), hb.labels.data(), sizeof(int64_t) * hb.labels.size());
    slot.labels.copy_(slot.labels_pinned, /*non_blocking=*/true);
    const at::Tensor host = at::from_blob(hb.pixels, {batch, out_size, out_size, 3}, at::TensorOptions().dtype(at::kByte));
    if (gpu_decode) {
      prepare_gpu(hb, slot, host);
    } else if (cuda) {
      slot.staging.copy_(host, /*non_blocking=*/true);
      normalize_into(slot.staging, slot.images);
    } else {
      normalize_into(host, slot.images);
    }
    if (cuda) {
      slot.ready->record(*side);
      slot.ready->synchronize();  // the host buffers go back to the workers only once the copies are done
    }
  }

  /// What the GPU stage tells the pipeline (set once, when nvJPEG opens).
  GpuJpegStage::Hooks stage_hooks() {
    GpuJpegStage::Hooks h;
    h.roi_failed = [this](const std::string& why) {
      std::lock_guard<std::mutex> lk(mu);
      record.decoder += "; ROI decoding failed (" + why + "): whole images decoded from then on";
    };
    h.batch_failed = [this](const std::string& why) {
      if (decode_failure_noted) return;
      decode_failure_noted = true;
      std::lock_guard<std::mutex> lk(mu);
      record.decode_fallback = "nvJPEG failed on a batch (" + why + "); such batches are decoded on the CPU";
    };
    h.decode_on_cpu = [this](data::HostBatch& hb, int64_t i, int64_t fallback) {
      if (!loader->decode_on_cpu(hb, i, fallback)) return false;
      ++fallback_decodes;
      return true;
    };
    return h;
  }

  void prepare_gpu(data::HostBatch& hb, Slot& slot, const at::Tensor& host) {
    decoder->prepare(hb, batch, out_size, host, slot.staging, slot.descs_pinned, slot.descs_dev, slot.images, *side,
                     hooks);
  }
};

InputPipeline::InputPipeline(const Scenario& s, const ResolvedDevice& device, const Workload& workload,
                             int64_t batch_size, int rank, int world, bool channels_last,
                             std::vector<std::string>& notes, const std::atomic<bool>* stop)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.notes = &notes;
  if (workload.image_size() <= 0) {
    throw data::DatasetError("data: folder feeds image classifiers (resnet50); " + s.model + " takes no images");
  }
  data::ScanLimits limits;
  limits.stop = stop;
  m.folder = data::scan_image_folder(s.data_path, limits);
  if (m.folder.links_outside > 0) {
    notes.push_back(std::to_string(m.folder.links_outside) + " link(s) in " + s.data_path +
                    " lead out of it: skipped, as files outside the data set are never read");
  }
  const auto images = static_cast<int64_t>(m.folder.samples.size());
  epoch_images_ = data::images_per_epoch(m.folder, s.is_set("dataset_size") ? std::optional<int64_t>(s.dataset_size)
                                                                            : std::nullopt,
                                         batch_size, world, workload.num_classes(), s.model);
  m.device = device.device;
  m.cuda = device.device.is_cuda();
  m.batch = batch_size;
  m.out_size = workload.image_size();
  m.take = epoch_images_;
  m.workers = s.data_workers > 0 ? s.data_workers : default_workers(world);
  m.world = std::max(1, world);

  DataRecord& r = m.record;
  r.source = "folder";
  r.path = s.data_path;
  r.images = images;
  r.classes = static_cast<int64_t>(m.folder.classes.size());
  r.other_files = m.folder.other_files;
  r.links_outside = m.folder.links_outside;
  r.bytes = m.folder.bytes;
  r.listing_digest = m.folder.listing_digest;
  r.workers = m.workers;
  r.prefetch = s.prefetch;
  r.augmentation = kAugmentation;
  r.data_only = s.data_only;

  // Decoder: nvJPEG where asked, or open for decode: auto's calibration on a CUDA device (data/decode_choice.hpp);
  // else libjpeg-turbo on the workers.
  const data::DecodeChoice choice = data::choose_decode(s.decode, m.workers, m.cuda);
  r.decode_reason = choice.reason;
  m.calibrate = choice.calibrate;
  std::string& why_not_gpu = m.why_not_gpu;
  if (!m.cuda && s.decode != "cpu") {
    why_not_gpu = "GPU decoding needs a CUDA device (this run is on " + device.id + ")";
  } else if (choice.try_gpu) {
    if (!m.cuda) {
      why_not_gpu = "GPU decoding needs a CUDA device (this run is on " + device.id + ")";
    } else {
      m.decoder = GpuJpegStage::open({s.nvjpeg_library, s.kernel_options.nvjpeg_roi}, why_not_gpu);
      m.gpu_decode = m.decoder != nullptr;
      if (m.gpu_decode) m.hooks = m.stage_hooks();
    }
    if (!m.gpu_decode && choice.required) {
      throw std::runtime_error("decode: " + s.decode + " is not possible here: " + why_not_gpu);
    }
    if (!m.gpu_decode) r.decode_reason += "; nvJPEG is not usable here, so the CPU decodes";
  }
  if (choice.required && !m.cuda) throw std::runtime_error("decode: " + s.decode + " is not possible here: " + why_not_gpu);
  m.mixed = m.gpu_decode && choice.mixed;
  r.decode = m.mixed ? "mixed" : m.gpu_decode ? "gpu" : "cpu";
  r.decoder = m.decoder_text();
  if (!m.gpu_decode) {
    if (!why_not_gpu.empty()) {
      r.decode_fallback = why_not_gpu;
      if (m.cuda && !m.calibrate) notes.push_back("decode: auto decodes on the CPU: " + why_not_gpu);
    }
  }

  data::LoaderOptions lo;
  lo.workers = static_cast<int>(m.workers);
  lo.prefetch = static_cast<int>(s.prefetch);
  lo.batch_size = batch_size;
  lo.out_size = static_cast<int>(m.out_size);
  lo.bytes_mode = m.gpu_decode;
  lo.seed = s.seed;
  lo.rank = rank;
  lo.world = world;
  if (m.gpu_decode) {
    GpuJpegStage* dec = m.decoder.get();
    lo.gpu_can_decode = [dec](const data::JpegInfo& info, const uint8_t* bytes, size_t size) {
      return dec->can_decode(info, bytes, size);
    };
  }
  if (m.cuda) {
    lo.allocate = [](size_t n) {
      at::Tensor t = at::empty({static_cast<int64_t>(n)}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
      return std::shared_ptr<uint8_t>(t.data_ptr<uint8_t>(), [t](uint8_t*) mutable { t.reset(); });
    };
  }

  // Device slots.
  const auto fopts = at::TensorOptions().dtype(at::kFloat).device(m.device);
  for (int i = 0; i < kDeviceSlots; ++i) {
    Impl::Slot slot;
    slot.images = at::empty({batch_size, 3, m.out_size, m.out_size}, fopts);
    if (channels_last) slot.images = slot.images.contiguous(at::MemoryFormat::ChannelsLast);
    slot.labels = at::empty({batch_size}, fopts.dtype(at::kLong));
    slot.labels_pinned = at::empty({batch_size}, at::TensorOptions().dtype(at::kLong).pinned_memory(m.cuda));
    if (m.cuda) {
      slot.staging = at::empty({batch_size, m.out_size, m.out_size, 3}, fopts.dtype(at::kByte));
      if (m.decoder != nullptr) {
        const int64_t table_bytes = m.decoder->crop_table_bytes(batch_size);
        slot.descs_pinned = at::empty({table_bytes}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
        slot.descs_dev = at::empty({table_bytes}, fopts.dtype(at::kByte));
      }
      slot.ready = std::make_unique<c10::Event>(m.device.type());
      slot.consumed = std::make_unique<c10::Event>(m.device.type());
    }
    m.slots.push_back(std::move(slot));
    m.free_slots.push_back(i);
  }
  if (m.cuda) {
    m.side = c10::impl::getDeviceGuardImpl(m.device.type())->getStreamFromGlobalPool(m.device, /*isHighPriority=*/false);
  }
  m.loader_options = lo;
  m.loader = std::make_unique<data::FolderLoader>(m.folder, lo);
  if (m.mixed) m.loader->set_cpu_share(m.split.share());
  m.thread = std::thread([&m] { m.prefetch_loop(); });
}

InputPipeline::~InputPipeline() {
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  // The prefetch thread may be inside loader->next(): shutting the loader down wakes it (next() returns null).
  if (impl_->loader) impl_->loader->shutdown();
  if (impl_->thread.joinable()) impl_->thread.join();
}

void InputPipeline::start_pass(int64_t pass, int64_t batches) {
  Impl& m = *impl_;
  {
    std::unique_lock<std::mutex> lk(m.mu);
    m.active = false;
    ++m.gen;
    m.cv.notify_all();
    m.cv.wait(lk, [&] { return !m.busy; });
    while (!m.ready.empty()) {
      m.free_slots.push_back(m.ready.front());
      m.ready.pop_front();
    }
  }
  // Keys: timed epochs 0, 1, ...; other passes negative, so they never repeat an epoch's order.
  m.loader->start_epoch(pass, batches, m.take);  // also restarts the loader's counters
  m.marks_used = 0;  // an earlier pass's marks are not this pass's wait
  InputPassStats fresh;
  fresh.workers = m.workers;
  std::lock_guard<std::mutex> lk(m.mu);
  m.pass = fresh;
  m.fallback_decodes = 0;
  m.error.clear();
  m.active = true;
  m.cv.notify_all();
}

void InputPipeline::feed(Batch& batch) {
  Impl& m = *impl_;
  int r = -1;
  c10::Event* after = nullptr;
  std::optional<c10::Stream> compute;  // the step's stream
  if (m.cuda) {
    compute = c10::impl::getDeviceGuardImpl(m.device.type())->getStream(m.device);
    if (m.marks_used == m.marks.size()) {  // timed events (BACKEND_DEFAULT; the slots' events do not time)
      m.marks.emplace_back(std::make_unique<c10::Event>(m.device.type(), c10::EventFlag::BACKEND_DEFAULT),
                           std::make_unique<c10::Event>(m.device.type(), c10::EventFlag::BACKEND_DEFAULT));
    }
    auto& mark = m.marks[m.marks_used++];
    mark.first->record(*compute);
    after = mark.second.get();
  }
  {
    std::unique_lock<std::mutex> lk(m.mu);
    const auto t0 = Clock::now();
    m.cv.wait(lk, [&] { return !m.ready.empty() || !m.error.empty() || m.stop || (!m.active && !m.busy); });
    m.pass.wait_s += seconds_since(t0);
    if (!m.error.empty()) throw std::runtime_error("input pipeline: " + m.error);
    if (m.ready.empty()) throw std::logic_error("input pipeline: the pass has no batch left");
    r = m.ready.front();
    m.ready.pop_front();
  }
  Impl::Slot& slot = m.slots[static_cast<size_t>(r)];
  if (m.cuda) slot.ready->block(*compute);
  batch.inputs[0].copy_(slot.images);
  batch.target.copy_(slot.labels);
  if (after != nullptr) after->record(*compute);
  if (m.cuda) {
    slot.consumed->record(*compute);
    slot.consumed_recorded = true;
  }
  std::lock_guard<std::mutex> lk(m.mu);
  m.free_slots.push_back(r);
  m.cv.notify_all();
}

InputPassStats InputPipeline::take_pass_stats() {
  Impl& m = *impl_;
  const data::LoaderStats ls = m.loader->take_stats();
  std::lock_guard<std::mutex> lk(m.mu);
  InputPassStats p = m.pass;
  p.images = ls.images;
  p.worker_busy_s = ls.worker_busy_s;
  p.files_skipped = ls.files_skipped;
  p.cpu_decoded = ls.cpu_decoded + m.fallback_decodes;
  p.cpu_shared = ls.cpu_shared;
  p.device_wait_s = p.wait_s;  // the CPU is the device
  if (m.cuda) {  // the caller synchronised the device: every event has completed
    double ms = 0;
    for (size_t i = 0; i < m.marks_used; ++i) ms += m.marks[i].first->elapsedTime(*m.marks[i].second);
    p.device_wait_s = ms / 1e3;
    m.marks_used = 0;
  }
  m.pass.wait_s = 0;
  m.pass.stage_busy_s = 0;
  m.pass.stage_images = 0;
  m.pass.cpu_share_sum = 0;
  m.pass.cpu_share_batches = 0;
  return p;
}

double InputPipeline::page_cache() const { return data::page_cache_fraction(impl_->folder.samples); }

DataRecord InputPipeline::describe() const {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lk(m.mu);
  DataRecord r = m.record;
  r.files_skipped = m.loader->skipped_total();
  for (const auto& f : m.loader->skipped_files(10)) r.skipped_examples.push_back(SkippedFileRecord{f.path, f.reason});
  return r;
}

bool InputPipeline::wants_calibration() const { return impl_->calibrate; }

data::DecodeRates InputPipeline::calibration_base() const {
  const Impl& m = *impl_;
  data::DecodeRates r;
  r.batch = m.batch;
  r.workers = m.workers;
  r.gpu_usable = m.gpu_decode;
  r.gpu_unusable = m.why_not_gpu;
  if (m.gpu_decode) r.gpu_backend = m.decoder->backend();
  return r;
}

int64_t InputPipeline::batches_per_pass() const {
  return std::max<int64_t>(1, epoch_images_ / (impl_->batch * impl_->world));
}

void InputPipeline::start_fixed_pass(int64_t pass, int64_t batches, double cpu_share) {
  Impl& m = *impl_;
  if (cpu_share < 1.0 && !m.gpu_decode) throw std::logic_error("input pipeline: a GPU share without nvJPEG open");
  idle();
  {
    std::lock_guard<std::mutex> lk(m.mu);
    m.split = data::DecodeSplit::held(cpu_share);
  }
  m.loader->set_cpu_share(cpu_share);  // read by the workers per sample: set before the pass's first claim
  start_pass(pass, batches);
}

void InputPipeline::idle() {
  Impl& m = *impl_;
  start_pass(0, 0);  // a pass of no batch: the prefetch thread finds it empty and goes idle
  std::unique_lock<std::mutex> lk(m.mu);
  m.wait_idle(lk);
}

void InputPipeline::apply_plan(const data::DecodeRates& rates, const data::DecodePlan& plan) {
  Impl& m = *impl_;
  idle();
  std::unique_lock<std::mutex> lk(m.mu);
  m.wait_idle(lk);
  if (plan.decode == "cpu" && m.loader_options.bytes_mode) {
    // The prefetch thread is outside the loader and waits for a pass: the old loader's workers are joined here.
    m.loader.reset();
    data::LoaderOptions lo = m.loader_options;
    lo.bytes_mode = false;
    lo.gpu_can_decode = nullptr;
    m.loader_options = lo;
    m.loader = std::make_unique<data::FolderLoader>(m.folder, lo);
    m.gpu_decode = false;
    m.decoder.reset();
  }
  m.mixed = plan.decode == "mixed";
  m.split = data::DecodeSplit(plan.decode == "mixed" ? plan.cpu_share : plan.decode == "cpu" ? 1.0 : 0.0);
  m.calibrate = false;
  if (m.loader_options.bytes_mode) m.loader->set_cpu_share(m.split.share());
  DataRecord& r = m.record;
  r.decode = m.mixed ? "mixed" : m.gpu_decode ? "gpu" : "cpu";
  r.decoder = m.decoder_text();
  r.decode_reason = plan.reason;
  if (m.gpu_decode) r.decode_fallback.clear();
  DecodeCalibrationRecord c;
  c.step_img_per_s = rates.step;
  c.cpu_img_per_s = rates.cpu;
  c.gpu_img_per_s = rates.gpu;
  c.gpu_backend = rates.gpu_backend;
  c.fed_cpu_img_per_s = rates.fed_cpu;
  c.fed_gpu_img_per_s = rates.fed_gpu;
  c.fed_mixed_img_per_s = rates.fed_mixed;
  c.mixed_share = rates.mixed_share;
  c.choice = r.decode;
  c.expected_img_per_s = plan.expected;
  c.seconds = rates.seconds;
  r.decode_calibration = c;
}

}  // namespace gpubench::engine
