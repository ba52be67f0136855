// gpubench compare: candidate runs against baseline runs (files, folders, a results store's last N, or a published
// figure), paired by scenario, with bootstrap intervals and verdicts; exit 3 on a regression.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "cli/commands/commands.h"
#include "gpubench/core/analysis/compare.hpp"
#include "gpubench/core/analysis/published.hpp"
#include "gpubench/core/record/record_io.hpp"
#include "gpubench/core/store/store.hpp"
#include "gpubench/report/views.hpp"

namespace gpubench::cli {

namespace {

/// "2%" or "0.02" as a fraction in [0, 1).
double parse_threshold(const std::string& text) {
  std::string t = text;
  const bool percent = !t.empty() && t.back() == '%';
  if (percent) t.pop_back();
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  const double fraction = percent ? v / 100.0 : v;
  if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(fraction) || fraction < 0 || fraction >= 1) {
    throw UsageError("--threshold: expected a fraction from 0 to below 1 such as 0.02, or a percentage such as 2%, got '" +
                     text + "'");
  }
  return fraction;
}

/// db:FILE[:last-N]: each candidate against the last N like-for-like runs of its scenario in the store.
std::vector<LoadedRecord> baseline_from_store(const std::string& base, const std::vector<LoadedRecord>& candidates) {
  std::string file = base.substr(3);
  int last_n = 5;
  const auto colon = file.rfind(":last-");
  if (colon != std::string::npos) {
    const std::string n = file.substr(colon + 6);
    char* end = nullptr;
    const long v = std::strtol(n.c_str(), &end, 10);
    if (n.empty() || *end != '\0' || v < 1 || v > 10000) {
      throw UsageError("BASE " + base + ": expected db:FILE or db:FILE:last-N with N from 1 to 10000");
    }
    last_n = static_cast<int>(v);
    file = file.substr(0, colon);
  }
  std::vector<LoadedRecord> out;
  const ResultsStore store(file);
  for (const auto& c : candidates) {
    for (auto& b : store.baseline_for(c.record, last_n)) {
      const bool seen = std::any_of(out.begin(), out.end(), [&b](const LoadedRecord& x) { return x.path == b.path; });
      if (!seen) out.push_back(std::move(b));
    }
  }
  spdlog::info("baseline: {} run(s) from {} (the last {} of each scenario on the same GPU model)", out.size(), file,
               last_n);
  if (out.empty()) {
    throw UsageError("the store " + file + " holds no earlier finished run of these scenarios on this GPU model");
  }
  return out;
}

class CompareCommand final : public Command {
 public:
  void declare(CLI::App& cmd) override {
    cmd.add_option("BASE", base_,
                   "Baseline: a record file, a directory of records, published/<id> (see `gpubench list`), or "
                   "db:STORE[:last-N] (the last N runs, default 5, of each candidate's scenario on the same GPU model "
                   "in a results store)")
        ->required()
        ->type_name("RECORDS|published/ID|db:STORE[:last-N]");
    cmd.add_option("NEW", candidate_, "Candidate: a record file or a directory of records")
        ->required()
        ->type_name("RECORDS");
    cmd.add_option("--threshold", threshold_,
                   "Significant slowdowns larger than this are regressions (2% or 0.02; default 2%)")
        ->type_name("PERCENT");
    cmd.add_option("--markdown", markdown_, "Same as --save md:FILE")->type_name("FILE");
    cmd.add_option("--junit", junit_, "Same as --save junit:FILE")->type_name("FILE");
    cmd.add_option("--json", json_, "Same as --save json:FILE")->type_name("FILE");
    cmd.add_option("--seed", seed_, "Bootstrap seed (default 1)")->type_name("INT");
    cmd.add_option("--metric", metric_,
                   "Metric to compare, by tag (default samples_per_s: throughput); e.g. joules_per_sample, "
                   "peak_reserved_bytes, step_time_p95_ms, epoch_seconds. `gpubench metrics` lists them; the "
                   "metric says whether higher or lower is better")
        ->type_name("TAG");
    cmd.footer("Pairs runs by resolved scenario (repeats are pooled). The 95% interval of the ratio is a bootstrap over "
               "runs and their steps\n(throughput) or their epochs (other metrics). A regression is a change for the "
               "worse beyond --threshold.\nAgainst published/<id> the default format is md (it reads well on a "
               "console too).");
  }

  int run(Context& ctx) override {
    if (!markdown_.empty()) add_save(ctx.output, "md", markdown_, "--markdown");
    if (!junit_.empty()) add_save(ctx.output, "junit", junit_, "--junit");
    if (!json_.empty()) add_save(ctx.output, "json", json_, "--json");
    if (base_.rfind("published/", 0) == 0) return published(ctx);
    CompareOptions options;
    options.seed = seed_;
    options.threshold = parse_threshold(threshold_);
    const std::vector<LoadedRecord> candidates = load_records_or_fail({candidate_});
    const std::vector<LoadedRecord> base =
        base_.rfind("db:", 0) == 0 ? baseline_from_store(base_, candidates) : load_records_or_fail({base_});
    const std::vector<std::string> tags = metric_tags(base);
    if (std::find(tags.begin(), tags.end(), metric_) == tags.end()) {
      std::string known;
      for (const auto& t : tags) known += (known.empty() ? "" : ", ") + t;
      throw UsageError("--metric " + metric_ + ": the baseline records have no such metric; they have: " + known);
    }
    options.metric = metric_;
    const CompareResult result = compare_runs(base, candidates, options);
    ctx.print(compare_document(result, options.threshold));
    if (!result.environment.like_for_like) spdlog::warn("the two sides ran on different hardware or builds");
    return result.any_regression() ? kExitRegression : kExitOk;
  }

 private:
  int published(Context& ctx) const {
    const PublishedReference* ref = find_published(base_);
    if (ref == nullptr) {
      std::string known;
      for (const auto& r : published_references()) known += (known.empty() ? "" : ", ") + r.id;
      throw UsageError("unknown published reference '" + base_ + "'; known: " + known);
    }
    const std::vector<LoadedRecord> runs = load_records_or_fail({candidate_});
    std::vector<PublishedRun> rows;
    for (const auto& r : runs) rows.push_back(PublishedRun{r.path, &r.record, compare_with_published(*ref, r.record)});
    Context md = ctx;
    if (md.output.format.empty()) md.output.format = "md";  // Markdown reads well on a console too
    md.print(published_document(*ref, rows));
    return kExitOk;
  }

  std::string base_, candidate_, threshold_ = "2%", markdown_, junit_, json_, metric_ = kThroughputTag;
  uint64_t seed_ = 1;
};

}  // namespace

CommandSpec compare_command() {
  return {"compare", "Compare candidate runs with baseline runs; exit 3 on a regression",
          {kExitOk, kExitUsage, kExitRegression, kExitOutputNotWritten}, "console",
          [] { return std::make_unique<CompareCommand>(); }};
}

}  // namespace gpubench::cli
