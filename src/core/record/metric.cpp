#include "gpubench/core/record/metric.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <tuple>

namespace gpubench {

std::string to_string(Better b) {
  switch (b) {
    case Better::kHigher: return "higher";
    case Better::kLower: return "lower";
    case Better::kNeither: return "neither";
  }
  return "neither";
}

Better better_from_string(const std::string& s) {
  for (auto b : {Better::kHigher, Better::kLower, Better::kNeither}) {
    if (to_string(b) == s) return b;
  }
  throw std::invalid_argument("unknown metric direction '" + s + "' (higher, lower or neither)");
}


void to_json(nlohmann::json& j, const Metric& m) {
  j = {{"tag", m.tag}, {"name", m.name}, {"unit", m.unit}, {"better", to_string(m.better)}, {"value", m.value}};
}

void from_json(const nlohmann::json& j, Metric& m) {
  m.tag = j.at("tag").get<std::string>();
  if (m.tag.empty()) throw std::runtime_error("a metric without a tag");
  m.name = j.value("name", m.tag);
  m.unit = j.value("unit", std::string());
  m.better = better_from_string(j.value("better", std::string("neither")));
  m.value = j.at("value").get<double>();
  if (!std::isfinite(m.value)) throw std::runtime_error("metric '" + m.tag + "': value is not finite");
}

const Metric* find_metric(const Metrics& metrics, const std::string& tag) {
  const auto it = std::find_if(metrics.begin(), metrics.end(), [&tag](const Metric& m) { return m.tag == tag; });
  return it == metrics.end() ? nullptr : &*it;
}

void set_metric(Metrics& metrics, Metric m) {
  const auto it = std::find_if(metrics.begin(), metrics.end(), [&m](const Metric& x) { return x.tag == m.tag; });
  if (it == metrics.end()) {
    metrics.push_back(std::move(m));
  } else {
    *it = std::move(m);
  }
}

}  // namespace gpubench
