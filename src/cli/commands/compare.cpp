// gpubench compare: candidate runs against baseline runs (files, folders, a results store's last N, or a published
// figure), paired by scenario, with bootstrap intervals and verdicts; exit 3 on a regression.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "cli/commands/commands.h"
#include "gpubench/core/analysis/compare.hpp"
#include "gpubench/core/analysis/identity.hpp"
#include "gpubench/core/analysis/published.hpp"
#include "gpubench/core/record/record_io.hpp"
#include "gpubench/core/store/store.hpp"
#include "gpubench/report/views.hpp"

namespace gpubench::cli {

namespace {

/// "2%" or "0.02" as a fraction in [0, 1); `flag` names it in the message.
double parse_fraction(const std::string& text, const std::string& flag) {
  std::string t = text;
  const bool percent = !t.empty() && t.back() == '%';
  if (percent) t.pop_back();
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  const double fraction = percent ? v / 100.0 : v;
  if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(fraction) || fraction < 0 || fraction >= 1) {
    throw UsageError(flag + ": expected a fraction from 0 to below 1 such as 0.02, or a percentage such as 2%, got '" +
                     text + "'");
  }
  return fraction;
}

/// `db:FILE[:last-N]` read once, for the baseline and for the output rule: the store's file and N (default 5).
struct StoreBase {
  std::string file;
  int last_n = 5;
};
StoreBase parse_store_base(const std::string& base) {
  StoreBase b{base.substr(3)};
  const auto colon = b.file.rfind(":last-");
  if (colon != std::string::npos) {
    const std::string n = b.file.substr(colon + 6);
    char* end = nullptr;
    const long v = std::strtol(n.c_str(), &end, 10);
    if (n.empty() || *end != '\0' || v < 1 || v > 10000) {
      throw UsageError("BASE " + base + ": expected db:FILE or db:FILE:last-N with N from 1 to 10000");
    }
    b.last_n = static_cast<int>(v);
    b.file.resize(colon);
  }
  return b;
}

/// db:FILE[:last-N]: each candidate against the last N like-for-like runs of its scenario in the store.
std::vector<LoadedRecord> baseline_from_store(const std::string& base, const std::vector<LoadedRecord>& candidates,
                                              const std::vector<std::string>& ignore) {
  const auto [file, last_n] = parse_store_base(base);
  std::vector<LoadedRecord> out;
  std::unique_ptr<ResultsStore> opened;
  try {
    opened = std::make_unique<ResultsStore>(file, ResultsStore::Access::kRead);  // never created by a read
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  const ResultsStore& store = *opened;
  for (const auto& c : candidates) {
    // The other candidates of its scenario are its night: never part of its baseline, nor anything after them.
    std::vector<const RunRecord*> night;
    const nlohmann::json identity = without_keys(scenario_identity(c.record), ignore);
    for (const auto& other : candidates) {
      if (&other != &c && without_keys(scenario_identity(other.record), ignore) == identity) night.push_back(&other.record);
    }
    for (auto& b : store.baseline_for(c.record, last_n, night, ignore)) {
      const bool seen = std::any_of(out.begin(), out.end(), [&b](const LoadedRecord& x) { return x.path == b.path; });
      if (!seen) out.push_back(std::move(b));
    }
  }
  spdlog::info("baseline: {} run(s) from {} (the last {} of each scenario on the same GPU model)", out.size(), store.name(),
               last_n);
  if (out.empty()) {
    spdlog::error("the store {} holds no earlier finished run of these scenarios (the same identity, this GPU model "
                  "included)", store.name());
  }
  return out;
}

class CompareCommand final : public Command {
 public:
  void declare(CLI::App& cmd) override {
    cmd.add_option("BASE", base_,
                   "Baseline: a record file, a directory of records, published/<id> (see `gpubench list`), or "
                   "db:STORE[:last-N] (the last N runs, default 5, of each candidate's scenario on the same GPU model "
                   "in a results store: a SQLite file or a postgresql:// URL)")
        ->required()
        ->type_name("RECORDS|published/ID|db:STORE[:last-N]");
    cmd.add_option("NEW", candidate_, "Candidate: a record file or a directory of records")
        ->required()
        ->type_name("RECORDS");
    cmd.add_option("--threshold", threshold_,
                   "Significant slowdowns larger than this are regressions (2% or 0.02; default 2%)")
        ->type_name("PERCENT");
    markdown_opt_ = cmd.add_option("--markdown", markdown_, "Same as --save md:FILE")->type_name("FILE");
    junit_opt_ = cmd.add_option("--junit", junit_, "Same as --save junit:FILE")->type_name("FILE");
    json_opt_ = cmd.add_option("--json", json_, "Same as --save json:FILE")->type_name("FILE");
    cmd.add_option("--seed", seed_, "Bootstrap seed (default 1)")->check(unsigned_64())->type_name("INT")->transform(decimal_whole());
    cmd.add_option("--metric", metric_,
                   "Metric to compare, by tag (default samples_per_s: throughput); e.g. joules_per_sample, "
                   "peak_reserved_bytes, step_time_p95_ms, epoch_seconds. `gpubench metrics` lists them; the "
                   "metric says whether higher or lower is better")
        ->type_name("TAG");
    cmd.add_option("--noise-floor", noise_floor_,
                   "With one run per side, no verdict for a change smaller than this (default 2%: the largest A/A "
                   "difference between GPU-bound single runs on the H200 was 1.5%)")
        ->type_name("PERCENT");
    cmd.add_option("--ignore", ignore_,
                   "Leave an identity key out of the pairing (repeatable), e.g. device_model to compare two chips on "
                   "purpose (still marked NOT like-for-like)")
        ->type_name("KEY");
    cmd.add_flag("--allow-missing", allow_missing_,
                 "Exit 0 instead of 5 (not the same scenario, or not a publication's recipe) or 6 (no baseline), for jobs "
                 "whose scenarios come and go; a candidate run that failed is exit 1 all the same");
    std::string keys;
    for (const auto& k : identity_keys()) keys += (keys.empty() ? "" : ", ") + k;
    cmd.footer("Pairs runs by scenario identity: the model's own keys (`gpubench run MODEL --help`) and every one of "
               "these must be equal:\n  " + keys + "\n(kernel_options only where not all defaults; --ignore KEY leaves "
               "one out). Repeats are pooled. A candidate run that did not finish ok is a failed test (exit 1).\n"
               "With two or more runs on a side "
               "the interval is a Welch t\ninterval over runs; with one run per side it is within-run only and a "
               "change inside the noise floor gets no verdict. Host-bound runs (GPU busy < 95%, launch- or "
               "input-bound) that differ without\nrepeats on both sides are inconclusive. A regression is a change for "
               "the worse beyond --threshold. Against published/<id> the default format is md.");
  }

  void files(FileRoles& roles) const override {
    if (base_.rfind("db:", 0) == 0) {
      roles.store(parse_store_base(base_).file, "BASE");
    } else if (base_.rfind("published/", 0) != 0) {
      record_input(roles, base_, "BASE");
    }
    record_input(roles, candidate_, "NEW");
    if (markdown_opt_->count() > 0) roles.output(markdown_, "--markdown");
    if (junit_opt_->count() > 0) roles.output(junit_, "--junit");
    if (json_opt_->count() > 0) roles.output(json_, "--json");
  }

  int run(Context& ctx) override {
    if (!markdown_.empty()) add_save(ctx.output, "md", markdown_, "--markdown");
    if (!junit_.empty()) add_save(ctx.output, "junit", junit_, "--junit");
    if (!json_.empty()) add_save(ctx.output, "json", json_, "--json");
    if (base_.rfind("published/", 0) == 0) return published(ctx);
    CompareOptions options;
    options.seed = seed_;
    options.threshold = parse_fraction(threshold_, "--threshold");
    options.noise_floor = parse_fraction(noise_floor_, "--noise-floor");
    options.ignore = ignore_;
    const std::vector<LoadedRecord> candidates = load_records_or_fail({candidate_});
    const std::vector<LoadedRecord> base =
        base_.rfind("db:", 0) == 0 ? baseline_from_store(base_, candidates, ignore_) : load_records_or_fail({base_});
    if (!base.empty()) {
      const std::vector<std::string> tags = metric_tags(base);
      if (std::find(tags.begin(), tags.end(), metric_) == tags.end()) {
        std::string known;
        for (const auto& t : tags) known += (known.empty() ? "" : ", ") + t;
        throw UsageError("--metric " + metric_ + ": the baseline records have no such metric; they have: " + known);
      }
    }
    options.metric = metric_;
    const CompareResult result = compare_runs(base, candidates, options);
    ctx.print(compare_document(result, options.threshold));
    if (!result.environment.like_for_like) spdlog::warn("the two sides ran on different hardware or builds");
    return exit_code(result);
  }

 private:
  CLI::Option* markdown_opt_ = nullptr;
  CLI::Option* junit_opt_ = nullptr;
  CLI::Option* json_opt_ = nullptr;
  /// The most serious outcome: a candidate run that failed, a regression, an inconclusive difference, then pairs that
  /// could not be made (only these --allow-missing excuses).
  int exit_code(const CompareResult& r) const {
    if (r.any(Verdict::kRunFailed)) {
      for (const auto& c : r.comparisons) {
        if (c.verdict == Verdict::kRunFailed) spdlog::error("{}: run failed, {} ({})", c.label, c.note, c.new_paths.front());
      }
      return kExitRunFailed;
    }
    if (r.any_regression()) return kExitRegression;
    if (r.any(Verdict::kInconclusive)) return kExitInconclusive;
    const bool other = r.any(Verdict::kNotComparable), none = r.any(Verdict::kNoBaseline) || r.comparisons.empty();
    if ((other || none) && !allow_missing_) {
      for (const auto& c : r.comparisons) {
        if (c.verdict == Verdict::kNotComparable || c.verdict == Verdict::kNoBaseline) {
          spdlog::error("{}: {}", c.label, to_string(c.verdict));
        }
      }
      if (r.comparisons.empty()) spdlog::error("no candidate run: nothing was compared");
      return other ? kExitNotSameScenario : kExitNoBaseline;
    }
    return kExitOk;
  }

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
    // Not the publication's recipe: a reproduction was asked for and none was measured (exit 5, as for records).
    bool other_work = false;
    for (const auto& row : rows) {
      if (row.comparison.same_work()) continue;
      other_work = true;
      spdlog::error("{}: not the same work as published/{} ({} difference(s)); its recipe: {}", row.path, ref->id,
                    row.comparison.work_differences.size(),
                    ref->recipe_command().empty() ? std::string("none runnable") : ref->recipe_command());
    }
    return other_work && !allow_missing_ ? kExitNotSameScenario : kExitOk;
  }

  std::string base_, candidate_, threshold_ = "2%", noise_floor_ = "2%", markdown_, junit_, json_,
      metric_ = kThroughputTag;
  std::vector<std::string> ignore_;
  bool allow_missing_ = false;
  uint64_t seed_ = 1;
};

}  // namespace

CommandSpec compare_command() {
  return {"compare", "Compare candidate runs with baseline runs; exit 3 on a regression, 1 on a failed candidate run",
          {kExitOk, kExitRunFailed, kExitUsage, kExitRegression, kExitOutputNotWritten, kExitNotSameScenario, kExitNoBaseline,
           kExitInconclusive},
          "console",
          [] { return std::make_unique<CompareCommand>(); }};
}

}  // namespace gpubench::cli
