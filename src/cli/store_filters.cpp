#include "cli/store_filters.h"

#include <algorithm>
#include <cctype>

#include "gpubench/core/record/metric_catalog.hpp"
#include "gpubench/core/scenario/scenario_loader.hpp"
#include "gpubench/engine/engine.hpp"

namespace gpubench::cli {

namespace {

/// "2026-11-01" or "2026-11-01T12:00[:00][Z]".
bool valid_date(const std::string& s) {
  auto digits = [&s](size_t from, size_t n) {
    if (s.size() < from + n) return false;
    for (size_t i = from; i < from + n; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    }
    return true;
  };
  if (!(digits(0, 4) && s.size() >= 10 && s[4] == '-' && digits(5, 2) && s[7] == '-' && digits(8, 2))) return false;
  const int month = std::stoi(s.substr(5, 2)), day = std::stoi(s.substr(8, 2));
  if (month < 1 || month > 12 || day < 1 || day > 31) return false;
  if (s.size() == 10) return true;
  if (s[10] != 'T' || !digits(11, 2) || s.size() < 16 || s[13] != ':' || !digits(14, 2)) return false;
  std::string rest = s.substr(16);
  if (!rest.empty() && rest[0] == ':') {
    if (!digits(17, 2)) return false;
    rest = s.substr(19);
  }
  return rest.empty() || rest == "Z";
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
  return out;
}

/// Filters that name something that does not exist are usage errors with the valid choices, never an empty answer.
void check_filters(const HistoryQuery& q, const ResultsStore& store) {
  if (!q.model.empty()) {
    const std::vector<std::string> models = model_names();
    if (std::find(models.begin(), models.end(), q.model) == models.end()) {
      const std::string best = closest_match(q.model, models);
      throw UsageError("--model " + q.model + ": unknown model" + (best.empty() ? "" : " (did you mean " + best + "?)") +
                       "; models: " + joined(models));
    }
  }
  std::vector<std::string> keys;
  for (const auto& k : all_scenario_keys(model_options())) keys.push_back(k.key);
  for (const auto& [key, value] : q.scenario) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      const std::string best = closest_match(key, keys);
      throw UsageError("--scenario " + key + "=" + value + ": unknown scenario key" +
                       (best.empty() ? "" : " (did you mean " + best + "?)") + "; keys: " + joined(keys));
    }
  }
  std::vector<std::string> tags;
  for (const auto& m : standard_metrics()) tags.push_back(m.tag);
  for (const auto& t : store.metric_tags()) {
    if (std::find(tags.begin(), tags.end(), t) == tags.end()) tags.push_back(t);
  }
  if (std::find(tags.begin(), tags.end(), q.metric) == tags.end()) {
    const std::string best = closest_match(q.metric, tags);
    throw UsageError("--metric " + q.metric + ": no such metric" + (best.empty() ? "" : " (did you mean " + best + "?)") +
                     "; metrics: " + joined(tags));
  }
  if (!q.since.empty() && !valid_date(q.since)) {
    throw UsageError("--since " + q.since + ": expected a date such as 2026-11-01 or 2026-11-01T12:00:00Z");
  }
}

}  // namespace

void StoreFilters::declare(CLI::App& cmd) {
  cmd.add_option("--model", model, "Only this model")->type_name("NAME");
  cmd.add_option("--scenario", scenario,
                 "Only runs whose resolved scenario has KEY=VALUE (repeatable), e.g. batch_size=256")
      ->type_name("KEY=VALUE");
  cmd.add_option("--since", since, "Only runs that started at or after this date (2026-11-01)")->type_name("DATE");
}

HistoryQuery StoreFilters::query(const std::string& metric, const ResultsStore& store) const {
  HistoryQuery q;
  q.model = model;
  q.metric = metric;
  q.since = since;
  for (const auto& kv : scenario) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw UsageError("--scenario: expected KEY=VALUE (e.g. batch_size=256), got '" + kv + "'");
    }
    q.scenario[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  check_filters(q, store);
  return q;
}

StoreLocation parse_store(const std::string& text, const std::string& flag) {
  try {
    return StoreLocation::parse(text);
  } catch (const std::exception& e) {
    throw UsageError(flag + ": " + e.what());
  }
}

void check_takes_records(const StoreLocation& location, const std::string& flag) {
  try {
    ResultsStore probe(location, ResultsStore::Access::kWrite);
  } catch (const std::exception& e) {
    throw UsageError(flag + ": " + e.what());
  }
}

std::unique_ptr<ResultsStore> open_store_for_reading(const std::string& path) {
  try {
    return std::make_unique<ResultsStore>(path, ResultsStore::Access::kRead);  // a read never makes a store
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
}

}  // namespace gpubench::cli
