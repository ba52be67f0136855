// The data layer: JPEG decoding of good and hostile files, torchvision's crop, the resampler, the ImageFolder scan,
// the epoch shuffle, the worker-pool loader with corrupt files, and the synthetic data set. No torch, no GPU.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>

#include "common/temp_dir.h"
#include "gpubench/data/augment.hpp"
#include "gpubench/data/decode_choice.hpp"
#include "gpubench/data/decode_split.hpp"
#include "gpubench/data/image_folder.hpp"
#include "gpubench/data/jpeg.hpp"
#include "gpubench/data/loader.hpp"
#include "gpubench/data/synthetic_images.hpp"

namespace gpubench::data {
namespace {

namespace fs = std::filesystem;

RgbImage gradient(int w, int h) {
  RgbImage img;
  img.width = w;
  img.height = h;
  img.pixels.resize(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &img.pixels[(static_cast<size_t>(y) * w + x) * 3];
      p[0] = static_cast<uint8_t>(x * 255 / std::max(1, w - 1));
      p[1] = static_cast<uint8_t>(y * 255 / std::max(1, h - 1));
      p[2] = static_cast<uint8_t>((x + y) % 256);
    }
  }
  return img;
}

void write_bytes(const fs::path& p, const std::vector<uint8_t>& b) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

TEST(Jpeg, EncodeThenDecodeGivesTheImageBackWithinJpegLoss) {
  const RgbImage img = synthetic_image(1, 2, 3, 10);
  const std::vector<uint8_t> bytes = encode_jpeg(img, 95);
  JpegInfo info;
  std::string err;
  ASSERT_TRUE(read_jpeg_info(bytes.data(), bytes.size(), info, err)) << err;
  EXPECT_EQ(info.width, img.width);
  EXPECT_EQ(info.height, img.height);
  EXPECT_EQ(info.components, 3);
  EXPECT_EQ(info.subsampling, "420");
  EXPECT_FALSE(info.progressive);
  DecodedWindow d;
  ASSERT_TRUE(decode_jpeg(bytes.data(), bytes.size(), Box{}, 0, 0, d, err)) << err;
  ASSERT_EQ(d.image.width, img.width);
  ASSERT_EQ(d.image.height, img.height);
  double diff = 0;
  for (size_t i = 0; i < img.pixels.size(); ++i) diff += std::abs(int(img.pixels[i]) - int(d.image.pixels[i]));
  EXPECT_LT(diff / static_cast<double>(img.pixels.size()), 8.0);  // quality 95 on a noisy image
}

TEST(Jpeg, AWindowDecodeMatchesTheSameRegionOfAFullDecode) {
  const std::vector<uint8_t> bytes = encode_jpeg(gradient(300, 200), 90);
  std::string err;
  DecodedWindow full, part;
  ASSERT_TRUE(decode_jpeg(bytes.data(), bytes.size(), Box{}, 0, 0, full, err));
  const Box box{101, 57, 90, 80};
  ASSERT_TRUE(decode_jpeg(bytes.data(), bytes.size(), box, 0, 0, part, err)) << err;
  EXPECT_DOUBLE_EQ(part.scale, 1.0);
  EXPECT_LE(part.image.width, 300);
  EXPECT_LT(part.image.height, 200);  // rows below the window were never decoded
  int worst = 0;
  for (int y = 1; y < box.h - 1; ++y) {
    for (int x = 1; x < box.w - 1; ++x) {
      for (int c = 0; c < 3; ++c) {
        const int a = full.image.pixels[(static_cast<size_t>(box.y + y) * 300 + box.x + x) * 3 + c];
        const int b = part.image.pixels[(static_cast<size_t>(part.window.y + y) * part.image.width +
                                         static_cast<size_t>(part.window.x) + x) * 3 + c];
        worst = std::max(worst, std::abs(a - b));
      }
    }
  }
  EXPECT_LE(worst, 1);
}

TEST(Jpeg, LargeCropsAreDownscaledInTheDctDomainButNeverBelowTheTarget) {
  const std::vector<uint8_t> bytes = encode_jpeg(gradient(1024, 768), 90);
  std::string err;
  DecodedWindow d;
  ASSERT_TRUE(decode_jpeg(bytes.data(), bytes.size(), Box{0, 0, 1000, 700}, 224, 224, d, err)) << err;
  EXPECT_DOUBLE_EQ(d.scale, 0.5);  // 1/4 would make the 700-row crop 175 rows, fewer than 224
  EXPECT_GE(d.window.w, 224);
  EXPECT_GE(d.window.h, 224);
  EXPECT_LE(d.image.width, 512);
  ASSERT_TRUE(decode_jpeg(bytes.data(), bytes.size(), Box{0, 0, 1000, 700}, 100, 80, d, err)) << err;
  EXPECT_DOUBLE_EQ(d.scale, 0.125);
}

TEST(Jpeg, HostileBytesAreErrorsNeverCrashes) {
  std::string err;
  JpegInfo info;
  DecodedWindow d;
  const std::vector<uint8_t> good = encode_jpeg(gradient(64, 48), 90);
  // empty, not a JPEG, PNG signature, a header alone, truncated in the scan, garbage after a valid header
  std::vector<std::vector<uint8_t>> cases = {
      {}, {'h', 'e', 'l', 'l', 'o'}, {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13},
      std::vector<uint8_t>(good.begin(), good.begin() + 20), std::vector<uint8_t>(good.begin(), good.begin() + good.size() / 2)};
  std::vector<uint8_t> scrambled = good;
  for (size_t i = 200; i < scrambled.size(); i += 7) scrambled[i] ^= 0x5A;
  cases.push_back(scrambled);
  for (size_t i = 0; i < cases.size(); ++i) {
    err.clear();
    const bool ok = decode_jpeg(cases[i].data(), cases[i].size(), Box{}, 0, 0, d, err);
    if (i < 5) {
      EXPECT_FALSE(ok) << "case " << i;
      EXPECT_FALSE(err.empty()) << "case " << i;
    }
  }
  EXPECT_FALSE(read_jpeg_info(cases[0].data(), 0, info, err));
  EXPECT_EQ(err, "empty file");
  EXPECT_FALSE(decode_jpeg(cases[4].data(), cases[4].size(), Box{}, 0, 0, d, err));  // truncated: refused, as PIL does
  // A decompression bomb: a valid stream whose frame header claims 65000 x 65000 pixels.
  std::vector<uint8_t> bomb = good;
  for (size_t i = 0; i + 8 < bomb.size(); ++i) {
    if (bomb[i] == 0xFF && bomb[i + 1] == 0xC0) {
      bomb[i + 5] = bomb[i + 7] = 0xFD;
      bomb[i + 6] = bomb[i + 8] = 0xE8;
      break;
    }
  }
  err.clear();
  EXPECT_FALSE(read_jpeg_info(bomb.data(), bomb.size(), info, err));
  EXPECT_NE(err.find("pixel limit"), std::string::npos) << err;
  EXPECT_FALSE(decode_jpeg(bomb.data(), bomb.size(), Box{}, 0, 0, d, err));
}

TEST(Augment, RandomResizedCropStaysInsideTheImageAndFollowsTorchvisionsRanges) {
  Rng rng(7);
  double area_sum = 0;
  int flips = 0;
  for (int i = 0; i < 2000; ++i) {
    const CropParams p = random_resized_crop(500, 375, rng);
    ASSERT_GE(p.box.x, 0);
    ASSERT_GE(p.box.y, 0);
    ASSERT_GT(p.box.w, 0);
    ASSERT_GT(p.box.h, 0);
    ASSERT_LE(p.box.x + p.box.w, 500);
    ASSERT_LE(p.box.y + p.box.h, 375);
    const double ratio = static_cast<double>(p.box.w) / p.box.h;
    const double area = static_cast<double>(p.box.w) * p.box.h / (500.0 * 375.0);
    if (!(p.box.w == 500 && p.box.h == 375)) {  // not the fallback
      EXPECT_GE(ratio, 0.74);
      EXPECT_LE(ratio, 1.34);
      EXPECT_GE(area, 0.075);
    }
    area_sum += area;
    flips += p.flip ? 1 : 0;
  }
  EXPECT_NEAR(area_sum / 2000, 0.435, 0.02);  // torchvision.get_params on 500 x 375 averages 0.435 (4000 draws)
  EXPECT_NEAR(flips, 1000, 120);
  // A strip no allowed ratio fits: torchvision's fallback, the whole height at the widest ratio, centred.
  Rng r2(1);
  const CropParams strip = random_resized_crop(1000, 10, r2);
  EXPECT_EQ(strip.box.h, 10);
  EXPECT_EQ(strip.box.w, 13);
  EXPECT_EQ(strip.box.x, (1000 - 13) / 2);
}

TEST(Augment, SameSeedEpochAndSampleGiveTheSameCrop) {
  Rng a(5, 2, 99), b(5, 2, 99), c(5, 3, 99);
  const CropParams pa = random_resized_crop(640, 480, a), pb = random_resized_crop(640, 480, b);
  const CropParams pc = random_resized_crop(640, 480, c);
  EXPECT_EQ(pa.box.x, pb.box.x);
  EXPECT_EQ(pa.box.w, pb.box.w);
  EXPECT_EQ(pa.flip, pb.flip);
  EXPECT_FALSE(pa.box.x == pc.box.x && pa.box.y == pc.box.y && pa.box.w == pc.box.w);
}

TEST(Augment, ResizingTheWholeImageToItsOwnSizeIsTheIdentityAndFlipMirrors) {
  const RgbImage img = gradient(37, 23);
  std::vector<uint8_t> out(img.pixels.size()), flipped(img.pixels.size());
  resize_window(img, Window{0, 0, 37, 23}, 37, 23, false, out.data());
  EXPECT_EQ(out, img.pixels);
  resize_window(img, Window{0, 0, 37, 23}, 37, 23, true, flipped.data());
  for (int y = 0; y < 23; ++y) {
    for (int x = 0; x < 37; ++x) {
      for (int c = 0; c < 3; ++c) {
        ASSERT_EQ(flipped[(static_cast<size_t>(y) * 37 + x) * 3 + c], img.pixels[(static_cast<size_t>(y) * 37 + 36 - x) * 3 + c]);
      }
    }
  }
}

TEST(Augment, DownscalingAveragesLikeAnAntialiasedFilter) {
  // A 2x2 checkerboard of 0/255 pixels shrunk 4x: antialiasing gives mid-grey, plain bilinear sampling would not.
  RgbImage img;
  img.width = img.height = 64;
  img.pixels.resize(64 * 64 * 3);
  for (int y = 0; y < 64; ++y) {
    for (int x = 0; x < 64; ++x) {
      for (int c = 0; c < 3; ++c) img.pixels[(static_cast<size_t>(y) * 64 + x) * 3 + c] = ((x + y) % 2) ? 255 : 0;
    }
  }
  std::vector<uint8_t> out(16 * 16 * 3);
  resize_window(img, Window{0, 0, 64, 64}, 16, 16, false, out.data());
  for (size_t i = 3 * 17; i < out.size() - 3 * 17; ++i) EXPECT_NEAR(out[i], 127.5, 8) << i;
}

TEST(ImageFolderScan, ReadsClassesAndFilesAsTorchvisionDoes) {
  testing::TempDir tmp("data");
  const fs::path root = tmp.path();
  for (const char* c : {"zebra", "ant", "moth"}) fs::create_directories(root / c);
  fs::create_directories(root / "moth" / "sub");
  const std::vector<uint8_t> jpg = encode_jpeg(gradient(16, 16), 90);
  write_bytes(root / "zebra" / "b.jpg", jpg);
  write_bytes(root / "zebra" / "a.JPEG", jpg);
  write_bytes(root / "ant" / "x.Jpg", jpg);
  write_bytes(root / "ant" / "notes.txt", {'x'});
  write_bytes(root / "moth" / "sub" / "deep.jpeg", jpg);
  write_bytes(root / "README", {'x'});  // files beside the class folders are not samples
  const ImageFolder f = scan_image_folder(root.string());
  EXPECT_EQ(f.classes, (std::vector<std::string>{"ant", "moth", "zebra"}));
  ASSERT_EQ(f.samples.size(), 4u);
  EXPECT_EQ(fs::path(f.samples[0].path).filename(), "x.Jpg");
  EXPECT_EQ(f.samples[0].label, 0);
  EXPECT_EQ(fs::path(f.samples[1].path).filename(), "deep.jpeg");
  EXPECT_EQ(f.samples[1].label, 1);
  EXPECT_EQ(fs::path(f.samples[2].path).filename(), "a.JPEG");  // sorted by name within the folder
  EXPECT_EQ(f.samples[3].label, 2);
  EXPECT_EQ(f.other_files, 1);
}

TEST(ImageFolderScan, WhatTheDataIsDoesNotDependOnWhereItLies) {
  testing::TempDir tmp("data");
  const std::vector<uint8_t> jpg = encode_jpeg(gradient(16, 16), 90), other = encode_jpeg(gradient(24, 16), 90);
  auto make = [&](const fs::path& root) {
    fs::create_directories(root / "a");
    fs::create_directories(root / "b" / "sub");
    write_bytes(root / "a" / "1.jpg", jpg);
    write_bytes(root / "b" / "sub" / "2.jpg", other);
    write_bytes(root / "b" / "notes.txt", {'x', 'y'});  // not an image: not in the data's bytes or listing
  };
  make(tmp.path() / "night1");
  make(tmp.path() / "elsewhere" / "night2");
  const ImageFolder one = scan_image_folder((tmp.path() / "night1").string());
  const ImageFolder two = scan_image_folder((tmp.path() / "elsewhere" / "night2" / "").string());
  EXPECT_EQ(one.bytes, static_cast<int64_t>(jpg.size() + other.size()));
  EXPECT_EQ(one.listing_digest.size(), 16u);
  EXPECT_EQ(one.listing_digest, two.listing_digest);
  // Renamed, relabelled (moved to another class) or resized: other data.
  fs::rename(tmp.path() / "night1" / "a" / "1.jpg", tmp.path() / "night1" / "a" / "3.jpg");
  const std::string renamed = scan_image_folder((tmp.path() / "night1").string()).listing_digest;
  EXPECT_NE(renamed, one.listing_digest);
  fs::create_directories(tmp.path() / "night1" / "c");
  fs::rename(tmp.path() / "night1" / "a" / "3.jpg", tmp.path() / "night1" / "c" / "3.jpg");
  write_bytes(tmp.path() / "night1" / "a" / "4.jpg", jpg);
  EXPECT_NE(scan_image_folder((tmp.path() / "night1").string()).listing_digest, renamed);
  write_bytes(tmp.path() / "elsewhere" / "night2" / "a" / "1.jpg", other);
  const ImageFolder resized = scan_image_folder((tmp.path() / "elsewhere" / "night2").string());
  EXPECT_NE(resized.listing_digest, one.listing_digest);
  EXPECT_EQ(resized.bytes, static_cast<int64_t>(2 * other.size()));
}

TEST(ImageFolderScan, LinksLeadingOutOfTheFolderAreSkippedAndCountedAndLinksInsideAreFollowed) {
  testing::TempDir tmp("data");
  const fs::path root = tmp.path() / "set", outside = tmp.path() / "elsewhere";
  const std::vector<uint8_t> jpg = encode_jpeg(gradient(16, 16), 90);
  fs::create_directories(root / "cat");
  fs::create_directories(root / "dog" / "real");
  fs::create_directories(outside / "n01");
  write_bytes(root / "cat" / "a.jpg", jpg);
  write_bytes(root / "dog" / "real" / "b.jpg", jpg);
  write_bytes(outside / "stolen.jpg", jpg);
  write_bytes(outside / "n01" / "c.jpg", jpg);
  fs::create_symlink("/", root / "cat" / "root");                    // the whole machine, as the issue found
  fs::create_symlink(outside / "stolen.jpg", root / "cat" / "s.jpg");  // one file from elsewhere
  fs::create_symlink(outside / "n01", root / "n01");                 // a class folder from elsewhere
  fs::create_symlink(root / "dog" / "real", root / "cat" / "inside");  // stays inside: followed
  const ImageFolder f = scan_image_folder(root.string());
  EXPECT_EQ(f.classes, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(f.links_outside, 3);
  std::vector<std::string> names;
  for (const auto& smp : f.samples) names.push_back(fs::path(smp.path).filename().string());
  EXPECT_EQ(names, (std::vector<std::string>{"a.jpg", "b.jpg", "b.jpg"}));
}

TEST(ImageFolderScan, IsBoundedInEntriesAndStopsWhenAsked) {
  testing::TempDir tmp("data");
  const std::vector<uint8_t> jpg = encode_jpeg(gradient(16, 16), 90);
  fs::create_directories(tmp.path() / "c");
  for (int i = 0; i < 20; ++i) write_bytes(tmp.path() / "c" / (std::to_string(i) + ".jpg"), jpg);
  ScanLimits few;
  few.max_entries = 10;
  try {
    scan_image_folder(tmp.path().string(), few);
    ADD_FAILURE() << "expected the entry bound";
  } catch (const DatasetError& e) {
    EXPECT_NE(std::string(e.what()).find("more than 10 entries"), std::string::npos) << e.what();
  }
  std::atomic<bool> stop{true};
  ScanLimits stopped;
  stopped.stop = &stop;
  try {
    scan_image_folder(tmp.path().string(), stopped);
    ADD_FAILURE() << "expected the stop";
  } catch (const DatasetError& e) {
    EXPECT_NE(std::string(e.what()).find("interrupted"), std::string::npos) << e.what();
  }
  EXPECT_EQ(scan_image_folder(tmp.path().string()).samples.size(), 20u);
}

TEST(ImageFolderScan, UnusableFoldersAreNamedErrors) {
  testing::TempDir tmp("data");
  auto message = [](const std::string& path) {
    try {
      scan_image_folder(path);
    } catch (const DatasetError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message((tmp.path() / "missing").string()).find("does not exist"), std::string::npos);
  write_bytes(tmp.path() / "file", {'x'});
  EXPECT_NE(message((tmp.path() / "file").string()).find("is not a folder"), std::string::npos);
  fs::create_directories(tmp.path() / "empty");
  EXPECT_NE(message((tmp.path() / "empty").string()).find("no class folders"), std::string::npos);
  fs::create_directories(tmp.path() / "noimg" / "cls");
  write_bytes(tmp.path() / "noimg" / "cls" / "a.png", {'x'});
  EXPECT_NE(message((tmp.path() / "noimg").string()).find("has no JPEG files"), std::string::npos);
  EXPECT_NE(message("").find("needs data_path"), std::string::npos);
}

TEST(EpochOrder, IsAPermutationPerEpochAndShardsCoverItWithoutOverlap) {
  const auto a = epoch_order(1000, 3, 0, 1000), b = epoch_order(1000, 3, 1, 1000), a2 = epoch_order(1000, 3, 0, 1000);
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(1000);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(sorted, iota);
  EXPECT_EQ(a, a2);
  EXPECT_NE(a, b);
  EXPECT_NE(a, iota);
  // Three ranks: 999 of the first 1000 (a multiple of 3), disjoint, each 333.
  std::set<int64_t> seen;
  for (int r = 0; r < 3; ++r) {
    const auto shard = epoch_order(1000, 3, 0, 1000, r, 3);
    EXPECT_EQ(shard.size(), 333u);
    for (int64_t i : shard) EXPECT_TRUE(seen.insert(i).second);
  }
  EXPECT_EQ(epoch_order(1000, 3, 0, 100).size(), 100u);  // dataset_size of the folder
}

/// A small generated folder with hostile files mixed in.
struct BadFolder {
  testing::TempDir tmp{"data"};
  fs::path root = tmp.path() / "set";
  BadFolder() {
    SynthOptions o;
    o.images = 40;
    o.classes = 4;
    o.threads = 2;
    make_synthetic_dataset(root.string(), o);
    const fs::path cls = root / synthetic_class_name(0);
    write_bytes(cls / "zero.jpg", {});
    write_bytes(cls / "png.jpg", {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 'I', 'H', 'D', 'R'});
    std::ifstream in(cls / (synthetic_class_name(0) + "_0.JPEG"), std::ios::binary);
    std::vector<uint8_t> good((std::istreambuf_iterator<char>(in)), {});
    write_bytes(cls / "truncated.jpg", std::vector<uint8_t>(good.begin(), good.begin() + good.size() / 3));
    fs::create_directories(cls / "dir.jpg");  // a folder named like an image is walked into, not read
    ::mkfifo((cls / "fifo.jpg").c_str(), 0644);  // reading it must not block
  }
};

TEST(Loader, AnEpochDeliversEveryBatchSkippingAndCountingBadFiles) {
  BadFolder bf;
  const ImageFolder f = scan_image_folder(bf.root.string());
  ASSERT_EQ(f.samples.size(), 44u);  // 40 + zero, png, truncated, fifo
  LoaderOptions o;
  o.workers = 3;
  o.prefetch = 2;
  o.batch_size = 8;
  o.out_size = 32;
  FolderLoader loader(f, o);
  std::set<int64_t> labels;
  for (int epoch = 0; epoch < 2; ++epoch) {
    loader.start_epoch(epoch, 5, 44);
    int batches = 0;
    while (HostBatch* b = loader.next()) {
      EXPECT_EQ(b->index, batches);
      for (int64_t l : b->labels) {
        EXPECT_GE(l, 0);
        EXPECT_LT(l, 4);
        labels.insert(l);
      }
      ++batches;
      loader.release(b);
    }
    EXPECT_EQ(batches, 5);
  }
  EXPECT_EQ(labels.size(), 4u);
  EXPECT_EQ(loader.skipped_total(), 4);
  std::set<std::string> names;
  for (const auto& s : loader.skipped_files()) {
    names.insert(fs::path(s.path).filename().string());
    EXPECT_FALSE(s.reason.empty());
  }
  EXPECT_EQ(names, (std::set<std::string>{"zero.jpg", "png.jpg", "truncated.jpg", "fifo.jpg"}));
  EXPECT_GT(loader.take_stats().images, 0);
}

TEST(Loader, RestartingAnEpochMidwayIsSafeAndAFolderOfBadFilesFailsClearly) {
  BadFolder bf;
  const ImageFolder f = scan_image_folder(bf.root.string());
  LoaderOptions o;
  o.workers = 2;
  o.batch_size = 4;
  o.out_size = 16;
  FolderLoader loader(f, o);
  loader.start_epoch(0, 10, 44);
  loader.release(loader.next());
  loader.start_epoch(1, 3, 44);  // work of the cut epoch is finished and dropped
  int n = 0;
  while (HostBatch* b = loader.next()) {
    ++n;
    loader.release(b);
  }
  EXPECT_EQ(n, 3);

  testing::TempDir tmp("data");
  fs::create_directories(tmp.path() / "c");
  for (int i = 0; i < 5; ++i) write_bytes(tmp.path() / "c" / ("bad" + std::to_string(i) + ".jpg"), {'n', 'o'});
  const ImageFolder bad = scan_image_folder(tmp.path().string());
  EXPECT_THROW(probe_folder(bad), DatasetError);
  FolderLoader l2(bad, o);
  l2.start_epoch(0, 1, 5);
  try {
    l2.next();
    FAIL() << "a folder without a readable JPEG must fail";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no readable JPEG"), std::string::npos) << e.what();
  }
}

/// decode: mixed's loader side: with a CPU share, the first samples of every batch are decoded by the workers into
/// the pixel buffer (as pixel mode decodes them, byte for byte), the others travel as files for nvJPEG; the counts say
/// which were the split's and which the decoder's own refusals.
TEST(Loader, BytesModeDecodesTheCpuShareOfEachBatchOnTheWorkers) {
  testing::TempDir tmp("data");
  SynthOptions so;
  so.images = 24;
  so.classes = 3;
  so.threads = 2;
  make_synthetic_dataset((tmp.path() / "set").string(), so);
  const ImageFolder f = scan_image_folder((tmp.path() / "set").string());
  LoaderOptions o;
  o.workers = 2;
  o.batch_size = 8;
  o.out_size = 32;
  o.seed = 3;
  FolderLoader pixels(f, o);
  o.bytes_mode = true;
  o.gpu_can_decode = [](const JpegInfo&, const uint8_t*, size_t) { return true; };
  FolderLoader bytes(f, o);
  bytes.set_cpu_share(0.3);  // 2.4 of 8: the first 2 samples of each batch
  pixels.start_epoch(0, 3, 24);
  bytes.start_epoch(0, 3, 24);
  const size_t sample = pixels.sample_bytes();
  int batches = 0;
  while (HostBatch* b = bytes.next()) {
    HostBatch* p = pixels.next();
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(b->labels, p->labels);
    for (size_t i = 0; i < 8; ++i) {
      EXPECT_EQ(b->on_cpu[i], i < 2 ? 1 : 0) << "batch " << batches << " sample " << i;
      EXPECT_EQ(b->files[i].empty(), i < 2) << "batch " << batches << " sample " << i;
      if (i < 2) {
        EXPECT_EQ(std::memcmp(b->pixels + i * sample, p->pixels + i * sample, sample), 0)
            << "the workers decode a shared sample as pixel mode does: batch " << batches << " sample " << i;
      }
    }
    ++batches;
    bytes.release(b);
    pixels.release(p);
  }
  EXPECT_EQ(batches, 3);
  LoaderStats st = bytes.take_stats();
  EXPECT_EQ(st.cpu_shared, 6);
  EXPECT_EQ(st.cpu_decoded, 0);
  bytes.set_cpu_share(0.0);
  bytes.start_epoch(1, 3, 24);
  while (HostBatch* b = bytes.next()) {
    for (uint8_t c : b->on_cpu) EXPECT_EQ(c, 0);
    bytes.release(b);
  }
  EXPECT_EQ(bytes.take_stats().cpu_shared, 0);
}

/// The split's rule: up by a step after each batch the device stage did not wait for, down by a factor after one it
/// waited for, within [0, 1]; against workers that keep up with 60 % of each batch and no more, it settles there.
TEST(DecodeSplit, AHeldSplitStaysWhereItWasSetWhateverTheWaits) {
  DecodeSplit s = DecodeSplit::held(0.3);
  EXPECT_DOUBLE_EQ(s.update(1.0), 0.3);  // a long wait
  EXPECT_DOUBLE_EQ(s.update(0.0), 0.3);  // none
  EXPECT_DOUBLE_EQ(s.share(), 0.3);
}

TEST(DecodeSplit, TheWorkersShareRisesWhileTheDeviceNeverWaitsAndBacksOffWhenItDoes) {
  // The workers start with every sample: their images cost the training step no GPU time.
  EXPECT_DOUBLE_EQ(DecodeSplit().share(), 1.0);
  DecodeSplit s(0.5);
  for (int i = 0; i < 10; ++i) s.update(0.0);
  EXPECT_NEAR(s.share(), 0.5 + 10 * DecodeSplit::kRaise, 1e-12);
  s.update(DecodeSplit::kWaitedS / 2);  // a lock or a wake-up, not a wait
  EXPECT_NEAR(s.share(), 0.5 + 11 * DecodeSplit::kRaise, 1e-12);
  const double before = s.share();
  s.update(1e-3, /*queued_batches=*/2);  // the step still had batches queued: jitter, not a shortfall
  EXPECT_NEAR(s.share(), before + DecodeSplit::kRaise, 1e-12);
  s.update(0.0, 0);
  s.update(0.0, 0);
  s.update(0.0, 0);
  s.update(1e-3);
  EXPECT_NEAR(s.share(), (before + 4 * DecodeSplit::kRaise) * DecodeSplit::kBackOff, 1e-12);
  for (int i = 0; i < 100; ++i) s.update(0.0);
  EXPECT_DOUBLE_EQ(s.share(), 1.0);
  for (int i = 0; i < 100; ++i) s.update(1.0);
  EXPECT_LT(s.share(), 1e-6);
  EXPECT_GE(s.share(), 0.0);

  DecodeSplit sim;  // from the top, as a run starts
  double sum = 0;
  int n = 0;
  for (int batch = 0; batch < 600; ++batch) {
    const double waited = sim.share() > 0.6 ? 5e-3 : 0.0;  // the workers fall behind above 60 %
    sim.update(waited);
    if (batch == 4) {
      EXPECT_LT(sim.share(), 0.6 + 1e-9) << "backing off from the top takes a few batches";
    }
    if (batch >= 100) {
      sum += sim.share();
      ++n;
      EXPECT_GT(sim.share(), 0.6 * DecodeSplit::kBackOff - 1e-9) << "batch " << batch;
      EXPECT_LT(sim.share(), 0.6 + DecodeSplit::kRaise + 1e-9) << "batch " << batch;
    }
  }
  EXPECT_GT(sum / n, 0.5);  // most of what the workers can take, on average

  EXPECT_EQ(DecodeSplit::cpu_samples(0.5, 256), 128);
  EXPECT_EQ(DecodeSplit::cpu_samples(0.3, 8), 2);
  EXPECT_EQ(DecodeSplit::cpu_samples(1.5, 8), 8);
  EXPECT_EQ(DecodeSplit::cpu_samples(-0.5, 8), 0);
}

TEST(SyntheticDataset, IsDeterministicForASeedAndLooksLikeImageNet) {
  testing::TempDir tmp("data");
  SynthOptions o;
  o.images = 12;
  o.classes = 3;
  o.seed = 9;
  const SynthStats a = make_synthetic_dataset((tmp.path() / "a").string(), o);
  const SynthStats b = make_synthetic_dataset((tmp.path() / "b").string(), o);
  EXPECT_EQ(a.bytes_total, b.bytes_total);
  const std::string name = synthetic_class_name(1) + "/" + synthetic_class_name(1) + "_4.JPEG";
  std::ifstream fa(tmp.path() / "a" / name, std::ios::binary), fb(tmp.path() / "b" / name, std::ios::binary);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(fa)), {}), std::string((std::istreambuf_iterator<char>(fb)), {}));
  EXPECT_GT(a.bits_per_pixel, 1.5);  // photographs at quality 90 are 2-5 bits per pixel; white noise is far more
  EXPECT_LT(a.bits_per_pixel, 6.0);
  EXPECT_GE(a.mean_width, 250);
  EXPECT_LE(a.mean_width, 800);
  EXPECT_TRUE(fs::exists(tmp.path() / "a" / "dataset.json"));
  EXPECT_THROW(make_synthetic_dataset((tmp.path() / "a").string(), o), std::invalid_argument);  // not empty: nothing done
  const ImageFolder f = scan_image_folder((tmp.path() / "a").string());
  EXPECT_EQ(f.classes.size(), 3u);
  EXPECT_EQ(f.samples.size(), 12u);
  EXPECT_EQ(f.other_files, 0);  // dataset.json sits beside the class folders
}

TEST(DecodeChoice, AskedForIsTheRequestAndAutoOnACudaDeviceAsksForACalibration) {
  EXPECT_FALSE(choose_decode("cpu", 1, true).try_gpu);
  EXPECT_EQ(choose_decode("cpu", 1, true).reason, "decode: cpu was asked for");
  const DecodeChoice gpu = choose_decode("gpu", 64, true);
  EXPECT_TRUE(gpu.try_gpu && gpu.required && !gpu.calibrate);
  const DecodeChoice mixed = choose_decode("mixed", 15, true);
  EXPECT_TRUE(mixed.try_gpu && mixed.mixed && mixed.required && !mixed.calibrate);
  EXPECT_NE(mixed.reason.find("split between the 15 workers"), std::string::npos) << mixed.reason;
  // auto: no rule from one host's cores any more; every path is made ready and the run measures.
  for (int64_t workers : {1, 7, 15, 64}) {
    const DecodeChoice a = choose_decode("auto", workers, true);
    EXPECT_TRUE(a.calibrate && a.try_gpu && a.mixed) << workers;
    EXPECT_FALSE(a.required) << "auto falls back to the CPU where nvJPEG cannot run";
  }
  const DecodeChoice cpu_only = choose_decode("auto", 2, false);
  EXPECT_FALSE(cpu_only.try_gpu || cpu_only.calibrate);
  EXPECT_EQ(cpu_only.reason, "decode: auto: the CPU (no CUDA device for nvJPEG)");
}

/// The host: 15 workers delivered 6,712 images/s where the fused fp16 step trains ~7,480 (synthetic), and the
/// H200's hardware JPEG engine is there.
DecodeRates slow_host() {
  DecodeRates r;
  r.batch = 256;
  r.workers = 15;
  r.step = 7480;
  r.cpu = 6712;
  r.gpu_usable = true;
  r.gpu_backend = "hardware";
  r.gpu = 9800;
  r.fed_cpu = 6650;
  r.fed_gpu = 6960;
  return r;
}

TEST(DecodeChoice, TheSplitStartsWhereTheWorkersAndTheStepFinishABatchTogether) {
  DecodeRates r = slow_host();
  // The step fed by the workers waited for them: what they deliver beside it is that rate, not their rate alone.
  EXPECT_DOUBLE_EQ(workers_while_training(r), 6650);
  const double s = mixed_start_share(r);
  const double b = 256, t_step = b / r.step, cost = b / r.fed_gpu - t_step, t_cpu = b / r.fed_cpu;
  EXPECT_NEAR(t_step + (1 - s) * cost, s * t_cpu, 1e-12) << "the balance the share is solved from";
  EXPECT_GT(s, 0.85);  // the workers nearly keep up: nvJPEG takes a few images of each batch
  EXPECT_LT(s, 1.0);
  r.workers = 7;  // two GPUs share the host
  r.cpu = 5560;
  r.fed_cpu = 3290;
  EXPECT_NEAR(mixed_start_share(r), (t_step + cost) / (cost + b / 3290.0), 1e-12);
  EXPECT_GT(mixed_start_share(r), 0.4);
  EXPECT_LT(mixed_start_share(r), 0.5);
  r.cpu = 20000;  // workers that keep the step fed: their rate alone, and all the batch theirs
  r.fed_cpu = 7480;
  EXPECT_DOUBLE_EQ(workers_while_training(r), 20000);
  EXPECT_DOUBLE_EQ(mixed_start_share(r), 1.0);
  r.fed_gpu = 0;  // not measured
  EXPECT_EQ(mixed_start_share(r), -1);
}

TEST(DecodeChoice, ASlowHostSplitsEachBatchAndSaysWhyWithItsFigures) {
  DecodeRates r = slow_host();
  r.mixed_share = mixed_start_share(r);
  r.fed_mixed = 7350;
  const DecodePlan p = plan_decode(r);
  EXPECT_EQ(p.decode, "mixed");
  EXPECT_DOUBLE_EQ(p.cpu_share, r.mixed_share);
  EXPECT_DOUBLE_EQ(p.expected, 7350);
  for (const char* figure : {"7480 images/s", "15 workers alone decode 6712 images/s", "7350", "6650", "6960",
                             "nvJPEG (hardware backend)"}) {
    EXPECT_NE(p.reason.find(figure), std::string::npos) << figure << "\n" << p.reason;
  }
  EXPECT_EQ(p.reason.rfind("decode: auto (measured): mixed", 0), 0u) << p.reason;
  // Half the workers (a host shared by two GPUs): the split again, further from the workers.
  r.workers = 7;
  r.cpu = 3300;
  r.fed_cpu = 3290;
  r.mixed_share = mixed_start_share(r);
  r.fed_mixed = 7100;
  const DecodePlan shared = plan_decode(r);
  EXPECT_EQ(shared.decode, "mixed");
  EXPECT_LT(shared.cpu_share, 0.5);
  // Where nvJPEG alone feeds the step best, it decodes everything.
  r.fed_mixed = 6700;
  EXPECT_EQ(plan_decode(r).decode, "gpu");
  EXPECT_DOUBLE_EQ(plan_decode(r).cpu_share, 0.0);
}

TEST(DecodeChoice, AFastHostDecodesOnTheCpuWithoutTakingGpuTime) {
  DecodeRates r = slow_host();
  r.cpu = 11000;  // the earlier H200 host's workers at their best
  r.fed_cpu = 7450;  // and the step fed by them within 1 % of its own rate
  r.fed_gpu = 0;     // not needed then
  DecodePlan p = plan_decode(r);
  EXPECT_EQ(p.decode, "cpu");
  EXPECT_DOUBLE_EQ(p.cpu_share, 1.0);
  EXPECT_NE(p.reason.find("they keep it fed"), std::string::npos) << p.reason;
  // Fast alone is not enough: beside the step the workers deliver less, and only the fed rate says whether they
  // keep up (H100 host: 11,700 images/s alone; their busy time beside fp16 ResNet-50 put them at ~6,150).
  r.fed_cpu = 6100;
  r.fed_gpu = 6960;
  EXPECT_EQ(plan_decode(r).decode, "gpu") << plan_decode(r).reason;
  // Just short of the headroom: the fed comparison decides, and the CPU wins ties (it costs the step nothing).
  r.cpu = 7500;
  r.fed_cpu = 7380;
  r.fed_gpu = 6960;
  r.mixed_share = 0.99;
  r.fed_mixed = 7420;  // within 1 %
  p = plan_decode(r);
  EXPECT_EQ(p.decode, "cpu") << p.reason;
  EXPECT_NE(p.reason.find("fed by the workers it trains 7380 images/s"), std::string::npos) << p.reason;
  r.fed_mixed = 7480;  // clearly better
  EXPECT_EQ(plan_decode(r).decode, "mixed");
}

TEST(DecodeChoice, WithoutTheHardwareDecoderTheMeasuredCostDecidesAndTheReasonSaysSo) {
  // A card without the JPEG engine (or an nvJPEG without the hardware backend): nvJPEG decodes on the SMs and slows
  // the step far more; the fed rates show it and the workers keep most of each batch.
  DecodeRates r = slow_host();
  r.gpu_backend = "gpu_hybrid";
  r.gpu = 5200;
  r.fed_gpu = 4300;
  r.mixed_share = mixed_start_share(r);
  EXPECT_GT(r.mixed_share, 0.9);
  r.fed_mixed = 6900;
  DecodePlan p = plan_decode(r);
  EXPECT_EQ(p.decode, "mixed");
  EXPECT_NE(p.reason.find("gpu_hybrid backend: no JPEG engine used, decoding takes SM time"), std::string::npos)
      << p.reason;
  // The split measured no better than the workers alone: the CPU.
  r.fed_mixed = 6640;
  EXPECT_EQ(plan_decode(r).decode, "cpu");
  // No nvJPEG at all: the CPU, and the record says the run is bound by its input and what would help.
  DecodeRates none = slow_host();
  none.gpu_usable = false;
  none.gpu_backend.clear();
  none.gpu_unusable = "nvJPEG not found (tried libnvjpeg.so.13)";
  none.gpu = none.fed_cpu = none.fed_gpu = 0;
  p = plan_decode(none);
  EXPECT_EQ(p.decode, "cpu");
  EXPECT_DOUBLE_EQ(p.expected, 6712);
  for (const char* part : {"nvJPEG not found", "bound by its input", "data_workers"}) {
    EXPECT_NE(p.reason.find(part), std::string::npos) << part << "\n" << p.reason;
  }
}

TEST(DecodeChoice, DataOnlyRunsTakeThePathThatDeliversMostAndTooShortAFolderStillSplits) {
  DecodeRates r = slow_host();
  r.data_only = true;
  r.step = r.fed_cpu = r.fed_gpu = 0;
  EXPECT_EQ(plan_decode(r).decode, "gpu");  // 9,800 against 6,712
  r.gpu = 6700;
  EXPECT_EQ(plan_decode(r).decode, "cpu");
  EXPECT_NE(plan_decode(r).reason.find("data_only"), std::string::npos);
  // A folder of too few batches to time the fed step: the split, from the workers' whole batch.
  DecodeRates tiny = slow_host();
  tiny.cpu = 0;
  tiny.fed_cpu = tiny.fed_gpu = 0;
  const DecodePlan p = plan_decode(tiny);
  EXPECT_EQ(p.decode, "mixed");
  EXPECT_DOUBLE_EQ(p.cpu_share, 1.0);
  EXPECT_NE(p.reason.find("unmeasured"), std::string::npos) << p.reason;
}

}  // namespace
}  // namespace gpubench::data
