#include "gpubench/data/loader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

#include "gpubench/data/decode_split.hpp"

namespace gpubench::data {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kMaxAttempts = 64;  // candidate files per sample before the loader gives up

/// Whether an end-of-image marker is near the end: a truncated file has none, and nvJPEG's hardware decoder may
/// decode one without complaint, so such files go to libjpeg, which refuses them.
bool has_end_marker(const std::vector<uint8_t>& b) {
  const size_t from = b.size() > 1024 ? b.size() - 1024 : 0;
  for (size_t i = b.size(); i-- > from + 1;) {
    if (b[i] == 0xD9 && b[i - 1] == 0xFF) return true;
  }
  return false;
}

}  // namespace

bool read_file(const std::string& path, std::vector<uint8_t>& bytes, std::string& error, size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    error = std::string("cannot open: ") + std::strerror(errno);
    return false;
  }
  struct stat st {};
  bool ok = false;
  if (::fstat(fd, &st) != 0) {
    error = std::string("cannot stat: ") + std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    error = "not a regular file";
  } else if (st.st_size == 0) {
    error = "empty file";
  } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    error = "file of " + std::to_string(st.st_size) + " bytes exceeds the " + std::to_string(max_bytes) + "-byte limit";
  } else {
    bytes.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < bytes.size()) {
      const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    bytes.resize(got);
    ok = got > 0;
    if (!ok) error = std::string("read failed: ") + std::strerror(errno);
  }
  ::close(fd);
  return ok;
}

void probe_folder(const ImageFolder& folder, size_t max_files) {
  if (folder.samples.empty()) throw DatasetError("'" + folder.root + "' holds no JPEG files");
  const size_t step = std::max<size_t>(1, folder.samples.size() / std::max<size_t>(1, max_files));
  std::vector<uint8_t> bytes;
  std::string first_error;
  size_t tried = 0;
  for (size_t i = 0; i < folder.samples.size() && tried < max_files; i += step, ++tried) {
    std::string err;
    JpegInfo info;
    if (read_file(folder.samples[i].path, bytes, err) && read_jpeg_info(bytes.data(), bytes.size(), info, err)) return;
    if (first_error.empty()) first_error = folder.samples[i].path + ": " + err;
  }
  throw DatasetError("none of the " + std::to_string(tried) + " files probed in '" + folder.root +
                     "' is a readable JPEG (" + first_error + ")");
}

bool decode_and_augment(const std::vector<uint8_t>& bytes, const CropParams& crop, int out_size, uint8_t* dst,
                        std::string& error) {
  thread_local DecodedWindow decoded;
  if (!decode_jpeg(bytes.data(), bytes.size(), crop.box, out_size, out_size, decoded, error)) return false;
  resize_window(decoded.image, decoded.window, out_size, out_size, crop.flip, dst);
  return true;
}

struct FolderLoader::State {
  std::mutex mu;
  std::condition_variable work_cv, ready_cv, idle_cv;
  bool stop = false;
  std::string error;
  int64_t epoch = 0, batches = 0, next_pos = 0, next_consume = 0;
  int in_flight = 0;
  std::vector<int64_t> order;
  std::vector<HostBatch> slots;
  std::vector<int64_t> slot_batch, slot_done;
  std::vector<std::shared_ptr<uint8_t>> buffers;
  std::vector<std::thread> threads;
  LoaderStats stats;
  std::unique_ptr<std::atomic<uint8_t>[]> bad;  // per sample of the folder: known unreadable
  std::vector<SkippedFile> skipped;
  int64_t skipped_total = 0;
  std::atomic<int64_t> cpu_per_batch{0};  // bytes mode: the first samples of a batch decoded here (set_cpu_share)

  bool claimable(int64_t batch_size) const {
    if (stop || !error.empty() || next_pos >= batches * batch_size) return false;
    const int64_t b = next_pos / batch_size;
    return slot_batch[static_cast<size_t>(b % static_cast<int64_t>(slots.size()))] == b;
  }
};

FolderLoader::FolderLoader(const ImageFolder& folder, LoaderOptions options)
    : options_(std::move(options)), folder_(folder), st_(std::make_unique<State>()) {
  if (options_.batch_size < 1) throw std::invalid_argument("the loader needs a batch size of at least 1");
  options_.workers = std::max(1, options_.workers);
  options_.prefetch = std::max(1, options_.prefetch);
  if (!options_.allocate) {
    options_.allocate = [](size_t n) { return std::shared_ptr<uint8_t>(new uint8_t[n], std::default_delete<uint8_t[]>()); };
  }
  const auto n = static_cast<size_t>(options_.batch_size);
  st_->bad = std::make_unique<std::atomic<uint8_t>[]>(folder.samples.size());
  for (size_t i = 0; i < folder.samples.size(); ++i) st_->bad[i].store(0, std::memory_order_relaxed);
  st_->slots.resize(static_cast<size_t>(options_.prefetch));
  st_->slot_batch.assign(st_->slots.size(), -1);
  st_->slot_done.assign(st_->slots.size(), 0);
  for (auto& s : st_->slots) {
    st_->buffers.push_back(options_.allocate(n * sample_bytes()));
    s.pixels = st_->buffers.back().get();
    s.size = options_.batch_size;
    s.labels.assign(n, 0);
    s.sample_ids.assign(n, -1);
    if (options_.bytes_mode) {
      s.files.resize(n);
      s.crops.resize(n);
      s.infos.resize(n);
      s.on_cpu.assign(n, 0);
    }
  }
  for (int w = 0; w < options_.workers; ++w) st_->threads.emplace_back([this] { worker(); });
}

FolderLoader::~FolderLoader() { shutdown(); }

void FolderLoader::shutdown() {
  {
    std::lock_guard<std::mutex> lk(st_->mu);
    st_->stop = true;
  }
  st_->work_cv.notify_all();
  st_->ready_cv.notify_all();
  st_->idle_cv.notify_all();
  for (auto& t : st_->threads) {
    if (t.joinable()) t.join();
  }
}

void FolderLoader::start_epoch(int64_t epoch, int64_t batches, int64_t take) {
  std::unique_lock<std::mutex> lk(st_->mu);
  st_->batches = 0;  // nothing more to claim; wait for the work in flight
  st_->idle_cv.wait(lk, [this] { return st_->in_flight == 0 || st_->stop; });
  if (st_->stop) return;
  const auto n = static_cast<int64_t>(folder_.samples.size());
  st_->order = epoch_order(n, options_.seed, epoch, std::min(take, n), options_.rank, options_.world);
  const int64_t have = static_cast<int64_t>(st_->order.size()) / options_.batch_size;
  if (batches > have) {
    throw std::runtime_error("an epoch of " + std::to_string(batches) + " batches of " +
                             std::to_string(options_.batch_size) + " needs more than the " +
                             std::to_string(st_->order.size()) + " images this rank visits");
  }
  st_->epoch = epoch;
  st_->stats = LoaderStats{};  // the new epoch's counters start here, before any worker can add to them
  st_->batches = batches;
  st_->next_pos = 0;
  st_->next_consume = 0;
  st_->error.clear();
  const auto slots = static_cast<int64_t>(st_->slots.size());
  for (int64_t s = 0; s < slots; ++s) {
    st_->slot_batch[static_cast<size_t>(s)] = s < batches ? s : -1;
    st_->slot_done[static_cast<size_t>(s)] = 0;
  }
  lk.unlock();
  st_->work_cv.notify_all();
}

HostBatch* FolderLoader::next() {
  std::unique_lock<std::mutex> lk(st_->mu);
  if (st_->stop || st_->next_consume >= st_->batches) return nullptr;
  const auto s = static_cast<size_t>(st_->next_consume % static_cast<int64_t>(st_->slots.size()));
  st_->ready_cv.wait(lk, [&] { return st_->stop || !st_->error.empty() || st_->slot_done[s] == options_.batch_size; });
  if (!st_->error.empty()) throw std::runtime_error(st_->error);
  if (st_->stop) return nullptr;
  HostBatch* b = &st_->slots[s];
  b->index = st_->next_consume++;
  return b;
}

void FolderLoader::release(HostBatch* batch) {
  if (batch == nullptr) return;
  {
    std::lock_guard<std::mutex> lk(st_->mu);
    const auto slots = static_cast<int64_t>(st_->slots.size());
    const auto s = static_cast<size_t>(batch->index % slots);
    st_->slot_done[s] = 0;
    const int64_t nb = st_->slot_batch[s] + slots;
    st_->slot_batch[s] = nb < st_->batches ? nb : -1;
  }
  st_->work_cv.notify_all();
}

void FolderLoader::worker() {
  std::unique_lock<std::mutex> lk(st_->mu);
  for (;;) {
    st_->work_cv.wait(lk, [this] { return st_->stop || st_->claimable(options_.batch_size); });
    if (st_->stop) return;
    const int64_t pos = st_->next_pos++;
    const int64_t b = pos / options_.batch_size;
    const auto s = static_cast<size_t>(b % static_cast<int64_t>(st_->slots.size()));
    const int64_t epoch = st_->epoch;
    ++st_->in_flight;
    lk.unlock();
    LoaderStats local;
    const auto t0 = Clock::now();
    const bool ok = process(epoch, pos, st_->slots[s], pos % options_.batch_size, local);
    local.worker_busy_s = std::chrono::duration<double>(Clock::now() - t0).count();
    lk.lock();
    --st_->in_flight;
    st_->stats.images += ok ? 1 : 0;
    st_->stats.worker_busy_s += local.worker_busy_s;
    st_->stats.bytes_read += local.bytes_read;
    st_->stats.files_skipped += local.files_skipped;
    st_->stats.cpu_decoded += local.cpu_decoded;
    st_->stats.cpu_shared += local.cpu_shared;
    if (!ok && st_->error.empty()) {
      st_->error = "no readable JPEG found for sample " + std::to_string(pos) + " of the epoch after " +
                   std::to_string(kMaxAttempts) + " candidate files (" + std::to_string(st_->skipped_total) +
                   " unreadable files so far" +
                   (st_->skipped.empty() ? std::string() : ", e.g. " + st_->skipped[0].path + ": " + st_->skipped[0].reason) +
                   ")";
    }
    if (ok && ++st_->slot_done[s] == options_.batch_size) st_->ready_cv.notify_all();
    if (!ok) st_->ready_cv.notify_all();
    if (st_->in_flight == 0) st_->idle_cv.notify_all();
  }
}

bool FolderLoader::process(int64_t epoch, int64_t pos, HostBatch& slot, int64_t i, LoaderStats& local) {
  thread_local std::vector<uint8_t> bytes;
  const auto n = static_cast<int64_t>(st_->order.size());
  const auto ui = static_cast<size_t>(i);
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    // The sample's own file first, then others spread over the epoch (deterministic for the seed).
    const int64_t id = st_->order[static_cast<size_t>((pos + static_cast<int64_t>(attempt) * 7919) % n)];
    const Sample& sample = folder_.samples[static_cast<size_t>(id)];
    if (st_->bad[static_cast<size_t>(id)].load(std::memory_order_relaxed) != 0) {
      ++local.files_skipped;
      continue;
    }
    std::string err;
    JpegInfo info;
    bool ok = read_file(sample.path, bytes, err);
    if (ok) {
      local.bytes_read += static_cast<int64_t>(bytes.size());
      ok = read_jpeg_info(bytes.data(), bytes.size(), info, err);
    }
    Rng rng(options_.seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(pos) * kMaxAttempts + static_cast<uint64_t>(attempt));
    CropParams crop;
    if (ok) crop = random_resized_crop(info.width, info.height, rng);
    bool on_gpu = false, shared = false;
    if (ok && options_.bytes_mode) {
      // The split's share is decided before the GPU decoder is asked (its header parse costs a worker time that a
      // sample decoded here does not need).
      shared = i < st_->cpu_per_batch.load(std::memory_order_relaxed);
      on_gpu = !shared && options_.gpu_can_decode && options_.gpu_can_decode(info, bytes.data(), bytes.size()) &&
               has_end_marker(bytes);
    }
    if (on_gpu) {
      slot.files[ui].assign(bytes.begin(), bytes.end());
    } else if (ok) {
      ok = decode_and_augment(bytes, crop, options_.out_size, slot.pixels + ui * sample_bytes(), err);
    }
    if (!ok) {
      ++local.files_skipped;
      if (st_->bad[static_cast<size_t>(id)].exchange(1) == 0) {
        std::lock_guard<std::mutex> lk(st_->mu);
        ++st_->skipped_total;
        if (st_->skipped.size() < 10) st_->skipped.push_back(SkippedFile{sample.path, err});
      }
      continue;
    }
    slot.labels[ui] = sample.label;
    slot.sample_ids[ui] = id;
    if (options_.bytes_mode) {
      slot.crops[ui] = crop;
      slot.infos[ui] = info;
      slot.on_cpu[ui] = on_gpu ? 0 : 1;
      if (!on_gpu) {
        slot.files[ui].clear();
        ++(shared ? local.cpu_shared : local.cpu_decoded);
      }
    }
    return true;
  }
  return false;
}

void FolderLoader::set_cpu_share(double share) {
  st_->cpu_per_batch.store(DecodeSplit::cpu_samples(share, options_.batch_size), std::memory_order_relaxed);
}

bool FolderLoader::decode_on_cpu(HostBatch& batch, int64_t i, int64_t fallback) {
  const auto ui = static_cast<size_t>(i);
  std::string err;
  uint8_t* dst = batch.pixels + ui * sample_bytes();
  if (decode_and_augment(batch.files[ui], batch.crops[ui], options_.out_size, dst, err)) {
    batch.on_cpu[ui] = 1;
    return true;
  }
  const int64_t id = batch.sample_ids[ui];
  std::lock_guard<std::mutex> lk(st_->mu);
  ++st_->stats.files_skipped;
  if (id >= 0 && st_->bad[static_cast<size_t>(id)].exchange(1) == 0) {
    ++st_->skipped_total;
    if (st_->skipped.size() < 10) st_->skipped.push_back(SkippedFile{folder_.samples[static_cast<size_t>(id)].path, err});
  }
  const auto uf = static_cast<size_t>(fallback);
  if (fallback < 0 || fallback == i || !decode_and_augment(batch.files[uf], batch.crops[uf], options_.out_size, dst, err)) {
    return false;
  }
  batch.labels[ui] = batch.labels[uf];
  batch.on_cpu[ui] = 1;
  return true;
}

LoaderStats FolderLoader::take_stats() {
  std::lock_guard<std::mutex> lk(st_->mu);
  return std::exchange(st_->stats, LoaderStats{});
}

std::vector<SkippedFile> FolderLoader::skipped_files(size_t max) const {
  std::lock_guard<std::mutex> lk(st_->mu);
  return {st_->skipped.begin(), st_->skipped.begin() + static_cast<std::ptrdiff_t>(std::min(max, st_->skipped.size()))};
}

int64_t FolderLoader::skipped_total() const {
  std::lock_guard<std::mutex> lk(st_->mu);
  return st_->skipped_total;
}

}  // namespace gpubench::data
