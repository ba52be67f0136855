#include <fmt/format.h>

#include "gpubench/report/compare_report.hpp"

namespace gpubench {

namespace {
std::string num(const std::optional<double>& v, const char* f = "{:.1f}") {
  return v ? fmt::format(fmt::runtime(f), *v) : std::string("-");
}
}  // namespace

std::string format_published_markdown(const PublishedComparison& c, const RunRecord& run, const std::string& run_path) {
  const PublishedReference& ref = *c.reference;
  std::string out = fmt::format("## {} vs published `{}`\n\n", run_path, ref.id);
  out += fmt::format("Published: {}\n> {}\n\n", ref.source, ref.quote);
  const std::string unit = run.model.sample_unit.empty() ? "samples" : run.model.sample_unit;
  out += "| | published | measured here |\n| --- | --- | --- |\n";
  out += fmt::format("| device | {} | {} |\n", ref.device, run.environment.device_name.empty() ? run.environment.device
                                                                                              : run.environment.device_name);
  out += fmt::format("| {}/s | {} | {} |\n", unit, num(c.published_samples_per_s), num(c.measured_samples_per_s));
  if (ref.epoch_seconds) {
    out += fmt::format("| epoch of {} samples (s) | {} | {} |\n", ref.dataset_size ? std::to_string(*ref.dataset_size) : "?",
                       num(ref.epoch_seconds), num(c.measured_epoch_seconds));
  }
  if (ref.steps_per_s) {
    out += fmt::format("| it/s | {} | {} |\n", num(ref.steps_per_s), num(std::optional<double>(run.summary.steps_per_s)));
  }
  if (c.published_joules_per_sample || c.measured_joules_per_sample) {
    out += fmt::format("| energy per sample (J) | {} | {} |\n", num(c.published_joules_per_sample, "{:.3f}"),
                       num(c.measured_joules_per_sample, "{:.3f}"));
  }
  if (c.published_price_performance || c.recomputed_price_performance || c.measured_price_performance) {
    out += fmt::format("| price-performance ({}) | {} as published; {} from its own time and price | {} |\n",
                       ref.price_performance_unit.empty() ? "epochs/min per 10,000 CNY" : ref.price_performance_unit,
                       num(c.published_price_performance, "{:.2f}"), num(c.recomputed_price_performance, "{:.2f}"),
                       c.measured_price_performance ? num(c.measured_price_performance, "{:.2f}")
                                                    : std::string("no CNY price for this device in the table"));
  }
  if (ref.scaling_2gpu) out += fmt::format("| 2-device speed-up | {:.2f}x | run `gpubench scaling` |\n", *ref.scaling_2gpu);
  if (c.percent_of_published) {
    out += fmt::format("\nMeasured throughput is **{:.1f} %** of the published figure.\n", *c.percent_of_published);
  } else {
    out += "\nNo measured throughput to compare (the run did not finish ok).\n";
  }
  out += "\nHow the recipes differ:\n";
  for (const auto& d : c.differences) out += "- " + d + "\n";
  if (!c.remarks.empty()) {
    out += "\nAbout the published figure:\n";
    for (const auto& r : c.remarks) out += "- " + r + "\n";
  }
  return out;
}

}  // namespace gpubench
