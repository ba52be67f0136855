// gpubench info: versions, the device and its table entry, measured ceilings (--measure-peak), telemetry readers and
// devices.

#include <fmt/format.h>

#include "cli/commands/commands.h"
#include "gpubench/core/build_info.hpp"
#include "gpubench/core/reference/device_table.hpp"
#include "gpubench/engine/engine.hpp"
#include "gpubench/report/views.hpp"
#include "gpubench/telemetry/readers.hpp"

namespace gpubench::cli {

namespace {

std::string tf(const std::optional<double>& v) { return v ? fmt::format("{:g}", *v) : std::string("-"); }

/// The first available GPU, else the CPU.
std::string default_device() {
  for (const auto& d : list_devices()) {
    if (d.available && d.id != "cpu" && d.id != "mps") return d.id;
  }
  return "cpu";
}

class InfoCommand final : public Command {
 public:
  void declare(CLI::App& cmd) override {
    cmd.add_flag("--measure-peak", measure_peak_,
                 "Measure the device's dense matrix-product TFLOP/s per precision and its copy bandwidth "
                 "(the ceilings for devices not in configs/devices/devices.yaml)");
    cmd.add_option("--device", device_, "Device to describe (default: the first GPU, else the CPU)")->type_name("DEVICE");
    cmd.add_option("--backend-library", backend_library_,
                   "Load an out-of-tree accelerator's backend library (a LibTorch PrivateUse1 backend) first and "
                   "list what it registered (docs/backends.md)")
        ->type_name("PATH");
  }

  int run(Context& ctx) override {
    std::optional<BackendLibrary> library;
    if (!backend_library_.empty()) {
      try {
        library = load_backend_library(backend_library_);
      } catch (const BackendLibraryError& e) {
        throw UsageError(std::string("--backend-library: ") + e.what());
      }
    }
    const std::string device = !device_.empty() ? device_ : library ? library->backend + ":0" : default_device();
    const EnvironmentRecord e = describe_environment(device);
    Document d;
    d.kind = "info";
    d.title = "gpubench info";
    d.paragraph(fmt::format("gpubench {} ({}, {} build, {})", e.gpubench_version, e.git_revision, e.build_type, e.compiler));
    std::vector<std::pair<std::string, std::string>> rows{
        {"host", e.hostname},
        {"os", e.os},
        {"cpu", e.cpu_model + " (" + std::to_string(e.cpu_cores) + " threads)"},
        {"libtorch", e.libtorch_build.empty() ? e.libtorch_version : e.libtorch_build},
        {"cuda module", build_info().cuda_module
                            ? "yes: fused and FP8 kernels, nvJPEG, cuBLASLt epilogues, CUDA graphs"
                            : "no (built with GPUBENCH_CUDA=OFF or without nvcc): kernels: fused, precision: fp8, "
                              "decode: gpu|mixed and --cuda-graph are refused"},
        {"backend library", library ? library->path + ": registered '" + library->backend + "' (" +
                                          std::to_string(library->devices) + " device(s))" +
                                          (library->version.empty() ? "" : ", version " + library->version)
                                    : ""},
        {"gpubench backend", e.backend},
        {"cuda runtime", e.cuda_runtime_version},
        {"cuda driver api", e.cuda_driver_api_version},
        {"cudnn", e.cudnn_version},
        {"default device", e.device + (e.device_name.empty() ? "" : " (" + e.device_name + ")")},
        {"device memory", e.device_memory_bytes ? format_bytes(*e.device_memory_bytes) : ""},
        {"compute capability", e.compute_capability}};
    const DeviceSpec* spec = find_device_spec(e.device_name);
    nlohmann::json table_entry;
    if (spec != nullptr) {
      rows.emplace_back("device table", fmt::format("{}: dense TFLOP/s fp32 {} / tf32 {} / bf16 {} / fp16 {} / fp8 {}; {} GB/s; {} W",
                                                    spec->name, tf(spec->fp32_tflops), tf(spec->tf32_tflops),
                                                    tf(spec->bf16_tflops), tf(spec->fp16_tflops), tf(spec->fp8_tflops),
                                                    tf(spec->bandwidth_gbs), tf(spec->tdp_w)));
      rows.emplace_back("  source", spec->source);
      if (!spec->measured_source.empty()) {
        // The achievable peaks the bottleneck attribution uses (docs/bottleneck.md).
        rows.emplace_back("  measured", fmt::format("TFLOP/s fp32 {} / tf32 {} / bf16 {} / fp16 {} / fp8 {}; {} GB/s ({})",
                                                    tf(spec->measured_fp32_tflops), tf(spec->measured_tf32_tflops),
                                                    tf(spec->measured_bf16_tflops), tf(spec->measured_fp16_tflops),
                                                    tf(spec->measured_fp8_tflops), tf(spec->measured_bandwidth_gbs),
                                                    spec->measured_source));
      }
      table_entry = {{"name", spec->name},           {"fp32_tflops", spec->fp32_tflops}, {"tf32_tflops", spec->tf32_tflops},
                     {"bf16_tflops", spec->bf16_tflops}, {"fp16_tflops", spec->fp16_tflops},
                     {"fp8_tflops", spec->fp8_tflops},
                     {"bandwidth_gbs", spec->bandwidth_gbs}, {"tdp_w", spec->tdp_w},   {"source", spec->source},
                     {"measured_fp32_tflops", spec->measured_fp32_tflops},
                     {"measured_tf32_tflops", spec->measured_tf32_tflops},
                     {"measured_bf16_tflops", spec->measured_bf16_tflops},
                     {"measured_fp16_tflops", spec->measured_fp16_tflops},
                     {"measured_fp8_tflops", spec->measured_fp8_tflops},
                     {"measured_bandwidth_gbs", spec->measured_bandwidth_gbs},
                     {"measured_source", spec->measured_source}};
    } else {
      rows.emplace_back("device table",
                        "no entry for '" + e.device_name + "': MFU is not reported; --measure-peak gives ceilings");
    }
    d.table(fields_table("environment", "", rows));
    d.data = {{"schema", "gpubench.info"},
              {"environment", e},
              {"device_table", table_entry},
              {"build",
               {{"cuda_module", build_info().cuda_module},
                {"libtorch_version", build_info().libtorch_version},
                {"libtorch_kind", build_info().libtorch_kind}}}};
    if (measure_peak_) add_peaks(d, device, spec);
    Table readers;
    readers.id = "telemetry_readers";
    readers.title = "Telemetry readers:";
    for (const char* k : {"reader", "available", "detail"}) readers.add_column(Column::text(k, k));
    for (const auto& r : telemetry::probe_readers()) {
      readers.rows.push_back({Cell::str(r.name), Cell::str(r.available ? "available" : "unavailable"), Cell::str(r.detail)});
      d.data["telemetry_readers"].push_back({{"name", r.name}, {"available", r.available}, {"detail", r.detail}});
    }
    d.table(std::move(readers));
    Table backends;
    backends.id = "backends";
    backends.title = "Backends (device: NAME):";
    for (const char* k : {"backend", "in_libtorch", "available", "gpubench_backend", "tested", "note"}) {
      backends.add_column(Column::text(k, k));
    }
    for (const auto& b : list_backends()) {
      backends.rows.push_back({Cell::str(b.name + (b.version.empty() ? "" : " " + b.version)),
                               Cell::str(b.in_libtorch ? "yes" : "no"), Cell::str(b.available ? "yes" : "no"),
                               Cell::str(b.serves), Cell::str(b.tested), Cell::str(b.note)});
      d.data["backends"].push_back({{"name", b.name},
                                    {"in_libtorch", b.in_libtorch},
                                    {"available", b.available},
                                    {"version", b.version},
                                    {"run_on_hardware", b.run_on_hardware},
                                    {"gpubench_backend", b.serves},
                                    {"tested", b.tested},
                                    {"note", b.note}});
    }
    d.table(std::move(backends));
    Table devices;
    devices.id = "devices";
    devices.title = "Devices:";
    for (const char* k : {"id", "available", "name"}) devices.add_column(Column::text(k, k));
    for (const auto& x : list_devices()) {
      devices.rows.push_back({Cell::str(x.id), Cell::str(x.available ? "available" : "unavailable"),
                              Cell::str(x.name + (x.note.empty() ? "" : " - " + x.note))});
      d.data["devices"].push_back({{"id", x.id}, {"available", x.available}, {"name", x.name}, {"note", x.note}});
    }
    d.table(std::move(devices));
    ctx.print(d);
    return kExitOk;
  }

 private:
  /// --measure-peak: the measured ceilings beside the table's. Throws RunFailedError when the device cannot run it.
  static void add_peaks(Document& d, const std::string& device, const DeviceSpec* spec) {
    PeakMeasurement m;
    try {
      m = measure_peaks(device);
    } catch (const std::exception& ex) {
      throw RunFailedError("could not measure " + device + ": " + ex.what());
    }
    std::vector<std::pair<std::string, std::string>> rows;
    for (const auto& [mode, tflops] : m.tflops) {
      std::string vs;
      if (spec != nullptr && spec->peak_tflops(mode)) {
        vs = fmt::format(" ({:.0f}% of the table's {:g})", 100.0 * tflops / *spec->peak_tflops(mode), *spec->peak_tflops(mode));
      }
      rows.emplace_back(mode + " matmul", fmt::format("{:.1f} TFLOP/s{}", tflops, vs));
      d.data["measured"]["tflops"][mode] = tflops;
    }
    std::string vs;
    if (spec != nullptr && spec->bandwidth_gbs) {
      vs = fmt::format(" ({:.0f}% of the table's {:g} GB/s)", 100.0 * m.copy_gbs / *spec->bandwidth_gbs, *spec->bandwidth_gbs);
    }
    rows.emplace_back("device copy", fmt::format("{:.0f} GB/s{}", m.copy_gbs, vs));
    rows.emplace_back("method", m.method);
    d.data["measured"]["copy_gbs"] = m.copy_gbs;
    d.data["measured"]["method"] = m.method;
    d.table(fields_table("measured_ceilings", "Measured ceilings on " + device + ":", rows));
  }

  bool measure_peak_ = false;
  std::string device_;
  std::string backend_library_;
};

}  // namespace

CommandSpec info_command() {
  return {"info", "Show versions, devices, the device's table entry and available telemetry",
          {kExitOk, kExitRunFailed, kExitUsage, kExitOutputNotWritten}, "console",
          [] { return std::make_unique<InfoCommand>(); }};
}

}  // namespace gpubench::cli
