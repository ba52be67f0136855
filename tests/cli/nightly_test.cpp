// What a nightly CI job relies on (issue 57): a dead run never passes, scenarios that differ never read the same,
// numbers are never set against other work, the store has its tools, errors come all at once, and hostile leftovers
// are refused before any work.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_fixture.h"
#include "gpubench/core/record/record_io.hpp"

namespace gpubench {
namespace {

const std::string kFailures = std::string(GPUBENCH_FIXTURES) + "/records/failures/";

/// `<testcase name="...">` of a JUnit file, in order.
std::vector<std::string> junit_names(const std::string& xml) {
  std::vector<std::string> out;
  const std::regex name("<testcase classname=\"gpubench\" name=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), name); it != std::sregex_iterator(); ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

bool store_missing(const Result& r) { return r.err.find("built without SQLite") != std::string::npos; }

// 1. A dead run passes: a crashed candidate was "no baseline" (exit 6), and --allow-missing made it 0 with an empty
// JUnit file.
TEST_F(CliTest, AFailedCandidateRunIsAFailureWithItsStatusAndReasonWhateverAllowMissingSays) {
  const std::string junit = (dir_ / "c.xml").string();
  for (const std::string extra : {"", " --allow-missing"}) {
    const Result r = gpubench("compare " + kFailures + "clean_2gpu.json " + kFailures + "fault_killed_rank1.json --junit " +
                              junit + extra);
    EXPECT_EQ(r.exit_code, 1) << extra << "\n" << r.out << r.err;
    EXPECT_NE(r.out.find("RUN FAILED"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("killed by signal 9"), std::string::npos) << r.err;
    const std::string xml = slurp(junit);
    EXPECT_NE(xml.find("tests=\"1\" failures=\"1\""), std::string::npos) << xml;
    EXPECT_NE(xml.find("<failure message=\"run failed: status failed: rank 1 was killed by signal 9"), std::string::npos)
        << xml;
  }
  // Beside a good candidate, the failed one still fails the job; the good one is compared as before.
  fs::create_directories(dir_ / "night");
  fs::copy_file(kFailures + "clean_2gpu.json", dir_ / "night" / "good.json");
  fs::copy_file(kFailures + "fault_stopped_rank1.json", dir_ / "night" / "stopped.json");
  const Result both = gpubench("compare " + kFailures + "clean_2gpu.json " + (dir_ / "night").string() + " --format json");
  EXPECT_EQ(both.exit_code, 1) << both.out << both.err;
  const auto j = nlohmann::json::parse(both.out);
  EXPECT_TRUE(j.at("run_failed").get<bool>());
  std::set<std::string> verdicts;
  for (const auto& c : j.at("comparisons")) verdicts.insert(c.at("verdict").get<std::string>());
  EXPECT_EQ(verdicts.count("run failed"), 1u) << both.out;
  EXPECT_EQ(verdicts.count("no significant change"), 1u) << both.out;
}

/// The committed record with its identity changed in `key` (dataset_size, warmup_steps): the same-looking scenario.
std::string variant(const fs::path& dir, const std::string& name, int64_t dataset_size, int64_t warmup_steps) {
  RunRecord r = read_record(kCommitted);
  r.scenario.dataset_size = dataset_size;
  r.scenario.warmup_steps = warmup_steps;
  const std::string path = (dir / name).string();
  write_record(path, r);
  return path;
}

// 2. Different scenarios read the same: three identities with one label in compare, JUnit, export and history.
TEST_F(CliTest, ScenariosThatLookAlikeAreToldApartByTheKeysInWhichTheyDifferEverywhere) {
  fs::create_directories(dir_ / "base");
  fs::create_directories(dir_ / "new");
  for (const fs::path& side : {dir_ / "base", dir_ / "new"}) {
    variant(side, "a.json", 25600, 15);
    variant(side, "b.json", 10240, 15);
    variant(side, "c.json", 25600, 10);
  }
  const std::string junit = (dir_ / "c.xml").string(), md = (dir_ / "c.md").string();
  const Result c = gpubench("compare " + (dir_ / "base").string() + " " + (dir_ / "new").string() + " --junit " + junit +
                            " --markdown " + md);
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  const std::vector<std::string> names = junit_names(slurp(junit));
  ASSERT_EQ(names.size(), 3u) << slurp(junit);
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), 3u) << slurp(junit);
  for (const auto& n : names) EXPECT_NE(n.find("dataset_size="), std::string::npos) << n;
  EXPECT_NE(slurp(md).find("warmup_steps=10"), std::string::npos) << slurp(md);
  EXPECT_NE(c.out.find("dataset_size=10240, warmup_steps=15"), std::string::npos) << c.out;

  // export's scenario column: one distinct label per scenario_id.
  const Result e = gpubench("export " + (dir_ / "new").string() + " --per run --format jsonl");
  ASSERT_EQ(e.exit_code, 0) << e.err;
  std::set<std::string> ids, labels;
  std::istringstream lines(e.out);
  for (std::string line; std::getline(lines, line);) {
    const auto row = nlohmann::json::parse(line);
    ids.insert(row.at("scenario_id").get<std::string>());
    labels.insert(row.at("scenario").get<std::string>());
  }
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(labels.size(), 3u) << e.out;

  // history and --detect name them apart too, each with its scenario_id.
  const std::string db = (dir_ / "s.db").string();
  const Result added = gpubench("db add " + db + " " + (dir_ / "base").string());
  if (store_missing(added)) GTEST_SKIP() << "built without SQLite";
  ASSERT_EQ(added.exit_code, 0) << added.err;
  const Result h = gpubench("history " + db + " --detect --allow-missing --format json");
  ASSERT_EQ(h.exit_code, 0) << h.err;
  const auto doc = nlohmann::json::parse(h.out);
  std::set<std::string> series;
  for (const auto& row : doc.at("tables").at("series")) series.insert(row.at("scenario").get<std::string>());
  EXPECT_EQ(series.size(), 3u) << h.out;
  for (const auto& row : doc.at("tables").at("runs")) EXPECT_EQ(row.at("scenario_id").get<std::string>().size(), 16u);
  const Result csv = gpubench("history " + db + " --format csv");
  EXPECT_NE(csv.out.find(",scenario_id,"), std::string::npos) << csv.out;

  // compare --help lists every pairing key, those two included.
  const Result help = gpubench("compare --help");
  for (const char* key : {"dataset_size", "warmup_steps", "precision_resolved", "world_size", "device_model", "kernels"}) {
    EXPECT_NE(help.out.find(key), std::string::npos) << key;
  }
}

// 3. Numbers across different work: no percentage of an SD UNet figure for a ResNet-50 run; JSON types in exports.
TEST_F(CliTest, NoPercentageOfAnotherModelsPublishedFigureAndExportsKeepJsonTypes) {
  const Result p = gpubench("compare published/seed004-rtx4070-sd " + kCommitted + " --allow-missing --format json");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const auto j = nlohmann::json::parse(p.out);
  EXPECT_TRUE(j.at(0).at("percent_of_published").is_null()) << p.out;
  EXPECT_NE(j.at(0).at("no_percent_reason").get<std::string>().find("different work"), std::string::npos);
  const Result md = gpubench("compare published/seed004-rtx4070-sd " + kCommitted + " --allow-missing");
  EXPECT_EQ(md.out.find("% of the published figure"), std::string::npos) << md.out;
  // The same model and mode still gets its percentage.
  const Result same = gpubench("compare published/seed000-rtx4090-amp " + kCommitted + " --allow-missing --format json");
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_TRUE(nlohmann::json::parse(same.out).at(0).at("percent_of_published").is_number()) << same.out;

  for (const std::string per : {"run", "epoch"}) {
    const Result e = gpubench("export " + kCommitted + " --per " + per + " --format jsonl");
    ASSERT_EQ(e.exit_code, 0) << e.err;
    const auto row = nlohmann::json::parse(e.out.substr(0, e.out.find('\n')));
    EXPECT_TRUE(row.at("clocks_locked").is_boolean()) << row.dump();
    EXPECT_TRUE(row.at("data_only").is_boolean()) << row.dump();
    EXPECT_TRUE(row.at("batch_size").is_number_integer()) << row.dump();
    if (per == "epoch") EXPECT_TRUE(row.at("complete").is_boolean()) << row.dump();
  }
  const Result json = gpubench("export " + kCommitted + " --format json");
  EXPECT_TRUE(nlohmann::json::parse(json.out).at("tables").at("epochs").at(0).at("clocks_locked").is_boolean());
  // CSV keeps the words pandas reads as booleans.
  const Result csv = gpubench("export " + kCommitted + " --per run --format csv");
  EXPECT_NE(csv.out.find(",false,"), std::string::npos) << csv.out;
}

// 3. Charts never mix units on one axis: BERT's and GPT-2's sequences/s get their own panel beside images/s.
TEST_F(CliTest, TheTrendChartDrawsEachUnitOnItsOwnAxis) {
  const std::string db = (dir_ / "s.db").string();
  const Result added = gpubench("db add " + db + " " + std::string(GPUBENCH_FIXTURES) + "/records/aa-noise");
  if (store_missing(added)) GTEST_SKIP() << "built without SQLite";
  const Result r = gpubench("report --db " + db + " --out " + (dir_ / "rep").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (!fs::exists(dir_ / "rep" / "trend.png")) GTEST_SKIP() << "no matplotlib: " << r.err;
  const auto labels = nlohmann::json::parse(slurp(dir_ / "rep" / "charts.json")).at("trend.png");
  std::vector<std::string> axes;
  for (const auto& l : labels) {
    if (l.get<std::string>().rfind("axis: ", 0) == 0) axes.push_back(l.get<std::string>());
  }
  EXPECT_EQ(axes, (std::vector<std::string>{"axis: samples_per_s (images/s)", "axis: samples_per_s (sequences/s)"}))
      << labels.dump();
  EXPECT_NE(slurp(dir_ / "rep" / "trend.csv").find(",sequences/s,"), std::string::npos);
}

// 4. The store's tools: list, remove and prune (one transaction, with a dry run), export STORE.
TEST_F(CliTest, TheStoreListsRemovesAndPrunesRunsAndExportsThem) {
  const std::string db = (dir_ / "s.db").string();
  const std::string aa = std::string(GPUBENCH_FIXTURES) + "/records/aa-noise";
  const Result added = gpubench("db add " + db + " " + aa);
  if (store_missing(added)) GTEST_SKIP() << "built without SQLite";
  ASSERT_EQ(added.exit_code, 0) << added.err;
  const Result all = gpubench("db list " + db + " --format json");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  const auto runs = nlohmann::json::parse(all.out).at("tables").at("runs");
  ASSERT_EQ(runs.size(), 36u);
  for (const auto& r : runs) {
    EXPECT_EQ(r.at("status"), "ok");
    EXPECT_FALSE(r.at("scenario").get<std::string>().empty());
    EXPECT_FALSE(r.at("start_time_utc").get<std::string>().empty());
  }
  const Result bert = gpubench("db list " + db + " --model bert-base --scenario batch_size=32 --format csv");
  EXPECT_EQ(std::count(bert.out.begin(), bert.out.end(), '\n'), 1 + 8) << bert.out;
  EXPECT_EQ(gpubench("db list " + db + " --model nonsense").exit_code, 2);
  EXPECT_EQ(gpubench("db list " + db + " --status broken").exit_code, 2);

  // A dry run changes nothing; an unknown id removes nothing (exit 2); rm removes exactly what it names.
  const std::string before = slurp(db);
  const Result dry = gpubench("db prune " + db + " --keep 2 --dry-run --format json");
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_EQ(nlohmann::json::parse(dry.out).at("ids").size(), 36u - 6 * 2) << dry.out;
  EXPECT_NE(gpubench("db prune " + db + " --keep 2 --dry-run").out.find("24 run(s) would be removed"), std::string::npos);
  EXPECT_EQ(slurp(db), before);
  EXPECT_EQ(gpubench("db rm " + db + " 1 99999").exit_code, 2);
  EXPECT_NE(gpubench("db list " + db).out.find("36 of 36"), std::string::npos);
  const Result rm = gpubench("db rm " + db + " 1 2");
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_NE(rm.out.find("2 run(s) removed; 34 left"), std::string::npos) << rm.out;
  // Prune keeps the newest 2 of each of the 6 scenarios.
  const Result pruned = gpubench("db prune " + db + " --keep 2");
  ASSERT_EQ(pruned.exit_code, 0) << pruned.err;
  EXPECT_NE(pruned.out.find("12 left"), std::string::npos) << pruned.out;
  const Result left = gpubench("db list " + db + " --format json");
  std::map<std::string, std::vector<std::string>> starts;
  const auto left_doc = nlohmann::json::parse(left.out);  // the loop must not walk a destroyed temporary
  for (const auto& r : left_doc.at("tables").at("runs")) {
    starts[r.at("scenario_id").get<std::string>()].push_back(r.at("start_time_utc").get<std::string>());
  }
  EXPECT_EQ(starts.size(), 6u) << left.out << left.err;
  for (const auto& [id, s] : starts) EXPECT_EQ(s.size(), 2u) << id;

  // export STORE: the stored records as a table, as from files; no parser error leaks.
  const Result e = gpubench("export " + db + " --per run --format csv");
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(std::count(e.out.begin(), e.out.end(), '\n'), 1 + 12) << e.out;
  EXPECT_EQ(e.err.find("json.exception"), std::string::npos) << e.err;
  // A file that is not a store (nor records) is a clear error, not a parser's.
  std::ofstream(dir_ / "junk.db") << "SQLite format 3" << std::string(1, '\0') << "garbage";
  const Result junk = gpubench("export " + (dir_ / "junk.db").string());
  EXPECT_EQ(junk.exit_code, 2);
  EXPECT_EQ(junk.err.find("json.exception"), std::string::npos) << junk.err;
}

// 4. history --detect with a smaller minimum after a change: the night it happens, not five nights late.
TEST_F(CliTest, HistoryDetectFindsAChangeTheFirstNightWithMinAfterOne) {
  const RunRecord base = read_record(kCommitted);
  fs::create_directories(dir_ / "nights");
  for (int d = 1; d <= 8; ++d) {
    write_record((dir_ / "nights" / ("n" + std::to_string(d) + ".json")).string(), night(base, d - 1, d < 8 ? 1.0 : 0.8, base.telemetry.driver_version,
                                                                  0.003 * ((d * 7) % 5 - 2)));
  }
  const std::string db = (dir_ / "s.db").string();
  const Result added = gpubench("db add " + db + " " + (dir_ / "nights").string());
  if (store_missing(added)) GTEST_SKIP() << "built without SQLite";
  const Result late = gpubench("history " + db + " --detect");
  EXPECT_EQ(late.exit_code, 7) << late.out << late.err;  // 8 runs: too few for 5 on each side
  const Result soon = gpubench("history " + db + " --detect --min-after 1");
  EXPECT_EQ(soon.exit_code, 3) << soon.out << soon.err;
  EXPECT_NE(soon.out.find("2026-11-08"), std::string::npos) << soon.out;
  EXPECT_EQ(gpubench("history " + db + " --detect --min-after 0").exit_code, 2);
  EXPECT_EQ(gpubench("history " + db + " --detect --min-after 6").exit_code, 2);
}

// The README's nightly recipe end to end: runs of several scenarios into a store, night after night, then tonight's
// folder against the store. No candidate is ever part of its own baseline, nor are tonight's other repeats.
TEST_F(CliTest, TheNightlyRecipeComparesTonightWithEarlierNightsOnly) {
  const std::string db = (dir_ / "results.db").string();
  const auto night = [&](const std::string& folder) {
    for (const char* batch : {"4", "8"}) {
      const Result r = gpubench("run --config " + tiny() + " --epochs 1 --dataset-size 8 --batch-size " + batch + " --repeats 2 --db " +
                                db + " --out " + (dir_ / folder / ("bs" + std::string(batch) + ".json")).string());
      if (store_missing(r)) return false;
      EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    return true;
  };
  if (!night("n1")) GTEST_SKIP() << "built without SQLite";
  ASSERT_TRUE(night("n2"));
  ASSERT_TRUE(night("n3"));
  EXPECT_NE(gpubench("db list " + db).out.find("12 of 12"), std::string::npos);
  const Result c = gpubench("compare db:" + db + ":last-5 " + (dir_ / "n3").string() + " --format json");
  ASSERT_NE(c.exit_code, 2) << c.err;
  ASSERT_NE(c.exit_code, 6) << c.err;
  const auto j = nlohmann::json::parse(c.out);
  ASSERT_EQ(j.at("comparisons").size(), 2u) << c.out;
  for (const auto& cmp : j.at("comparisons")) {
    EXPECT_EQ(cmp.at("new_runs"), 2) << cmp.dump();
    EXPECT_EQ(cmp.at("base_runs"), 4) << cmp.dump();  // nights 1 and 2, two repeats each: not tonight's
    for (const auto& b : cmp.at("base_paths")) {
      const std::string path = b.get<std::string>();
      EXPECT_EQ(path.find("/n3/"), std::string::npos) << path;  // never tonight's own runs
      EXPECT_TRUE(path.find("/n1/") != std::string::npos || path.find("/n2/") != std::string::npos) << path;
    }
  }
}

// 5. Every error of a file at once, each with file:line:col.
TEST_F(CliTest, ValidateReportsEveryErrorOfAFileWithItsPlace) {
  const fs::path f = dir_ / "bad.yaml";
  std::ofstream(f) << "model: resnet50\nbatch_size: -3\nprecision: fp12\noptimizer:\n  lr: banana\nepochs: 2\n";
  const Result r = gpubench("validate " + f.string() + " --format json");
  EXPECT_EQ(r.exit_code, 2);
  const auto errors = nlohmann::json::parse(r.out).at("files").at(0).at("errors");
  ASSERT_EQ(errors.size(), 3u) << r.out;
  EXPECT_EQ(errors[0].at("key"), "batch_size");
  EXPECT_EQ(errors[0].at("line"), 2);
  EXPECT_EQ(errors[1].at("key"), "precision");
  EXPECT_EQ(errors[2].at("key"), "optimizer.lr");
  EXPECT_EQ(errors[2].at("line"), 5);
  EXPECT_EQ(errors[2].at("column"), 7);
  const Result console = gpubench("validate " + f.string());
  for (const char* place : {"bad.yaml:2:13: key 'batch_size'", "bad.yaml:3:12: key 'precision'", "bad.yaml:5:7: key 'optimizer.lr'"}) {
    EXPECT_NE(console.err.find(place), std::string::npos) << place << "\n" << console.err;
  }
  // Rules across keys are all reported too.
  std::ofstream(dir_ / "rules.yaml") << "model: llama\nprompt_tokens: 5\ndata_only: true\n";
  const Result rules = gpubench("validate " + (dir_ / "rules.yaml").string() + " --format json");
  EXPECT_EQ(nlohmann::json::parse(rules.out).at("files").at(0).at("errors").size(), 2u) << rules.out;
}

// 5. `run MODEL --help` is that model's; one name per concept (hidden), the old name kept as an alias.
TEST_F(CliTest, RunModelHelpShowsThatModelsKeysAndTheHiddenSizeHasOneName) {
  const Result gpt2 = gpubench("run gpt2 --help"), resnet = gpubench("run resnet50 --help");
  EXPECT_NE(gpt2.out, resnet.out);
  EXPECT_NE(gpt2.out.find("Keys of gpt2:"), std::string::npos) << gpt2.out;
  EXPECT_NE(gpt2.out.find("--vocab"), std::string::npos);
  EXPECT_EQ(gpt2.out.find("--image-size"), std::string::npos) << gpt2.out;
  EXPECT_NE(resnet.out.find("--image-size"), std::string::npos);
  EXPECT_EQ(resnet.out.find("--vocab"), std::string::npos) << resnet.out;
  EXPECT_NE(gpubench("run --model llama --help").out.find("Keys of llama:"), std::string::npos);

  const std::string keys = " --layers 1 --heads 4 --device cpu --dry-run --format json";
  for (const std::string& model : {std::string("gpt2"), std::string("bert-base"), std::string("llama")}) {
    const Result r = gpubench("run " + model + " --hidden 64" + keys + (model == "llama" ? " --kv-heads 2" : ""));
    ASSERT_EQ(r.exit_code, 0) << model << ": " << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out).at("scenario").at("hidden"), 64) << r.out;
  }
  const Result alias = gpubench("run gpt2 --width 64" + keys);
  ASSERT_EQ(alias.exit_code, 0) << alias.err;
  EXPECT_EQ(nlohmann::json::parse(alias.out).at("scenario").at("hidden"), 64);
  const Result both = gpubench("run gpt2 --width 64 --hidden 32" + keys);
  EXPECT_EQ(both.exit_code, 2);
  const Result llama = gpubench("run llama --width 64 --dry-run");
  EXPECT_EQ(llama.exit_code, 2);
  EXPECT_NE(llama.err.find("llama calls it hidden (--hidden)"), std::string::npos) << llama.err;
  // A record written when gpt2 called it width reads under today's name (and pairs with today's runs).
  RunRecord old = read_record(std::string(GPUBENCH_FIXTURES) + "/records/aa-noise/gpt2_fused_bs8_r1.json");
  EXPECT_EQ(old.scenario.model_options.count("width"), 0u);
  EXPECT_EQ(old.scenario.model_options.count("hidden"), 1u);
}

// 5. --dry-run checks the device as the run would.
TEST_F(CliTest, DryRunOnADeviceThatIsNotThereFailsAsTheRunWould) {
  const Result probe = gpubench("info --format json");
  const auto doc = nlohmann::json::parse(probe.out);  // a named value: a range-for over a temporary's part dangles
  for (const auto& d : doc.at("devices")) {
    if (d.at("id").get<std::string>().rfind("cuda:", 0) == 0 && d.at("available").get<bool>()) {
      GTEST_SKIP() << "this machine has a CUDA device";
    }
  }
  const Result r = gpubench("run --config " + tiny() + " --device cuda --dry-run", "cd " + dir_.string() + " &&");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("the run would fail"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "runs")) << "a dry run writes no record";
  EXPECT_EQ(gpubench("run --config " + tiny() + " --dry-run", "cd " + dir_.string() + " &&").exit_code, 0);
}

// 6. Hostile leftovers.
TEST_F(CliTest, SeedsOutOfRangeAreRefusedNotWrapped) {
  for (const char* seed : {"99999999999999999999", "-1", "1e3", ""}) {
    const Result r = gpubench("dataset make --images 1 --classes 1 --seed '" + std::string(seed) + "' --out " +
                              (dir_ / "d").string());
    EXPECT_EQ(r.exit_code, 2) << seed << ": " << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "d")) << seed;
  }
  EXPECT_EQ(gpubench("compare --seed 99999999999999999999 " + kCommitted + " " + kCommitted).exit_code, 2);
  EXPECT_EQ(gpubench("dataset make --images 1 --classes 1 --seed 18446744073709551615 --out " + (dir_ / "d").string())
                .exit_code,
            0);
}

/// Starts `command` under sh, its output to `out`; returns its pid.
pid_t spawn(const std::string& command, const fs::path& out) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string line = "exec " + command + " > " + out.string() + " 2>&1";
    ::execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

bool wait_for(const fs::path& file, const std::string& text, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (!fs::exists(file)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    std::ifstream in(file);
    const std::string s((std::istreambuf_iterator<char>(in)), {});
    if (s.find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST_F(CliTest, ARunKilledWhileWaitingForTheStoresLockHasAlreadyNamedItsRecord) {
  // --quiet too: the record's name is the final result, never a log line that --quiet hides.
  for (const std::string quiet : {"", " --quiet"}) {
  const fs::path dir = dir_ / (quiet.empty() ? "loud" : "quiet");
  fs::create_directories(dir);
  const std::string db = (dir / "s.db").string(), rec = (dir / "r.json").string();
  const Result added = gpubench("db add " + db + " " + kCommitted);
  if (store_missing(added)) GTEST_SKIP() << "built without SQLite";
  if (std::system("python3 -c 'import sqlite3' 2>/dev/null") != 0) GTEST_SKIP() << "no python3 with sqlite3";
  // The run starts (its store opens), then another writer takes the store's write lock and keeps it for a minute.
  const pid_t run = spawn(std::string(GPUBENCH_BINARY) + " run --config " + tiny() +
                              " --epochs 1 --dataset-size 40 --out " + rec + " --db " + db + quiet,
                          dir_ / "run.out");
  ASSERT_TRUE(wait_for(epochs_stream_path(rec), "", std::chrono::seconds(60))) << slurp(dir_ / "run.out");
  const fs::path ready = dir_ / "locked";
  const pid_t holder = spawn("python3 -c \"import sqlite3, time; c = sqlite3.connect('" + db +
                                 "', isolation_level=None); c.execute('BEGIN IMMEDIATE'); open('" + ready.string() +
                                 "', 'w').close(); time.sleep(60)\"",
                             dir_ / "holder.out");
  EXPECT_TRUE(wait_for(ready, "", std::chrono::seconds(20))) << slurp(dir_ / "holder.out");
  // The lock was taken while it trained: the record must be named before the store is waited for.
  EXPECT_TRUE(wait_for(rec, "", std::chrono::seconds(120))) << slurp(dir_ / "run.out");
  const bool named = wait_for(dir_ / "run.out", "record written: " + rec, std::chrono::seconds(20));
  ::kill(run, SIGKILL);
  ::kill(holder, SIGKILL);
  int status = 0;
  ::waitpid(run, &status, 0);
  ::waitpid(holder, &status, 0);
  ASSERT_TRUE(named) << quiet << "\n" << slurp(dir_ / "run.out");
  EXPECT_EQ(read_record(rec).status, RunStatus::kOk);  // the record it named is whole
  }
}

TEST_F(CliTest, DbAddIntoAnUnusableStoreIsAUsageErrorBeforeAnyWorkAndLeavesItUntouched) {
  const std::string good = (dir_ / "good.db").string();
  const Result made = gpubench("db add " + good + " " + std::string(GPUBENCH_FIXTURES) + "/records/aa-noise");
  if (store_missing(made)) GTEST_SKIP() << "built without SQLite";
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string bytes = slurp(good);
  auto write = [](const fs::path& p, const std::string& s) {
    std::ofstream out(p, std::ios::binary);
    out << s;
  };
  write(dir_ / "text.db", "not a store at all\n");
  write(dir_ / "truncated.db", bytes.substr(0, bytes.size() / 3));
  std::string damaged = bytes;
  for (size_t i = 4096 + 200; i < std::min(damaged.size(), size_t{4096 * 3}); ++i) damaged[i] = static_cast<char>(0xA5);
  write(dir_ / "damaged.db", damaged);
  std::string newer = bytes;  // user_version (offset 60, big-endian) of a later gpubench
  newer[60] = 0;
  newer[61] = 0;
  newer[62] = 0;
  newer[63] = 99;
  write(dir_ / "newer.db", newer);
  if (std::system(("python3 -c \"import sqlite3; c = sqlite3.connect('" + (dir_ / "foreign.db").string() +
                   "'); c.execute('CREATE TABLE t (x)'); c.commit()\" 2>/dev/null")
                      .c_str()) != 0) {
    write(dir_ / "foreign.db", "");  // without python: an empty file is a new store, so leave this case out
    fs::remove(dir_ / "foreign.db");
  }
  for (const char* name : {"text.db", "truncated.db", "damaged.db", "newer.db", "foreign.db"}) {
    const fs::path p = dir_ / name;
    if (!fs::exists(p)) continue;
    const std::string before = slurp(p);
    const Result r = gpubench("db add " + p.string() + " " + kCommitted);
    EXPECT_EQ(r.exit_code, 2) << name << ": " << r.err;
    EXPECT_EQ(slurp(p), before) << name << " was changed";
    EXPECT_FALSE(fs::exists(p.string() + "-wal") && fs::file_size(p.string() + "-wal") > 0) << name;
  }
}

}  // namespace
}  // namespace gpubench

namespace gpubench {

// A store baseline decides each candidate's verdict alone: a candidate of a scenario the store has never run got
// exit 6 alone in its folder and exit 5 (a diff against another candidate's baseline) beside another record, and
// --ignore was not applied to the store's pairing. Now: the store's newest run of the model names the differing keys
// (exit 5) whatever the folder holds, and --ignore pairs in the store as it does for files.
TEST_F(CliTest, AStoreBaselineGivesEachCandidateTheSameVerdictWhateverTheFolderHolds) {
  const RunRecord base = read_record(kCommitted);
  const std::string store = (dir_ / "s.db").string();
  fs::create_directories(dir_ / "nights");
  for (int d = 1; d <= 5; ++d) {
    write_record((dir_ / "nights" / ("n" + std::to_string(d) + ".json")).string(),
                 night(base, d - 1, 1.0, base.telemetry.driver_version, 0.001 * d));
  }
  const Result added = gpubench("db add " + store + " " + (dir_ / "nights").string());
  if (store_missing(added)) GTEST_SKIP() << "built without SQLite";
  ASSERT_EQ(added.exit_code, 0) << added.err;
  RunRecord other = night(base, 10, 1.0, base.telemetry.driver_version, 0.0);  // another batch size, same model
  other.scenario.batch_size = 128;
  RunRecord same = night(base, 10, 1.0, base.telemetry.driver_version, 0.002);
  fs::create_directories(dir_ / "alone");
  fs::create_directories(dir_ / "beside");
  write_record((dir_ / "alone" / "other.json").string(), other);
  write_record((dir_ / "beside" / "other.json").string(), other);
  write_record((dir_ / "beside" / "same.json").string(), same);
  const std::string by = " --format json";
  for (const char* folder : {"alone", "beside"}) {
    const Result r = gpubench("compare db:" + store + ":last-5 " + (dir_ / folder).string() + by);
    EXPECT_EQ(r.exit_code, 5) << folder << "\n" << r.err;
    const nlohmann::json doc = nlohmann::json::parse(r.out);
    const nlohmann::json& rows = doc.contains("comparisons") ? doc.at("comparisons") : doc.at("data").at("comparisons");
    bool named = false;
    for (const auto& c : rows) {
      const std::string keys = c.at("differing_keys").dump();
      if (keys.find("batch_size") == std::string::npos) continue;
      named = true;
      EXPECT_NE(c.at("verdict").get<std::string>().find("not the same"), std::string::npos) << folder << c.dump();
    }
    EXPECT_TRUE(named) << folder << ": the differing key is named\n" << r.out;
  }
  const Result ignored = gpubench("compare db:" + store + ":last-5 " + (dir_ / "alone").string() + " --ignore batch_size");
  EXPECT_NE(ignored.exit_code, 5) << ignored.err;
  EXPECT_NE(ignored.exit_code, 6) << ignored.err;
  EXPECT_NE(ignored.err.find("baseline: 5 run(s)"), std::string::npos) << "the five nights are its baseline\n" << ignored.err;
}

}  // namespace gpubench
