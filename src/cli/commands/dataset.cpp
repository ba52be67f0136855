// gpubench dataset make: an ImageNet-like JPEG ImageFolder for `data: folder` runs (data/synthetic_images.hpp).

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <fmt/format.h>

#include "cli/commands/commands.h"
#include "cli/interrupt.h"
#include "gpubench/data/synthetic_images.hpp"
#include "gpubench/report/views.hpp"

namespace gpubench::cli {

namespace {

class DatasetCommand final : public Command {
 public:
  DatasetCommand() { o_.images = 25600; }
  void declare(CLI::App& cmd) override {
    cmd.require_subcommand(1);
    CLI::App* make = cmd.add_subcommand(
        "make", "Write an ImageNet-like JPEG ImageFolder (natural-image-like content, ImageNet's sizes, quality 90)");
    make->add_option("--out", out_, "Folder to create (must not exist, or be empty)")->required()->type_name("DIR");
    make->add_option("--images", o_.images, "Images to write (default 25600)")
        ->check(CLI::Range(int64_t{1}, int64_t{100000000}).description(""))
        ->type_name("INT")->transform(decimal_whole());
    make->add_option("--classes", o_.classes, "Class folders, images spread evenly (default 100)")
        ->check(CLI::Range(int64_t{1}, int64_t{1000000}).description(""))
        ->type_name("INT")->transform(decimal_whole());
    make->add_option("--seed", o_.seed, "Seed: the same seed writes the same files (default 0)")
        ->check(unsigned_64())
        ->type_name("INT")->transform(decimal_whole());
    make->add_option("--quality", o_.quality, "JPEG quality (default 90)")->check(CLI::Range(1, 100).description(""))->type_name("INT")->transform(decimal_whole());
    make->add_option("--threads", o_.threads, "Encoding threads (default: all cores)")
        ->check(CLI::Range(0, 4096).description(""))
        ->type_name("INT")->transform(decimal_whole());
    make->footer("Then: gpubench run resnet50 --data folder --data-path DIR [--decode cpu|gpu] [--data-only]\n"
                 "Statistics (sizes, bits per pixel) are printed and written to DIR/dataset.json.");
  }

  int run(Context& ctx) override {
    if (out_.empty()) throw UsageError("--out: no folder named");
    const bool tty = isatty(STDERR_FILENO) != 0 && !ctx.quiet();
    data::SynthStats st;
    // Ctrl-C or SIGTERM stops the writers; what they wrote is removed like any failure's.
    const StopOnSignal stop;
    o_.stop = stop.flag();
    try {
      st = data::make_synthetic_dataset(out_, o_, [tty](int64_t done, int64_t total) {
        if (tty) std::fprintf(stderr, "\r\033[Kwriting images: %lld/%lld", static_cast<long long>(done), static_cast<long long>(total));
      });
    } catch (const std::invalid_argument& e) {  // nothing written: the options or the folder
      throw UsageError(e.what());
    } catch (const std::exception& e) {
      if (tty) std::fputs("\r\033[K", stderr);
      if (stop.requested()) {
        spdlog::error("dataset make interrupted: nothing was left in {}", out_);
        return kExitInterrupted;
      }
      throw OutputNotWritten(std::string(e.what()) + " (nothing was left in " + out_ + ")");
    }
    if (tty) std::fputs("\r\033[K", stderr);
    const double n = static_cast<double>(st.images);
    Document d;
    d.kind = "dataset";
    d.title = "gpubench dataset make";
    d.paragraph(fmt::format("wrote {} images in {} classes to {} in {:.1f} s", st.images, st.classes, out_, st.seconds));
    d.paragraph(fmt::format("file size: mean {:.1f} KB, median {:.1f} KB, min {:.1f} KB, max {:.1f} KB, total {:.1f} MB",
                            static_cast<double>(st.bytes_total) / n / 1e3, static_cast<double>(st.bytes_median) / 1e3,
                            static_cast<double>(st.bytes_min) / 1e3, static_cast<double>(st.bytes_max) / 1e3,
                            static_cast<double>(st.bytes_total) / 1e6));
    d.paragraph(fmt::format("mean size {:.0f} x {:.0f} px, {:.2f} bits per pixel (quality {}, 4:2:0); statistics in "
                            "{}/dataset.json",
                            st.mean_width, st.mean_height, st.bits_per_pixel, o_.quality, out_));
    d.data = {{"folder", out_},          {"images", st.images},          {"classes", st.classes},
              {"seconds", st.seconds},   {"bytes_total", st.bytes_total}, {"bits_per_pixel", st.bits_per_pixel},
              {"statistics", out_ + "/dataset.json"}};
    ctx.print(d);
    return kExitOk;
  }

 private:
  data::SynthOptions o_;
  std::string out_;
};

}  // namespace

CommandSpec dataset_command() {
  return {"dataset", "Data sets for `data: folder` runs: `gpubench dataset make`",
          {kExitOk, kExitUsage, kExitOutputNotWritten, kExitInterrupted}, "console",
          [] { return std::make_unique<DatasetCommand>(); }};
}

}  // namespace gpubench::cli
