// The views of commands that run or read several runs: sweep, scaling, its projection, trace.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "gpubench/core/analysis/profile.hpp"
#include "gpubench/core/record/metric_catalog.hpp"
#include "gpubench/core/record/stats.hpp"
#include "gpubench/report/views.hpp"
#include "report/view_helpers.h"

namespace gpubench {

using namespace views;  // NOLINT(google-build-using-namespace): the views' shared helpers

namespace {

/// mode: generate points: decode tokens/s per prompt length (rows) and batch (columns), and for each prompt length
/// the batch where decode throughput stops growing: the first whose next swept batch decodes less than 10 % faster.
void add_decode_table(Document& d, const std::vector<SweepPointResult>& points) {
  std::map<int64_t, std::map<int64_t, double>> rate;  // prompt -> batch -> decode tokens/s
  std::set<int64_t> batches;
  for (const auto& p : points) {
    if (!p.record || p.record->status != RunStatus::kOk || p.record->scenario.mode != "generate") continue;
    const RunRecord& r = *p.record;
    const Metric* m = find_metric(r.summary.metrics, "decode_tokens_per_s");
    if (m == nullptr || !r.scenario.batch_size || !r.scenario.prompt_tokens) continue;  // (the resolver sets both)
    rate[*r.scenario.prompt_tokens][*r.scenario.batch_size] = m->value;
    batches.insert(*r.scenario.batch_size);
  }
  if (rate.empty()) return;
  Table t;
  t.id = "decode";
  t.title = "Decode tokens/s by prompt length and batch";
  t.add_column(Column::count("prompt_tokens", "prompt tokens"));
  for (const int64_t b : batches) {
    t.add_column(Column{"batch_" + std::to_string(b), "batch " + std::to_string(b), "tokens/s", Better::kHigher});
  }
  t.add_column(Column::count("saturating_batch", "stops growing at batch"));
  nlohmann::json cells = nlohmann::json::array(), saturation = nlohmann::json::object();
  for (const auto& [prompt, by_batch] : rate) {
    auto& row = t.add_row();
    row[0] = Cell::num(static_cast<double>(prompt));
    size_t c = 1;
    for (const int64_t b : batches) {
      const auto it = by_batch.find(b);
      row[c++] = it == by_batch.end() ? Cell::none() : Cell::num(it->second);
      if (it != by_batch.end()) {
        cells.push_back({{"prompt_tokens", prompt}, {"batch_size", b}, {"decode_tokens_per_s", it->second}});
      }
    }
    std::optional<int64_t> stops;
    for (auto it = by_batch.begin(); it != by_batch.end() && std::next(it) != by_batch.end(); ++it) {
      if (std::next(it)->second < 1.10 * it->second) {
        stops = it->first;
        break;
      }
    }
    row[c] = stops ? Cell::num(static_cast<double>(*stops)) : Cell::none();
    saturation[std::to_string(prompt)] = stops ? nlohmann::json(*stops) : nlohmann::json(nullptr);
  }
  t.notes.push_back("decode tokens/s: each point's median over its timed generations (the new tokens after the first "
                    "over the time they took); a batch \"stops growing\" when the next swept batch decodes less than "
                    "10 % faster; empty where throughput still grows at the largest batch swept");
  d.table(std::move(t));
  d.data["decode"] = cells;
  d.data["decode_saturating_batch"] = saturation;
}

}  // namespace

Document sweep_document(const std::string& model, const std::vector<SweepPointResult>& points) {
  Document d;
  d.kind = "sweep";
  d.title = "gpubench sweep " + model;
  Table t;
  t.id = "points";
  t.add_column(Column::text("point", "point"));
  t.add_column(Column::text("status", "status"));
  t.add_column(Column::count("batch_size", "batch"));
  t.add_column(Column{kThroughputTag, "throughput", "samples/s", Better::kHigher});
  t.add_column(Column{"step_time_median_ms", "step time median", "ms", Better::kLower});
  t.add_column(Column{"peak_allocated_bytes", "peak allocated", "bytes", Better::kLower});
  t.add_column(Column::text("record", "record"));
  nlohmann::json rows = nlohmann::json::array();
  std::string unit;
  for (const auto& p : points) {
    nlohmann::json row = {{"point", p.label}, {"swept", p.swept}, {"record", p.record_path}, {"exit_code", p.exit_code}};
    TestCase tc{p.label, TestCase::Outcome::kPass, ""};
    if (!p.record) {
      const std::string status = p.status_note.empty() ? fmt::format("no record (exit {})", p.exit_code) : p.status_note;
      row["status"] = p.status_note.empty() ? "missing" : "oom";
      if (!p.status_note.empty()) row["reason"] = p.status_note;
      t.rows.push_back({Cell::str(p.label), Cell::str(status), Cell::none(), Cell::none(), Cell::none(), Cell::none(), Cell::none()});
      tc.outcome = p.status_note.empty() ? TestCase::Outcome::kFail : TestCase::Outcome::kSkip;
      tc.message = status;
    } else {
      const RunRecord& r = *p.record;
      const bool ok = r.status == RunStatus::kOk;
      if (ok && unit.empty()) unit = throughput_unit(r);
      row["status"] = to_string(r.status);
      row["reason"] = r.reason;
      row["batch_size"] = r.scenario.batch_size ? *r.scenario.batch_size : 0;
      row["samples_per_s"] = r.summary.samples_per_s;
      row["peak_allocated_bytes"] = r.summary.peak_allocated_bytes;
      t.rows.push_back({Cell::str(p.label), Cell::str(ok ? "ok" : to_string(r.status) + ": " + r.reason),
                        r.scenario.batch_size ? Cell::num(static_cast<double>(*r.scenario.batch_size)) : Cell::none(),
                        ok ? Cell::num(r.summary.samples_per_s) : Cell::none(),
                        ok ? Cell::num(r.summary.step_time.median_ms) : Cell::none(),
                        r.summary.peak_allocated_bytes ? Cell::num(static_cast<double>(*r.summary.peak_allocated_bytes))
                                                       : Cell::none(),
                        Cell::str(file_name(p.record_path))});
      tc.outcome = ok ? TestCase::Outcome::kPass
                      : (r.status == RunStatus::kOom ? TestCase::Outcome::kSkip : TestCase::Outcome::kFail);
      tc.message = ok ? fmt::format("{:.1f} samples/s", r.summary.samples_per_s) : to_string(r.status) + ": " + r.reason;
    }
    rows.push_back(row);
    d.cases.push_back(tc);
  }
  if (!unit.empty()) t.columns[3].unit = unit;
  d.table(std::move(t));
  d.data = {{"schema", "gpubench.sweep"}, {"model", model}, {"points", rows}};
  add_decode_table(d, points);
  return d;
}

Document scaling_document(const std::string& model, const ScalingResult& result) {
  Document d;
  d.kind = "scaling";
  d.title = "gpubench scaling " + model;
  Table t;
  t.id = "points";
  t.add_column(Column::count("ranks", "ranks"));
  t.add_column(Column::text("status", "status"));
  t.add_column(Column{kThroughputTag, "throughput", "samples/s", Better::kHigher});
  t.add_column(Column{"per_rank_samples_per_s", "per rank", "samples/s", Better::kHigher});
  t.add_column(Column{"scaling_efficiency", "scaling efficiency", "fraction", Better::kHigher});
  t.add_column(Column{"epoch_seconds", "epoch time", "s", Better::kLower});
  t.add_column(Column::count("slowest_rank", "slowest rank"));
  t.add_column(Column{"comm_wait_fraction", "comm wait (rank 0)", "fraction", Better::kLower});
  t.add_column(Column{"power_avg_w", "power, all GPUs", "W", Better::kNeither});
  t.add_column(Column{"joules_per_sample", "energy per sample", "J/sample", Better::kLower});
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& p : result.points) {
    nlohmann::json row = {{"ranks", p.ranks}, {"record", p.record_path}, {"exit_code", p.exit_code}};
    auto& cells = t.add_row();
    cells[0] = Cell::num(static_cast<double>(p.ranks));
    TestCase tc{fmt::format("{} ranks", p.ranks), TestCase::Outcome::kPass, ""};
    if (!p.record) {
      row["status"] = "missing";
      cells[1] = Cell::str("no record (" + p.error + ")");
      tc.outcome = TestCase::Outcome::kFail;
      tc.message = cells[1].text;
    } else if (!p.ok()) {
      const RunRecord& r = *p.record;
      row["status"] = to_string(r.status);
      row["samples_per_s"] = r.summary.samples_per_s;
      cells[1] = Cell::str(to_string(r.status) + ": " + r.reason);
      tc.outcome = TestCase::Outcome::kFail;
      tc.message = cells[1].text;
    } else {
      const RunRecord& r = *p.record;
      const JobEnergy energy = job_energy(r);
      row["status"] = "ok";
      row["samples_per_s"] = *p.samples_per_s;
      row["scaling_efficiency"] = p.efficiency.value_or(0);
      row["comm_wait_fraction_rank0"] = p.comm_wait_fraction.value_or(0);
      row["power_avg_w"] = energy.power_avg_w;  // the whole job's: every GPU's power summed
      row["joules_per_sample"] = energy.joules_per_sample;
      row["power_devices"] = energy.devices;
      cells[1] = Cell::str("ok");
      cells[2] = Cell::num(p.samples_per_s);
      cells[3] = Cell::num(p.per_rank_samples_per_s);
      cells[4] = Cell::num(p.efficiency);
      cells[5] = Cell::num(r.summary.epoch_seconds_mean > 0 ? std::optional<double>(r.summary.epoch_seconds_mean) : std::nullopt);
      cells[6] = r.distributed ? Cell::num(static_cast<double>(r.distributed->slowest_rank)) : Cell::none();
      cells[7] = Cell::num(p.comm_wait_fraction);
      cells[8] = Cell::num(energy.power_avg_w);
      cells[9] = Cell::num(energy.joules_per_sample);
      t.columns[2].unit = t.columns[3].unit = throughput_unit(r);
      tc.message = fmt::format("efficiency {:.1f}%", p.efficiency.value_or(0) * 100);
    }
    rows.push_back(row);
    d.cases.push_back(tc);
  }
  if (result.base_ranks != 1 && result.base_ranks != 0) {
    t.notes.push_back(fmt::format("Efficiency is relative to the {}-rank run (no 1-rank run).", result.base_ranks));
  }
  d.table(std::move(t));
  d.data = {{"schema", "gpubench.scaling"}, {"model", model}, {"points", rows}};
  return d;
}


// ---------------------------------------------------------------------------------------------------------------
// trace


Document trace_document(const std::vector<std::pair<std::string, ProfileRecord>>& traces, size_t top) {
  Document d;
  d.kind = "trace";
  d.title = "Kernel profile";
  if (traces.size() == 1) {
    d.paragraph(traces[0].first);
    ProfileRecord p = traces[0].second;
    if (p.top_kernels.size() > top) p.top_kernels.resize(top);
    add_profile(d, p);
    return d;
  }
  const ProfileRecord& a = traces[0].second;
  const ProfileRecord& b = traces[1].second;
  d.paragraph("A: " + traces[0].first + " (" + std::to_string(a.steps) + " steps)");
  d.paragraph("B: " + traces[1].first + " (" + std::to_string(b.steps) + " steps)");
  const Column ms_a{"a_ms_per_step", "A", "ms", Better::kLower}, ms_b{"b_ms_per_step", "B", "ms", Better::kLower},
      diff{"diff_ms_per_step", "B - A", "ms", Better::kNeither};
  Table head;
  head.id = "trace_steps";
  head.title = "Per step";
  const Column what = Column::text("measure", "");
  auto line = [&](const std::string& label, double x, double y) {
    auto& row = head.add_row();
    head.put(row, what, Cell::str(label));
    head.put(row, ms_a, Cell::num(x));
    head.put(row, ms_b, Cell::num(y));
    head.put(row, diff, Cell::num(y - x));
  };
  line("wall", a.wall_ms_per_step, b.wall_ms_per_step);
  line("device busy", a.busy_ms_per_step, b.busy_ms_per_step);
  line("device idle", a.idle_ms_per_step, b.idle_ms_per_step);
  line("launch calls", a.launch_api_ms_per_step, b.launch_api_ms_per_step);
  d.table(std::move(head));

  Table cats;
  cats.id = "trace_categories";
  cats.title = "Kernel time by category";
  const Column cat = Column::text("category", "category");
  const Column n_a{"a_kernels_per_step", "A kernels", "", Better::kNeither},
      n_b{"b_kernels_per_step", "B kernels", "", Better::kNeither};
  for (const auto& category : kernel_categories()) {
    const ProfileCategory zero{category.first, 0, 0, 0};
    const auto find = [&zero](const ProfileRecord& p) {
      for (const auto& c : p.categories) {
        if (c.category == zero.category) return c;
      }
      return zero;
    };
    const ProfileCategory x = find(a), y = find(b);
    if (x.ms_per_step == 0 && y.ms_per_step == 0) continue;
    auto& row = cats.add_row();
    cats.put(row, cat, Cell::str(category.second));
    cats.put(row, ms_a, Cell::num(x.ms_per_step));
    cats.put(row, ms_b, Cell::num(y.ms_per_step));
    cats.put(row, diff, Cell::num(y.ms_per_step - x.ms_per_step));
    cats.put(row, n_a, Cell::num(x.kernels_per_step));
    cats.put(row, n_b, Cell::num(y.kernels_per_step));
  }
  d.table(std::move(cats));

  struct Pair {
    std::string category;
    double a = 0, b = 0, calls_a = 0, calls_b = 0;
  };
  std::map<std::string, Pair> kernels;
  for (const auto& k : a.top_kernels) {
    auto& p = kernels[k.name];
    p.category = k.category;
    p.a += k.ms_per_step;
    p.calls_a += k.calls_per_step;
  }
  for (const auto& k : b.top_kernels) {
    auto& p = kernels[k.name];
    p.category = k.category;
    p.b += k.ms_per_step;
    p.calls_b += k.calls_per_step;
  }
  std::vector<std::pair<std::string, Pair>> sorted(kernels.begin(), kernels.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& x, const auto& y) {
    return std::fabs(x.second.b - x.second.a) > std::fabs(y.second.b - y.second.a);
  });
  if (sorted.size() > top) sorted.resize(top);
  Table k;
  k.id = "trace_kernels";
  k.title = "Kernels that differ most";
  const Column name = Column::text("kernel", "kernel"), kc = Column::text("category", "category"),
               c_a{"a_calls_per_step", "A calls", "", Better::kNeither},
               c_b{"b_calls_per_step", "B calls", "", Better::kNeither};
  for (const auto& [kn, p] : sorted) {
    auto& row = k.add_row();
    k.put(row, name, Cell::str(kn));
    k.put(row, kc, Cell::str(category_display_name(p.category)));
    k.put(row, ms_a, Cell::num(p.a));
    k.put(row, ms_b, Cell::num(p.b));
    k.put(row, diff, Cell::num(p.b - p.a));
    k.put(row, c_a, Cell::num(p.calls_a));
    k.put(row, c_b, Cell::num(p.calls_b));
  }
  d.table(std::move(k));
  return d;
}


Document projection_document(const Projection& p) {
  Document d;
  d.kind = "scaling_projection";
  d.title = "Scaling projection";
  d.paragraph(fmt::format("{} {} on {}: {:.2f} ms per step on 1 GPU, batch {} per GPU, {:.1f} MB of gradients in {} "
                          "buckets; interconnect {}",
                          p.model, p.precision, p.device_name.empty() ? "?" : p.device_name, p.compute_ms,
                          p.batch_per_gpu, p.gradient_bytes / 1e6, p.buckets, p.net.name));
  Table t;
  t.id = "projection";
  t.add_column(Column::count("gpus", "GPUs"));
  t.add_column(Column::count("nodes", "nodes"));
  t.add_column(Column{"comm_ms", "all-reduce", "ms", Better::kLower});
  t.add_column(Column{"exposed_ms", "exposed", "ms", Better::kLower});
  t.add_column(Column{"step_ms", "step", "ms", Better::kLower});
  t.add_column(Column{"efficiency", "efficiency", "fraction", Better::kHigher});
  t.add_column(Column{"measured_efficiency", "measured", "fraction", Better::kHigher});
  t.add_column(Column{"samples_per_s", "throughput", "samples/s", Better::kHigher});
  t.add_column(Column{"epoch_s", "epoch", "s", Better::kLower});
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& x : p.points) {
    t.rows.push_back({Cell::num(static_cast<double>(x.gpus)), Cell::num(static_cast<double>(x.nodes)), Cell::num(x.comm_ms),
                      Cell::num(x.exposed_ms), Cell::num(x.step_ms), Cell::num(x.efficiency),
                      Cell::num(x.measured_efficiency), Cell::num(x.samples_per_s), Cell::num(x.epoch_s)});
    rows.push_back({{"gpus", x.gpus}, {"nodes", x.nodes}, {"comm_ms", x.comm_ms}, {"exposed_ms", x.exposed_ms},
                    {"step_ms", x.step_ms}, {"efficiency", x.efficiency},
                    {"measured_efficiency", x.measured_efficiency ? nlohmann::json(*x.measured_efficiency) : nlohmann::json()},
                    {"samples_per_s", x.samples_per_s}, {"epoch_s", x.epoch_s}});
  }
  t.notes.push_back("epoch: the scenario's dataset_size (" + std::to_string(p.dataset_size) +
                    " samples) split over all GPUs; efficiency: the 1-GPU step / the projected step");
  d.table(std::move(t));
  d.heading("Assumptions", 3);
  d.list(p.assumptions);
  d.data = {{"schema", "gpubench.scaling_projection"},
            {"model", p.model},
            {"precision", p.precision},
            {"device_name", p.device_name},
            {"interconnect",
             {{"name", p.net.name},
              {"description", p.net.description},
              {"intra", {{"latency_us", p.net.intra.latency_us}, {"bandwidth_gb_s", p.net.intra.bandwidth_gb_s}}},
              {"inter", {{"latency_us", p.net.inter.latency_us}, {"bandwidth_gb_s", p.net.inter.bandwidth_gb_s}}},
              {"gpus_per_node", p.net.gpus_per_node}}},
            {"compute_ms", p.compute_ms},
            {"backward_ms", p.backward_ms},
            {"gradient_bytes", p.gradient_bytes},
            {"buckets", p.buckets},
            {"residual_ms", p.residual_ms},
            {"calibrated_at_gpus", p.calibrated_at},
            {"points", rows},
            {"assumptions", p.assumptions}};
  return d;
}

}  // namespace gpubench
