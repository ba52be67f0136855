#include "gpubench/data/synthetic_images.hpp"

#include <ftw.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpubench/data/augment.hpp"

namespace gpubench::data {

namespace fs = std::filesystem;

namespace {

struct Rgb {
  float r, g, b;
};

Rgb hsv(double h, double s, double v) {
  h = std::fmod(h, 360.0);
  if (h < 0) h += 360.0;
  const double c = v * s, x = c * (1 - std::abs(std::fmod(h / 60.0, 2.0) - 1)), m = v - c;
  double r = 0, g = 0, b = 0;
  if (h < 60) { r = c; g = x; } else if (h < 120) { r = x; g = c; } else if (h < 180) { g = c; b = x; }
  else if (h < 240) { g = x; b = c; } else if (h < 300) { r = x; b = c; } else { r = c; b = x; }
  return Rgb{static_cast<float>((r + m) * 255), static_cast<float>((g + m) * 255), static_cast<float>((b + m) * 255)};
}

/// Value noise: a grid of random values every `cell` pixels, smoothly interpolated (one octave of the 1/f field).
void add_octave(std::vector<float>& field, int w, int h, double cell, float amplitude, Rng& rng) {
  const int gw = static_cast<int>(w / cell) + 2, gh = static_cast<int>(h / cell) + 2;
  std::vector<float> grid(static_cast<size_t>(gw) * gh);
  for (auto& g : grid) g = static_cast<float>(rng.uniform(-1, 1));
  for (int y = 0; y < h; ++y) {
    const double fy = y / cell;
    const int iy = static_cast<int>(fy);
    double ty = fy - iy;
    ty = ty * ty * (3 - 2 * ty);
    for (int x = 0; x < w; ++x) {
      const double fx = x / cell;
      const int ix = static_cast<int>(fx);
      double tx = fx - ix;
      tx = tx * tx * (3 - 2 * tx);
      const float* g0 = &grid[static_cast<size_t>(iy) * gw + ix];
      const float* g1 = g0 + gw;
      const double top = g0[0] + (g0[1] - g0[0]) * tx, bottom = g1[0] + (g1[1] - g1[0]) * tx;
      field[static_cast<size_t>(y) * w + x] += amplitude * static_cast<float>(top + (bottom - top) * ty);
    }
  }
}

/// A pink-ish noise field: octaves from 1/4 of the image down to 1.5 px, each 0.85 of the one above (flatter than
/// 1/f, tuned so the files compress about as photographs do: ~3.3 bits per pixel at quality 90).
std::vector<float> pink_field(int w, int h, Rng& rng, double smallest_cell) {
  std::vector<float> f(static_cast<size_t>(w) * h, 0.0f);
  float amp = 0.5f;
  for (double cell = std::max(w, h) / 4.0; cell >= smallest_cell; cell /= 2, amp *= 0.85f) {
    add_octave(f, w, h, cell, amp, rng);
  }
  return f;
}

}  // namespace

std::string synthetic_class_name(int64_t label) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "n%08lld", static_cast<long long>(label));
  return buf;
}

RgbImage synthetic_image(uint64_t seed, int64_t index, int64_t label, int64_t classes) {
  Rng rng(seed, 0x494D47ull /* "IMG" */, static_cast<uint64_t>(index));
  // ImageNet-like sizes: most images 500 px on the long side, 4:3 or 3:2, a quarter portrait.
  const int long_side = rng.uniform(0, 1) < 0.7 ? 500 : static_cast<int>(rng.uniform(300, 800));
  const double u = rng.uniform(0, 1);
  const double aspect = u < 0.5 ? 4.0 / 3.0 : u < 0.8 ? 1.5 : u < 0.9 ? 1.0 : 16.0 / 9.0;
  const int short_side = std::max(64, static_cast<int>(std::lround(long_side / aspect)));
  const bool portrait = rng.uniform(0, 1) < 0.25;
  RgbImage img;
  img.width = portrait ? short_side : long_side;
  img.height = portrait ? long_side : short_side;
  const int w = img.width, h = img.height;
  // A palette per class (so classes differ, as they do), jittered per image.
  const double hue = 360.0 * static_cast<double>(label) / static_cast<double>(std::max<int64_t>(classes, 1)) +
                     rng.uniform(-20, 20);
  const Rgb c1 = hsv(hue, rng.uniform(0.2, 0.7), rng.uniform(0.3, 0.9));
  const Rgb c2 = hsv(hue + rng.uniform(-60, 60), rng.uniform(0.1, 0.6), rng.uniform(0.2, 0.9));
  const double angle = rng.uniform(0, 6.283185307179586);
  const double dx = std::cos(angle) / w, dy = std::sin(angle) / h;
  const std::vector<float> lum = pink_field(w, h, rng, 1.5);
  const std::vector<float> chroma = pink_field(w, h, rng, 16.0);
  std::vector<float> px(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const size_t i = static_cast<size_t>(y) * w + x;
      const double t = std::clamp(0.5 + (x - w / 2.0) * dx + (y - h / 2.0) * dy, 0.0, 1.0);
      const float l = 1.0f + 0.8f * lum[i], c = 0.25f * chroma[i];
      px[i * 3] = static_cast<float>((c1.r + (c2.r - c1.r) * t) * l * (1 + c));
      px[i * 3 + 1] = static_cast<float>((c1.g + (c2.g - c1.g) * t) * l);
      px[i * 3 + 2] = static_cast<float>((c1.b + (c2.b - c1.b) * t) * l * (1 - c));
    }
  }
  // Objects: textured ellipses and rectangles with hard edges.
  const int shapes = 3 + static_cast<int>(rng.below(6));
  for (int s = 0; s < shapes; ++s) {
    const Rgb col = hsv(hue + rng.uniform(-150, 150), rng.uniform(0.2, 0.9), rng.uniform(0.15, 1.0));
    const double cx = rng.uniform(0, w), cy = rng.uniform(0, h);
    const double rx = rng.uniform(0.05, 0.35) * w, ry = rng.uniform(0.05, 0.35) * h;
    const bool ellipse = rng.uniform(0, 1) < 0.6;
    const float tex = static_cast<float>(rng.uniform(0.2, 0.9));
    const int x0 = std::max(0, static_cast<int>(cx - rx)), x1 = std::min(w, static_cast<int>(cx + rx) + 1);
    const int y0 = std::max(0, static_cast<int>(cy - ry)), y1 = std::min(h, static_cast<int>(cy + ry) + 1);
    for (int y = y0; y < y1; ++y) {
      for (int x = x0; x < x1; ++x) {
        const double ex = (x - cx) / rx, ey = (y - cy) / ry;
        if (ellipse && ex * ex + ey * ey > 1.0) continue;
        const size_t i = static_cast<size_t>(y) * w + x;
        const float l = 1.0f + tex * lum[(i * 7919) % lum.size()];
        px[i * 3] = col.r * l;
        px[i * 3 + 1] = col.g * l;
        px[i * 3 + 2] = col.b * l;
      }
    }
  }
  // Sensor noise, then 8 bits.
  img.pixels.resize(px.size());
  const double sigma = 5.0;
  for (size_t i = 0; i < px.size(); ++i) {
    const double n = (rng.uniform(-1, 1) + rng.uniform(-1, 1) + rng.uniform(-1, 1)) * sigma;  // ~ Gaussian
    const double v = std::nearbyint(px[i] + n);
    img.pixels[i] = static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
  }
  return img;
}

namespace {

SynthStats write_dataset(const std::string& out, const SynthOptions& options,
                         const std::function<void(int64_t, int64_t)>& progress);

/// Removes everything under `path` (links not followed), and `path` itself unless `keep_root`. POSIX nftw rather
/// than std::filesystem::remove_all: the CLI links LibTorch, whose libtorch.so exports its own copy of that function,
/// and the binary's call went there and crashed.
void remove_tree(const std::string& path, bool keep_root) {
  const auto remove_all = [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p) == 0 ? 0 : 0; };
  const auto remove_below = [](const char* p, const struct stat*, int, struct FTW* at) {
    return at->level == 0 || ::remove(p) == 0 ? 0 : 0;
  };
  ::nftw(path.c_str(), keep_root ? +remove_below : +remove_all, 64, FTW_DEPTH | FTW_PHYS);
}

}  // namespace

SynthStats make_synthetic_dataset(const std::string& out, const SynthOptions& options,
                                  const std::function<void(int64_t, int64_t)>& progress) {
  if (options.images < 1) throw std::invalid_argument("--images must be at least 1");
  if (options.classes < 1 || options.classes > options.images) {
    throw std::invalid_argument("--classes must be between 1 and the number of images");
  }
  std::error_code ec;
  if (fs::exists(out, ec) && !(fs::is_directory(out, ec) && fs::is_empty(out, ec))) {
    throw std::invalid_argument("'" + out + "' exists and is not an empty folder; choose a new --out");
  }
  const bool made = !fs::exists(out, ec);
  // The folder can be made and written before any image is encoded.
  fs::create_directories(out, ec);
  const std::string probe = (fs::path(out) / ".gpubench-probe").string();
  if (ec || !std::ofstream(probe).good()) {
    if (made) remove_tree(out, false);
    throw std::invalid_argument("cannot write in '" + out + "'" + (ec ? ": " + ec.message() : std::string()));
  }
  ::remove(probe.c_str());
  try {
    return write_dataset(out, options, progress);
  } catch (...) {
    // No partial output: what this call wrote goes (the folder, when it made it; else the empty folder's new contents).
    remove_tree(out, !made);
    throw;
  }
}

namespace {

SynthStats write_dataset(const std::string& out, const SynthOptions& options,
                         const std::function<void(int64_t, int64_t)>& progress) {
  std::error_code ec;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t c = 0; c < options.classes; ++c) {
    fs::create_directories(fs::path(out) / synthetic_class_name(c), ec);
    if (ec) throw std::runtime_error("cannot create '" + (fs::path(out) / synthetic_class_name(c)).string() + "': " + ec.message());
  }
  std::vector<int64_t> sizes(static_cast<size_t>(options.images), 0);
  std::vector<int64_t> widths(sizes.size(), 0), heights(sizes.size(), 0);
  std::atomic<int64_t> next{0}, done{0};
  std::mutex err_mu;
  std::string error;
  auto work = [&] {
    for (int64_t i = next++; i < options.images; i = next++) {
      if (options.stop != nullptr && options.stop->load()) {
        std::lock_guard<std::mutex> lk(err_mu);
        if (error.empty()) error = "interrupted";
        return;
      }
      const int64_t label = i % options.classes;
      const RgbImage img = synthetic_image(options.seed, i, label, options.classes);
      const std::vector<uint8_t> jpeg = encode_jpeg(img, options.quality);
      const std::string cls = synthetic_class_name(label);
      char name[64];
      std::snprintf(name, sizeof name, "%s_%lld.JPEG", cls.c_str(), static_cast<long long>(i));
      const fs::path path = fs::path(out) / cls / name;
      const fs::path tmp = path.string() + ".part";
      {
        std::ofstream f(tmp, std::ios::binary);
        f.write(reinterpret_cast<const char*>(jpeg.data()), static_cast<std::streamsize>(jpeg.size()));
        f.close();
        if (!f) {
          std::error_code rm;
          fs::remove(tmp, rm);
          std::lock_guard<std::mutex> lk(err_mu);
          if (error.empty()) error = "cannot write '" + tmp.string() + "'";
          return;
        }
      }
      std::error_code rec;
      fs::rename(tmp, path, rec);
      if (rec) {
        std::lock_guard<std::mutex> lk(err_mu);
        if (error.empty()) error = "cannot rename '" + tmp.string() + "': " + rec.message();
        return;
      }
      sizes[static_cast<size_t>(i)] = static_cast<int64_t>(jpeg.size());
      widths[static_cast<size_t>(i)] = img.width;
      heights[static_cast<size_t>(i)] = img.height;
      ++done;
    }
  };
  int threads = options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = static_cast<int>(std::min<int64_t>(threads, options.images));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work);
  while (done.load() < options.images) {
    {
      std::lock_guard<std::mutex> lk(err_mu);
      if (!error.empty()) break;
    }
    if (progress) progress(done.load(), options.images);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (auto& t : pool) t.join();
  if (!error.empty()) throw std::runtime_error(error);
  if (progress) progress(options.images, options.images);

  SynthStats st;
  st.images = options.images;
  st.classes = options.classes;
  double pixels = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    st.bytes_total += sizes[i];
    st.mean_width += static_cast<double>(widths[i]);
    st.mean_height += static_cast<double>(heights[i]);
    pixels += static_cast<double>(widths[i]) * static_cast<double>(heights[i]);
  }
  st.mean_width /= static_cast<double>(sizes.size());
  st.mean_height /= static_cast<double>(sizes.size());
  st.bits_per_pixel = 8.0 * static_cast<double>(st.bytes_total) / pixels;
  std::vector<int64_t> sorted = sizes;
  std::sort(sorted.begin(), sorted.end());
  st.bytes_median = sorted[sorted.size() / 2];
  st.bytes_min = sorted.front();
  st.bytes_max = sorted.back();
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  nlohmann::json j;
  j["generator"] = "gpubench dataset make (synthetic_images.cpp, version 1)";
  j["images"] = st.images;
  j["classes"] = st.classes;
  j["seed"] = options.seed;
  j["quality"] = options.quality;
  j["chroma_subsampling"] = "4:2:0";
  j["encoder"] = jpeg_library_version();
  j["bytes_total"] = st.bytes_total;
  j["bytes_mean"] = static_cast<double>(st.bytes_total) / static_cast<double>(st.images);
  j["bytes_median"] = st.bytes_median;
  j["bytes_min"] = st.bytes_min;
  j["bytes_max"] = st.bytes_max;
  j["mean_width"] = st.mean_width;
  j["mean_height"] = st.mean_height;
  j["bits_per_pixel"] = st.bits_per_pixel;
  const fs::path meta = fs::path(out) / "dataset.json", tmp = fs::path(out) / "dataset.json.part";
  {
    std::ofstream f(tmp);
    f << j.dump(2) << "\n";
    f.close();
    if (!f) throw std::runtime_error("cannot write '" + tmp.string() + "'");
  }
  fs::rename(tmp, meta, ec);
  if (ec) throw std::runtime_error("cannot write '" + meta.string() + "': " + ec.message());
  return st;
}

}  // namespace

}  // namespace gpubench::data
