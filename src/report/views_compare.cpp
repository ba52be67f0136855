// The comparison views: `compare` (runs against runs) and `compare published/...`.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "gpubench/core/analysis/bottleneck.hpp"
#include "gpubench/core/analysis/identity.hpp"
#include "gpubench/core/analysis/profile.hpp"
#include "gpubench/core/record/metric_catalog.hpp"
#include "gpubench/core/record/stats.hpp"
#include "gpubench/report/views.hpp"
#include "report/view_helpers.h"

namespace gpubench {

using namespace views;  // NOLINT(google-build-using-namespace): the views' shared helpers

namespace {

/// Whether a comparison has numbers (a pair was made and both sides measured).
bool has_numbers(const Comparison& c) {
  return c.verdict != Verdict::kNotComparable && c.verdict != Verdict::kNoBaseline && c.verdict != Verdict::kRunFailed;
}

std::string change(const Comparison& c) {
  if (!has_numbers(c)) return "-";
  if (c.interval_basis == "none") return fmt::format("{:+.2f}% (one value per side: no interval)", (c.ratio - 1) * 100);
  std::string s = fmt::format("{:+.2f}% [{:+.2f}%, {:+.2f}%]", (c.ratio - 1) * 100, (c.ci_low - 1) * 100,
                              (c.ci_high - 1) * 100);
  if (c.interval_basis == "steps" || c.interval_basis == "epochs") s += " (within-run only)";
  return s;
}

std::string why(const Comparison& c) {
  if (c.verdict == Verdict::kNotComparable) {
    std::string keys;
    for (const auto& k : c.differences.empty() ? c.differing_keys : c.differences) keys += (keys.empty() ? "" : "; ") + k;
    return (c.differences.empty() ? "differs in: " : "differs: ") + keys;
  }
  if (c.verdict == Verdict::kNoBaseline) return "no baseline run of this model";
  if (c.verdict == Verdict::kRunFailed) return c.note + " (" + (c.new_paths.empty() ? "?" : c.new_paths.front()) + ")";
  std::string issues;
  for (const auto& i : c.not_like_for_like) issues += (issues.empty() ? "" : "; ") + i;
  std::string out = issues.empty() ? "" : "NOT like-for-like: " + issues;
  if (!c.note.empty()) out += (out.empty() ? "" : "; ") + c.note;
  if (!c.bottleneck_change.empty()) out += (out.empty() ? "" : "; ") + c.bottleneck_change;
  return out;
}

/// "kernels (kernels 78 %, compute 19 %, power 3 %)", or "-" without a verdict.
std::string side_bottleneck_text(const std::string& verdict, const std::vector<BottleneckFactor>& factors) {
  return verdict.empty() ? "-" : verdict + " (" + format_top_factors(factors) + ")";
}

nlohmann::json side_bottleneck_json(const std::string& verdict, const std::vector<BottleneckFactor>& factors) {
  nlohmann::json shares = nlohmann::json::object();
  for (const auto& f : factors) shares[f.factor] = f.share;
  return {{"bounded_by", verdict}, {"shares", shares}};
}

nlohmann::json compare_json(const CompareResult& r, double threshold) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& c : r.comparisons) {
    rows.push_back({{"label", c.label},
                    {"scenario_id", identity_id(c.identity)},
                    {"metric", c.metric},
                    {"metric_name", c.metric_name},
                    {"unit", c.metric_unit},
                    {"better", to_string(c.better)},
                    {"verdict", verdict_text(c)},
                    {"ratio", c.ratio},
                    {"ci_low", c.ci_low},
                    {"ci_high", c.ci_high},
                    {"interval_basis", c.interval_basis},
                    {"base_runs", c.base_runs},
                    {"new_runs", c.new_runs},
                    {"note", c.note},
                    {"differences", c.differences},
                    {"base_value", c.base_value},
                    {"new_value", c.new_value},
                    {"base_samples_per_s", c.base_samples_per_s},
                    {"new_samples_per_s", c.new_samples_per_s},
                    {"differing_keys", c.differing_keys},
                    {"like_for_like", c.like_for_like()},
                    {"not_like_for_like", c.not_like_for_like},
                    {"base_paths", c.base_paths},
                    {"new_paths", c.new_paths},
                    {"base_bottleneck", side_bottleneck_json(c.base_bounded_by, c.base_factors)},
                    {"new_bottleneck", side_bottleneck_json(c.new_bounded_by, c.new_factors)},
                    {"bottleneck_change", c.bottleneck_change}});
  }
  return {{"schema", "gpubench.compare"},
          {"schema_version", 3},
          {"metric", r.metric},
          {"threshold", threshold},
          {"regression", r.any_regression()},
          {"run_failed", r.any(Verdict::kRunFailed)},
          {"inconclusive", r.any(Verdict::kInconclusive)},
          {"like_for_like", r.environment.like_for_like},
          {"environment_differences", r.environment.differences},
          {"comparisons", rows}};
}

}  // namespace

Document compare_document(const CompareResult& r, double threshold) {
  Document d;
  d.kind = "compare";
  d.title = "gpubench compare";
  d.data = compare_json(r, threshold);
  // The metric's description from the first comparison that found it.
  std::string name = r.metric, unit;
  Better better = r.metric == kThroughputTag ? Better::kHigher : Better::kNeither;
  for (const auto& c : r.comparisons) {
    if (!c.metric_unit.empty()) {
      name = c.metric_name;
      unit = c.metric_unit;
      better = c.better;
      break;
    }
  }
  if (r.metric != kThroughputTag) {
    d.paragraph(fmt::format("metric: {} ({}{}), {}", name, r.metric, unit.empty() ? "" : ", " + unit,
                            better == Better::kNeither ? "no better direction"
                                                       : to_string(better) + " is better"));
  }
  Table t;
  t.id = "comparisons";
  t.add_column(Column::text("scenario", "scenario"));
  t.add_column(Column{"base", "base", unit, better});
  t.add_column(Column{"new", "new", unit, better});
  t.add_column(Column::text("change", "change [95% CI]"));
  t.add_column(Column::text("verdict", "verdict"));
  t.add_column(Column::text("detail", "detail"));
  Table shares;
  shares.id = "bottlenecks";
  shares.title = "What limits each side (shares of the timed step; docs/bottleneck.md):";
  for (const char* c : {"scenario", "base", "new"}) shares.add_column(Column::text(c, c));
  for (const auto& c : r.comparisons) {
    if (!c.base_bounded_by.empty() || !c.new_bounded_by.empty()) {
      shares.rows.push_back({Cell::str(c.label), Cell::str(side_bottleneck_text(c.base_bounded_by, c.base_factors)),
                             Cell::str(side_bottleneck_text(c.new_bounded_by, c.new_factors))});
    }
  }
  for (const auto& c : r.comparisons) {
    const bool numbers = has_numbers(c);
    t.rows.push_back({Cell::str(c.label), numbers ? Cell::num(c.base_value) : Cell::none(),
                      numbers ? Cell::num(c.new_value) : Cell::none(), Cell::str(change(c)),
                      Cell::str(c.verdict == Verdict::kRegression ? "REGRESSION"
                                : c.verdict == Verdict::kRunFailed ? "RUN FAILED"
                                                                   : verdict_text(c)),
                      Cell::str(why(c))});
    TestCase tc{c.label, TestCase::Outcome::kPass, verdict_text(c) + ": " + change(c)};
    if (c.verdict == Verdict::kRegression) {
      tc.outcome = TestCase::Outcome::kFail;
      tc.message = fmt::format("regression: {} {} beyond the {:.1f}% threshold", name, change(c), threshold * 100);
    } else if (c.verdict == Verdict::kRunFailed) {
      tc.outcome = TestCase::Outcome::kFail;
      tc.message = "run failed: " + why(c);
    } else if (!numbers || c.verdict == Verdict::kInconclusive) {
      tc.outcome = TestCase::Outcome::kSkip;
      tc.message = verdict_text(c) + ": " + why(c);
    }
    d.cases.push_back(tc);
  }
  t.notes.push_back(fmt::format("A regression is a change for the worse whose 95% interval excludes no change and "
                                "which exceeds {:.1f}%. With two or more runs on a side the interval is over runs; with "
                                "one run per side it is within-run only and changes inside the noise floor get no "
                                "verdict.", threshold * 100));
  d.table(std::move(t));
  if (!shares.rows.empty()) d.table(std::move(shares));
  if (!r.environment.differences.empty()) {
    d.paragraph(r.environment.like_for_like ? "Environment differences:"
                                            : "Environment differences (NOT like-for-like):");
    d.list(r.environment.differences);
  }
  return d;
}

// ---------------------------------------------------------------------------------------------------------------
// published

Document published_document(const PublishedReference& ref, const std::vector<PublishedRun>& runs) {
  Document d;
  d.kind = "published";
  d.title = "gpubench vs published " + ref.id;
  d.data = nlohmann::json::array();
  auto value = [](const std::optional<double>& v, const std::string& unit) {
    return v ? Cell::str(format_value(*v, unit)) : Cell::none();
  };
  for (const auto& pr : runs) {
    const RunRecord& run = *pr.run;
    const PublishedComparison& c = pr.comparison;
    const std::string unit = sample_unit(run);
    d.heading(pr.path + " vs published `" + ref.id + "`", 2);
    if (!c.same_work()) {
      // The headline a reviewer would quote: say first that this is not a reproduction.
      d.paragraph("**Not the same work** as the published figure:");
      d.list(c.work_differences);
      d.paragraph(c.percent_of_published
                      ? fmt::format("Different recipe: the measured throughput ({}) is {:.1f} % of the published "
                                    "figure. This is not a reproduction; do not quote it as one.",
                                    c.percent_basis, *c.percent_of_published)
                  : !c.no_percent_reason.empty() ? "Not comparable: " + c.no_percent_reason + "."
                                                 : std::string("No measured throughput to compare (the run did not finish ok)."));
    } else {
      d.paragraph(c.percent_of_published
                      ? fmt::format("Measured throughput ({}) is **{:.1f} %** of the published figure (the same work).",
                                    c.percent_basis, *c.percent_of_published)
                      : std::string("No measured throughput to compare (the run did not finish ok)."));
    }
    d.paragraph("Published: " + ref.source);
    d.quote(ref.quote);
    Table t;
    t.id = "published";
    t.add_column(Column::text("figure", ""));
    t.add_column(Column::text("published", "published"));
    t.add_column(Column::text("measured", "measured here"));
    t.rows.push_back({Cell::str("device"), Cell::str(ref.device), Cell::str(device_label(run))});
    t.rows.push_back({Cell::str("mode"), Cell::str(ref.mode), Cell::str(run.scenario.mode)});
    // Another model's samples are not this run's images: then the row names both units.
    const std::string rate_label = run.scenario.model == ref.model
                                       ? unit + "/s"
                                       : "throughput (published: " + ref.model + " samples/s; here: " + unit + "/s)";
    t.rows.push_back({Cell::str(rate_label), value(c.published_samples_per_s, "samples/s"),
                      value(c.measured_samples_per_s, "samples/s")});
    if (ref.epoch_seconds) {
      t.rows.push_back({Cell::str(fmt::format("epoch of {} samples (s)",
                                              ref.dataset_size ? std::to_string(*ref.dataset_size) : "?")),
                        value(ref.epoch_seconds, "s"), value(c.measured_epoch_seconds, "s")});
    }
    if (ref.steps_per_s) {
      t.rows.push_back({Cell::str("it/s"), value(ref.steps_per_s, "it/s"), value(run.summary.steps_per_s, "it/s")});
    }
    if (c.published_joules_per_sample || c.measured_joules_per_sample) {
      t.rows.push_back({Cell::str("energy per sample (J)"), value(c.published_joules_per_sample, "J/sample"),
                        value(c.measured_joules_per_sample, "J/sample")});
    }
    if (c.published_price_performance || c.recomputed_price_performance || c.measured_price_performance) {
      auto pp = [](const std::optional<double>& v) { return v ? fmt::format("{:.2f}", *v) : std::string("-"); };
      t.rows.push_back({Cell::str("price-performance (" + (ref.price_performance_unit.empty() ? std::string("epochs/min per 10,000 CNY")
                                                                                            : ref.price_performance_unit) + ")"),
                        Cell::str(pp(c.published_price_performance) + " as published; " +
                                  pp(c.recomputed_price_performance) + " from its own time and price"),
                        Cell::str(c.measured_price_performance ? pp(c.measured_price_performance)
                                                               : "no CNY price for this device in the table")});
    }
    if (ref.scaling_2gpu) {
      t.rows.push_back({Cell::str("2-device speed-up"), Cell::str(fmt::format("{:.2f}x", *ref.scaling_2gpu)),
                        Cell::str("run `gpubench scaling`")});
    }
    d.table(std::move(t));
    if (!ref.recipe_command().empty()) {
      std::vector<std::string> steps;
      if (!ref.prepare.empty()) steps.push_back("`" + ref.prepare + "` (the data set it reads)");
      steps.push_back("`" + ref.recipe_command() + "` (from the repository's root)");
      steps.push_back("`gpubench compare " + std::string("published/") + ref.id + " RECORD.json`");
      d.paragraph(ref.config_note.empty() ? std::string("To run the publication's recipe:")
                                          : "The closest recipe gpubench runs (" + ref.config_note + "):");
      d.list(steps);
    }
    if (!c.same.empty()) {
      d.paragraph("Where the recipes agree:");
      d.list(c.same);
    }
    d.paragraph("How the recipes differ:");
    d.list(c.differences);
    if (!c.remarks.empty()) {
      d.paragraph("About the published figure:");
      d.list(c.remarks);
    }
    d.data.push_back({{"reference", ref.id}, {"record", pr.path}, {"published_samples_per_s", c.published_samples_per_s},
                      {"measured_samples_per_s", c.measured_samples_per_s}, {"percent_of_published", c.percent_of_published},
                      {"no_percent_reason", c.no_percent_reason},
                      {"same_work", c.same_work()}, {"work_differences", c.work_differences},
                      {"recipe_command", ref.recipe_command()}, {"prepare_command", ref.prepare},
                      {"published_mode", ref.mode}, {"measured_mode", run.scenario.mode}, {"percent_basis", c.percent_basis},
                      {"published_steps_per_s", c.published_steps_per_s}, {"measured_steps_per_s", c.measured_steps_per_s},
                      {"measured_epoch_seconds", c.measured_epoch_seconds}, {"same", c.same}, {"differences", c.differences},
                      {"published_price_performance", c.published_price_performance},
                      {"recomputed_price_performance", c.recomputed_price_performance},
                      {"measured_price_performance", c.measured_price_performance},
                      {"published_joules_per_sample", c.published_joules_per_sample},
                      {"measured_joules_per_sample", c.measured_joules_per_sample}, {"remarks", c.remarks}});
  }
  return d;
}

// ---------------------------------------------------------------------------------------------------------------
// report

}  // namespace gpubench
