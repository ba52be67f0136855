#include "gpubench/report/run_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>

#include "gpubench/core/stats.hpp"
#include "gpubench/report/console.hpp"

namespace gpubench {

namespace {

struct Row {
  std::vector<std::string> cells;
};

const std::vector<std::string>& run_columns() {
  static const std::vector<std::string> cols{"record", "model", "device", "precision", "batch", "GPUs", "mode",
                                             "status", "samples/s", "epoch s", "step ms median / p95",
                                             "peak reserved", "power W", "J/sample", "MFU"};
  return cols;
}

std::string file_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// Each chart file with its title, in display order.
const std::vector<std::pair<std::string, std::string>>& charts() {
  static const std::vector<std::pair<std::string, std::string>> all{
      {"throughput.png", "Throughput per run"},
      {"epoch_time.png", "Epoch time"},
      {"telemetry.png", "Power, SM clock and temperature"},
      {"batch_size.png", "Throughput against batch size"},
      {"compare.png", "Comparison with 95 % intervals"}};
  return all;
}

std::string chart_title(const std::string& name) {
  for (const auto& [file, title] : charts()) {
    if (file == name) return title;
  }
  return name;
}

std::vector<Row> run_rows(const ReportInput& in) {
  std::vector<Row> rows;
  for (const auto& lr : in.runs) {
    const RunRecord& r = lr.record;
    const bool ok = r.status == RunStatus::kOk;
    const JobEnergy energy = job_energy(r);  // the whole job's, also for records older than the summary's figures
    const auto& power = energy.power_avg_w;
    const auto& joules = energy.joules_per_sample;
    rows.push_back(Row{{file_name(lr.path), r.scenario.model,
                        r.environment.device_name.empty() ? r.environment.device : r.environment.device_name,
                        r.precision.resolved.empty() ? r.scenario.precision : r.precision.resolved,
                        r.scenario.batch_size ? std::to_string(*r.scenario.batch_size) : "-",
                        std::to_string(r.distributed ? r.distributed->world_size : 1),
                        r.execution.mode.empty() ? "eager" : r.execution.mode,
                        ok ? "ok" : to_string(r.status),
                        ok ? fmt::format("{:.1f}", r.summary.samples_per_s) : "-",
                        ok && r.summary.epoch_seconds_mean > 0 ? fmt::format("{:.2f}", r.summary.epoch_seconds_mean) : "-",
                        ok ? fmt::format("{:.2f} / {:.2f}", r.summary.step_time.median_ms, r.summary.step_time.p95_ms) : "-",
                        r.summary.peak_reserved_bytes ? format_bytes(*r.summary.peak_reserved_bytes) : "-",
                        power ? fmt::format("{:.0f}", *power) : "-", joules ? fmt::format("{:.3f}", *joules) : "-",
                        r.summary.mfu ? fmt::format("{:.1f}%", *r.summary.mfu * 100) : "-"}});
  }
  return rows;
}

/// Runs that differ only in batch size, grouped (model, precision, device, mode), each group sorted by batch.
std::vector<std::vector<const RunRecord*>> sweep_groups(const ReportInput& in) {
  std::map<std::string, std::vector<const RunRecord*>> groups;
  for (const auto& lr : in.runs) {
    if (lr.record.status != RunStatus::kOk && lr.record.status != RunStatus::kOom) continue;
    nlohmann::json key = comparable_scenario(lr.record.scenario);
    key.erase("batch_size");
    key.erase("dataset_size");
    key["device_name"] = lr.record.environment.device_name;
    groups[key.dump()].push_back(&lr.record);
  }
  std::vector<std::vector<const RunRecord*>> out;
  for (auto& [k, g] : groups) {
    std::sort(g.begin(), g.end(), [](const RunRecord* a, const RunRecord* b) {
      return a->scenario.batch_size.value_or(0) < b->scenario.batch_size.value_or(0);
    });
    if (g.size() > 1 && g.front()->scenario.batch_size != g.back()->scenario.batch_size) out.push_back(g);
  }
  return out;
}

/// Runs of the same scenario on the same device in the same mode (repeats): their throughput spread.
struct RepeatGroup {
  std::string label;
  std::vector<double> rates;
};

std::vector<RepeatGroup> repeat_groups(const ReportInput& in) {
  std::map<std::string, RepeatGroup> groups;
  for (const auto& lr : in.runs) {
    const RunRecord& r = lr.record;
    if (r.status != RunStatus::kOk || r.summary.samples_per_s <= 0) continue;
    nlohmann::json key = comparable_scenario(r.scenario);
    key["device_name"] = r.environment.device_name;
    key["mode"] = r.execution.mode;
    RepeatGroup& g = groups[key.dump()];
    g.label = fmt::format("{} bs{} {} {}", r.scenario.model, r.scenario.batch_size.value_or(0), r.precision.resolved,
                          r.execution.mode.empty() ? "eager" : r.execution.mode);
    g.rates.push_back(r.summary.samples_per_s);
  }
  std::vector<RepeatGroup> out;
  for (auto& [k, g] : groups) {
    if (g.rates.size() > 1) out.push_back(g);
  }
  return out;
}

/// Mean, min, max and coefficient of variation (sample standard deviation / mean, %) of throughputs.
std::array<double, 4> spread(const std::vector<double>& rates) {
  const StepTimeStats st = summarize_step_times(rates);  // the step-time statistics, applied to samples/s
  return {st.mean_ms, st.min_ms, st.max_ms, st.mean_ms > 0 ? st.stdev_ms / st.mean_ms * 100.0 : 0.0};
}

}  // namespace

std::string base64_encode(const std::string& bytes) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    out += {t[(v >> 18) & 63], t[(v >> 12) & 63], t[(v >> 6) & 63], t[v & 63]};
  }
  if (i + 1 == bytes.size()) {
    const unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    out += {t[(v >> 18) & 63], t[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == bytes.size()) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8);
    out += {t[(v >> 18) & 63], t[(v >> 12) & 63], t[(v >> 6) & 63], '='};
  }
  return out;
}

std::string format_report_markdown(const ReportInput& in) {
  std::string out = "# " + in.title + "\n\n";
  out += fmt::format("{} run record(s).\n\n## Runs\n\n", in.runs.size());
  const auto& cols = run_columns();
  out += "|";
  for (const auto& c : cols) out += " " + c + " |";
  out += "\n|";
  for (size_t i = 0; i < cols.size(); ++i) out += " --- |";
  out += "\n";
  for (const auto& row : run_rows(in)) {
    out += "|";
    for (const auto& c : row.cells) out += " " + c + " |";
    out += "\n";
  }
  const auto sweeps = sweep_groups(in);
  if (!sweeps.empty()) {
    out += "\n## Throughput against batch size\n";
    for (const auto& g : sweeps) {
      const RunRecord& f = *g.front();
      out += fmt::format("\n{} {} on {}:\n\n| batch | status | samples/s | peak reserved |\n| --- | --- | --- | --- |\n",
                         f.scenario.model, f.precision.resolved, f.environment.device_name);
      for (const RunRecord* r : g) {
        out += fmt::format("| {} | {} | {} | {} |\n", r->scenario.batch_size.value_or(0), to_string(r->status),
                           r->status == RunStatus::kOk ? fmt::format("{:.1f}", r->summary.samples_per_s) : "-",
                           r->summary.peak_reserved_bytes ? format_bytes(*r->summary.peak_reserved_bytes) : "-");
      }
    }
  }
  const auto repeats = repeat_groups(in);
  if (!repeats.empty()) {
    out += "\n## Repeats\n\n| scenario | runs | mean samples/s | min | max | coefficient of variation |\n"
           "| --- | --- | --- | --- | --- | --- |\n";
    for (const auto& g : repeats) {
      const auto [mean, lo, hi, cov] = spread(g.rates);
      out += fmt::format("| {} | {} | {:.1f} | {:.1f} | {:.1f} | {:.2f}% |\n", g.label, g.rates.size(), mean, lo, hi, cov);
    }
  }
  out += "\n## Charts\n\n";
  if (in.charts.empty()) out += "No charts: " + (in.chart_note.empty() ? std::string("nothing to plot") : in.chart_note) + "\n";
  for (const auto& c : in.charts) out += "![" + chart_title(c) + "](" + c + ")\n\n";
  return out;
}

std::string format_report_html(const ReportInput& in, const std::function<std::string(const std::string&)>& png_base64) {
  std::string out = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + markup_escape(in.title) +
                    "</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
                    "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}th{background:#eee}"
                    "img{max-width:100%}</style></head><body>\n";
  out += "<h1>" + markup_escape(in.title) + "</h1>\n<p>" + std::to_string(in.runs.size()) + " run record(s).</p>\n";
  out += "<h2>Runs</h2>\n<table><tr>";
  for (const auto& c : run_columns()) out += "<th>" + markup_escape(c) + "</th>";
  out += "</tr>\n";
  for (const auto& row : run_rows(in)) {
    out += "<tr>";
    for (const auto& c : row.cells) out += "<td>" + markup_escape(c) + "</td>";
    out += "</tr>\n";
  }
  out += "</table>\n";
  const auto sweeps = sweep_groups(in);
  if (!sweeps.empty()) {
    out += "<h2>Throughput against batch size</h2>\n";
    for (const auto& g : sweeps) {
      out += "<p>" + markup_escape(g.front()->scenario.model + " " + g.front()->precision.resolved + " on " +
                                 g.front()->environment.device_name) +
             "</p>\n<table><tr><th>batch</th><th>status</th><th>samples/s</th></tr>\n";
      for (const RunRecord* r : g) {
        out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n", r->scenario.batch_size.value_or(0),
                           to_string(r->status),
                           r->status == RunStatus::kOk ? fmt::format("{:.1f}", r->summary.samples_per_s) : "-");
      }
      out += "</table>\n";
    }
  }
  const auto repeats = repeat_groups(in);
  if (!repeats.empty()) {
    out += "<h2>Repeats</h2>\n<table><tr><th>scenario</th><th>runs</th><th>mean samples/s</th><th>min</th><th>max</th>"
           "<th>coefficient of variation</th></tr>\n";
    for (const auto& g : repeats) {
      const auto [mean, lo, hi, cov] = spread(g.rates);
      out += fmt::format("<tr><td>{}</td><td>{}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.2f}%</td></tr>\n",
                         markup_escape(g.label), g.rates.size(), mean, lo, hi, cov);
    }
    out += "</table>\n";
  }
  out += "<h2>Charts</h2>\n";
  if (in.charts.empty()) out += "<p>No charts: " + markup_escape(in.chart_note.empty() ? "nothing to plot" : in.chart_note) + "</p>\n";
  for (const auto& c : in.charts) {
    const std::string data = png_base64(c);
    if (data.empty()) continue;
    out += "<h3>" + markup_escape(chart_title(c)) + "</h3>\n<img alt=\"" + markup_escape(chart_title(c)) +
           "\" src=\"data:image/png;base64," + data + "\">\n";
  }
  out += "</body></html>\n";
  return out;
}

std::string markup_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

const std::vector<std::string>& report_chart_files() {
  static const std::vector<std::string> files = [] {
    std::vector<std::string> out;
    for (const auto& c : charts()) out.push_back(c.first);
    return out;
  }();
  return files;
}

}  // namespace gpubench
