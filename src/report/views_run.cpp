// The run view: what `gpubench run` prints when a run ends.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "gpubench/core/analysis/bottleneck.hpp"
#include "gpubench/core/analysis/profile.hpp"
#include "gpubench/core/record/metric_catalog.hpp"
#include "gpubench/core/record/stats.hpp"
#include "gpubench/report/views.hpp"
#include "report/view_helpers.h"

namespace gpubench {

using namespace views;  // NOLINT(google-build-using-namespace): the views' shared helpers

// ---------------------------------------------------------------------------------------------------------------
// run

Document run_summary_document(const RunRecord& r) {
  const Scenario& s = r.scenario;
  const std::string unit = sample_unit(r);
  Document d;
  d.kind = "run";
  add_run_gauges(d, r);
  d.title = (r.model.name.empty() ? s.model : r.model.name) + " on " +
            (r.environment.device.empty() ? s.device : r.environment.device);
  // Inference and generation have no optimizer: their mode stands where a training run names its optimizer.
  const bool trains = s.mode != "inference" && s.mode != "generate";
  d.paragraph(fmt::format("{} ({}), {} [{}], {}, batch {}, {}", d.title, r.environment.device_name, precision_label(r),
                          r.precision.requested.empty() ? s.precision : r.precision.requested, s.memory_format,
                          s.batch_size ? std::to_string(*s.batch_size) : "?", trains ? s.optimizer.name : s.mode));
  if (!trains && s.mode != "inference") {
    // generate: its own paragraphs follow (time to first token, decode rate)
  } else if (s.mode == "inference") {
    d.paragraph(fmt::format("inference, {}{}: {}", r.execution.mode == "cuda_graph" ? "CUDA graph" : "eager",
                            r.execution.graph_fallback.empty() ? "" : " (graph not used: " + r.execution.graph_fallback + ")",
                            r.model.step));
  } else if (!r.execution.optimizer_implementation.empty() && r.execution.optimizer_implementation != "none") {
    d.paragraph(fmt::format("execution: {}, {} optimizer{}", r.execution.mode == "cuda_graph" ? "CUDA graph" : "eager",
                            r.execution.optimizer_implementation,
                            r.execution.graph_fallback.empty() ? "" : " (graph not used: " + r.execution.graph_fallback + ")"));
  }
  if (!r.epochs.empty()) {
    Table t;
    t.id = "epochs";
    t.add_column(Column::count("epoch", "epoch"));
    t.add_column(Column::count("steps", "steps"));
    t.add_column(Column::count("samples", "samples"));
    const bool device_mem = r.epochs.front().peak_allocated_bytes.has_value();
    const std::vector<std::string> shown{"epoch_seconds", kThroughputTag, "step_time_median_ms", "step_time_p5_ms",
                                         "step_time_p95_ms", device_mem ? "peak_allocated_bytes" : "peak_host_rss_bytes",
                                         "power_avg_w", "loss_first", "loss_last"};
    for (const auto& e : r.epochs) {
      auto& row = t.add_row();
      row[0] = Cell::num(static_cast<double>(e.index + 1));
      row[1] = Cell::num(static_cast<double>(e.steps));
      row[2] = Cell::num(static_cast<double>(e.samples));
      for (const auto& m : pick(epoch_metrics(r, e), shown)) put_metric(t, row, m);
    }
    const size_t note = t.add_column(Column::text("note", ""));
    for (size_t i = 0; i < r.epochs.size(); ++i) t.rows[i][note] = Cell::str(r.epochs[i].complete ? "" : "(partial)");
    for (auto& row : t.rows) {
      if (row[note].text.empty()) row[note] = Cell::str(" ");  // an empty note is blank, not "-"
    }
    d.table(std::move(t));
    const RunSummary& m = r.summary;
    std::string total = fmt::format("total: {} {} in {:.2f} s = {} {}/s, {:.3g} TFLOP/s of model FLOPs", m.samples,
                                    unit, m.seconds, format_rate(m.samples_per_s), unit, m.achieved_tflops);
    if (m.mfu && m.peak_tflops) total += fmt::format(" ({:.1f}% of the {:g} TFLOP/s peak)", *m.mfu * 100.0, *m.peak_tflops);
    if (m.peak_reserved_bytes) total += fmt::format(", peak reserved {}", format_bytes(*m.peak_reserved_bytes));
    total += fmt::format(" (warm-up: {} steps, {:.1f} s)", m.warmup_steps, m.warmup_seconds);
    d.paragraph(total);
    const JobEnergy energy = job_energy(r);
    if (energy.energy_j) {
      d.paragraph(fmt::format("energy: {:.1f} J, {} J/{}, {} W{}", *energy.energy_j,
                              energy.joules_per_sample ? fmt::format("{:.4g}", *energy.joules_per_sample) : "-",
                              unit.substr(0, unit.size() - 1),
                              energy.power_avg_w ? fmt::format("{:.0f}", *energy.power_avg_w) : "-",
                              energy.devices > 1 ? fmt::format(" over {} GPUs", energy.devices) : ""));
    }
    std::vector<std::string> extras;
    for (const auto& x : run_metrics(r)) {
      if (is_standard_metric(x.tag)) continue;
      const Column c = metric_column(x);
      extras.push_back(header_with_unit(c) + ": " + format_value(x.value, x.unit));
    }
    if (!extras.empty()) d.paragraph("also measured: " + [&] {
      std::string all;
      for (const auto& x : extras) all += (all.empty() ? "" : ", ") + x;
      return all;
    }());
    if (!m.stopped_by.empty()) d.paragraph("stopped by: " + m.stopped_by);
  }
  if (r.profile) add_profile(d, *r.profile);
  if (const BottleneckVerdict v = diagnose_bottleneck(r); !v.bounded_by.empty()) {
    d.paragraph("bounded by: " + v.bounded_by + " - " + v.evidence);
  } else if (!v.evidence.empty() && r.status == RunStatus::kOk) {
    d.paragraph("bottleneck: " + v.evidence);
  }
  d.paragraph("status: " + to_string(r.status) + (r.reason.empty() ? "" : " - " + r.reason));
  d.cases.push_back(TestCase{d.title, r.status == RunStatus::kOk ? TestCase::Outcome::kPass : TestCase::Outcome::kFail,
                             to_string(r.status) + (r.reason.empty() ? "" : ": " + r.reason)});
  return d;
}

// ---------------------------------------------------------------------------------------------------------------
// compare

}  // namespace gpubench
