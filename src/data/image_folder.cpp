#include "gpubench/data/image_folder.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <tuple>
#include <utility>

#include "gpubench/data/augment.hpp"

namespace gpubench::data {

namespace fs = std::filesystem;

bool is_jpeg_name(const std::string& name) {
  const auto dot = name.rfind('.');
  if (dot == std::string::npos) return false;
  std::string ext = name.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == "jpg" || ext == "jpeg";
}

namespace {

/// A walk's bounds and what it counted.
struct Walk {
  Walk(const ScanLimits& l, fs::path canonical_root) : limits(l), root(std::move(canonical_root)) {}
  const ScanLimits& limits;
  fs::path root;  ///< canonical
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  int64_t entries = 0;
  int64_t links_outside = 0;
  std::vector<fs::path> visited;

  bool inside(const fs::path& canonical) const {
    const auto r = std::mismatch(root.begin(), root.end(), canonical.begin(), canonical.end());
    return r.first == root.end();
  }
  /// Throws when a limit is passed or a stop was asked for.
  void tick(const std::string& data_path) {
    ++entries;
    if (limits.stop != nullptr && limits.stop->load(std::memory_order_relaxed)) {
      throw DatasetError("the scan of data_path '" + data_path + "' was interrupted");
    }
    if (entries > limits.max_entries) {
      throw DatasetError("data_path '" + data_path + "' has more than " + std::to_string(limits.max_entries) +
                         " entries: not an image folder gpubench will scan");
    }
    if ((entries & 1023) == 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
                                     limits.max_seconds) {
      throw DatasetError("scanning data_path '" + data_path + "' took longer than " +
                         std::to_string(static_cast<int>(limits.max_seconds)) + " s");
    }
  }
};

/// A file the walk found: its folder, its name and its size (one stat per entry gives both its kind and its size).
using FoundFile = std::tuple<std::string, std::string, int64_t>;

/// Files under `dir`, recursively, following links that stay inside the root (a cycle is cut by the visited set).
void walk(const fs::path& dir, std::vector<FoundFile>& files, Walk& w, int depth, const std::string& data_path) {
  std::error_code ec;
  const fs::path canonical = fs::canonical(dir, ec);
  if (ec || depth > 64 || std::find(w.visited.begin(), w.visited.end(), canonical) != w.visited.end()) return;
  if (!w.inside(canonical)) {
    ++w.links_outside;
    return;
  }
  w.visited.push_back(canonical);
  fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  if (ec) return;
  std::vector<fs::path> subdirs;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    w.tick(data_path);
    const fs::path p = it->path();
    std::error_code sec;
    if (it->is_symlink(sec)) {
      const fs::path target = fs::canonical(p, sec);
      if (sec) continue;  // a dangling link
      if (!w.inside(target)) {
        ++w.links_outside;
        continue;
      }
    }
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) continue;  // gone, or unreadable: as is_directory's error was
    if (S_ISDIR(st.st_mode)) {
      subdirs.push_back(p);
    } else {
      files.emplace_back(dir.string(), p.filename().string(), static_cast<int64_t>(st.st_size));
    }
  }
  for (const auto& s : subdirs) walk(s, files, w, depth + 1, data_path);
}

}  // namespace

ImageFolder scan_image_folder(const std::string& root, const ScanLimits& limits) {
  std::error_code ec;
  if (root.empty()) throw DatasetError("data: folder needs data_path (the ImageFolder root, one folder per class)");
  if (!fs::exists(root, ec)) throw DatasetError("data_path '" + root + "' does not exist");
  if (!fs::is_directory(root, ec)) throw DatasetError("data_path '" + root + "' is not a folder");
  ImageFolder f;
  f.root = root;
  Walk w{limits, fs::canonical(root, ec)};
  if (ec) throw DatasetError("cannot read data_path '" + root + "': " + ec.message());
  fs::directory_iterator it(root, ec);
  if (ec) throw DatasetError("cannot read data_path '" + root + "': " + ec.message());
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) throw DatasetError("cannot read data_path '" + root + "': " + ec.message());
    w.tick(root);
    std::error_code sec;
    if (!fs::is_directory(it->path(), sec)) continue;
    if (it->is_symlink(sec) && !w.inside(fs::canonical(it->path(), sec))) {
      ++w.links_outside;  // a class folder that is a link out of the data set
      continue;
    }
    f.classes.push_back(it->path().filename().string());
  }
  std::sort(f.classes.begin(), f.classes.end());
  if (f.classes.empty()) {
    throw DatasetError("data_path '" + root + "' has no class folders (an ImageFolder tree has one folder per class, "
                       "e.g. train/n01440764/*.JPEG; `gpubench dataset make` writes one)");
  }
  uint64_t digest = 1469598103934665603ULL;  // FNV-1a 64 over "relative/path\tsize\n" of every sample
  auto hash = [&digest](const std::string& text) {
    for (unsigned char c : text) {
      digest ^= c;
      digest *= 1099511628211ULL;
    }
  };
  const std::string root_prefix = (fs::path(root) / "").string();
  for (size_t label = 0; label < f.classes.size(); ++label) {
    std::vector<FoundFile> files;
    w.visited.clear();
    walk(fs::path(root) / f.classes[label], files, w, 0, root);
    std::sort(files.begin(), files.end());
    size_t images = 0;
    for (const auto& [folder, name, bytes] : files) {
      if (is_jpeg_name(name)) {
        std::string path = (fs::path(folder) / name).string();
        f.bytes += bytes;
        hash((path.rfind(root_prefix, 0) == 0 ? path.substr(root_prefix.size()) : path) + '\t' +
             std::to_string(bytes) + '\n');
        f.samples.push_back(Sample{std::move(path), static_cast<int64_t>(label)});
        ++images;
      } else {
        ++f.other_files;
      }
    }
    if (images == 0) {
      throw DatasetError("class folder '" + (fs::path(root) / f.classes[label]).string() +
                         "' has no JPEG files (.jpg/.jpeg); torchvision's ImageFolder refuses empty classes too" +
                         (w.links_outside > 0 ? " (links leading out of data_path are skipped)" : ""));
    }
  }
  f.links_outside = w.links_outside;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(digest));
  f.listing_digest = hex;
  return f;
}

std::vector<int64_t> epoch_order(int64_t n, uint64_t seed, int64_t epoch, int64_t take, int rank, int world) {
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = i;
  Rng rng(seed, 0x5348554646ull /* "SHUFF" */, static_cast<uint64_t>(epoch));
  for (int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates
    const auto j = static_cast<int64_t>(rng.below(static_cast<uint64_t>(i + 1)));
    std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
  }
  take = std::min(take, n);
  if (world < 1) world = 1;
  take -= take % world;
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(take / world));
  for (int64_t i = rank; i < take; i += world) mine.push_back(perm[static_cast<size_t>(i)]);
  return mine;
}

double page_cache_fraction(const std::vector<Sample>& samples, size_t max_files) {
  if (samples.empty() || max_files == 0) return -1;
  const size_t step = std::max<size_t>(1, samples.size() / max_files);
  const long page = ::sysconf(_SC_PAGESIZE);
  uint64_t resident = 0, total = 0;
  std::vector<unsigned char> vec;
  for (size_t i = 0; i < samples.size(); i += step) {
    const int fd = ::open(samples[i].path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      void* m = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
      if (m != MAP_FAILED) {
        const size_t pages = (static_cast<size_t>(st.st_size) + static_cast<size_t>(page) - 1) / static_cast<size_t>(page);
        vec.assign(pages, 0);
        if (::mincore(m, static_cast<size_t>(st.st_size), vec.data()) == 0) {
          for (unsigned char v : vec) resident += v & 1u;
          total += pages;
        }
        ::munmap(m, static_cast<size_t>(st.st_size));
      }
    }
    ::close(fd);
  }
  return total == 0 ? -1 : static_cast<double>(resident) / static_cast<double>(total);
}

int64_t images_per_epoch(const ImageFolder& folder, const std::optional<int64_t>& dataset_size, int64_t batch,
                         int world, int64_t num_classes, const std::string& model) {
  const auto images = static_cast<int64_t>(folder.samples.size());
  const auto classes = static_cast<int64_t>(folder.classes.size());
  if (classes > num_classes) {
    throw DatasetError("data_path '" + folder.root + "' has " + std::to_string(classes) + " classes but " + model +
                       " has " + std::to_string(num_classes) + " outputs; set num_classes to at least " +
                       std::to_string(classes));
  }
  // An epoch is one pass over the folder, or dataset_size of it when that is set.
  int64_t epoch = images;
  if (dataset_size) {
    if (*dataset_size > images) {
      throw DatasetError("dataset_size " + std::to_string(*dataset_size) + " exceeds the " + std::to_string(images) +
                         " images in '" + folder.root + "'");
    }
    epoch = *dataset_size;
  }
  if (epoch / std::max(1, world) < batch) {
    throw DatasetError("'" + folder.root + "' has " + std::to_string(epoch) + " images per epoch, fewer than one batch of " +
                       std::to_string(batch) + (world > 1 ? " on each of " + std::to_string(world) + " ranks" : std::string()));
  }
  return epoch;
}

}  // namespace gpubench::data
