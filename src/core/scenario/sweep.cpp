#include "gpubench/core/scenario/sweep.hpp"

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>

namespace gpubench {

std::string SweepPoint::label() const {
  if (swept.empty()) return "single";
  std::string out;
  for (const auto& [k, v] : swept) out += (out.empty() ? "" : ",") + k + "=" + v;
  return out;
}

std::vector<SweepPoint> expand_sweep(const std::map<std::string, std::string>& overrides,
                                     const std::vector<std::string>& key_order) {
  static const std::set<std::string> whole{"name", "output", "telemetry_trace"};
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;
  std::vector<std::string> order = key_order;
  for (const auto& [k, v] : overrides) {
    if (std::find(order.begin(), order.end(), k) == order.end()) order.push_back(k);
  }
  for (const auto& k : order) {
    auto it = overrides.find(k);
    if (it == overrides.end()) continue;
    std::vector<std::string> values;
    if (whole.count(k) || it->second.find(',') == std::string::npos) {
      values.push_back(it->second);
    } else {
      std::stringstream in(it->second);
      std::string item;
      while (std::getline(in, item, ',')) {
        if (item.empty()) throw std::invalid_argument("key '" + k + "': empty item in the list '" + it->second + "'");
        values.push_back(item);
      }
      if (it->second.back() == ',') throw std::invalid_argument("key '" + k + "': the list '" + it->second + "' ends with a comma");
    }
    axes.emplace_back(k, values);
  }
  std::vector<SweepPoint> points(1);
  for (const auto& [key, values] : axes) {
    std::vector<SweepPoint> next;
    for (const auto& p : points) {
      for (const auto& v : values) {
        SweepPoint q = p;
        q.values[key] = v;
        if (values.size() > 1) q.swept[key] = v;
        next.push_back(std::move(q));
      }
    }
    points = std::move(next);
  }
  return points;
}

int64_t largest_fitting_batch(const std::function<bool(int64_t)>& fits, int64_t start, int64_t limit,
                              std::vector<int64_t>* probes) {
  auto probe = [&](int64_t b) {
    if (probes != nullptr) probes->push_back(b);
    return fits(b);
  };
  int64_t ok = 0, bad = limit + 1;
  int64_t b = std::max<int64_t>(1, std::min(start, limit));
  // Grow (or shrink, if the start does not fit) by factors of two to bracket the limit.
  if (probe(b)) {
    ok = b;
    while (ok < limit) {
      const int64_t next = std::min(limit, ok * 2);
      if (probe(next)) {
        ok = next;
      } else {
        bad = next;
        break;
      }
    }
  } else {
    bad = b;
    while (bad > 1) {
      const int64_t next = bad / 2;
      if (probe(next)) {
        ok = next;
        break;
      }
      bad = next;
    }
  }
  while (ok > 0 && bad - ok > 1) {
    const int64_t mid = ok + (bad - ok) / 2;
    if (probe(mid)) {
      ok = mid;
    } else {
      bad = mid;
    }
  }
  return ok;
}

}  // namespace gpubench
