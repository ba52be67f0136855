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

std::vector<int64_t> batch_ladder(int64_t limit) {
  std::vector<int64_t> rungs;
  for (int64_t p = 1; p <= limit; p *= 2) {
    rungs.push_back(p);
    if (p >= 2 && p + p / 2 <= limit) rungs.push_back(p + p / 2);
  }
  return rungs;
}

int64_t ladder_at_or_below(int64_t batch) {
  const std::vector<int64_t> rungs = batch_ladder(batch);
  return rungs.empty() ? 0 : rungs.back();
}

int64_t largest_fitting_batch(const std::function<bool(int64_t)>& fits, int64_t start, int64_t limit,
                              std::vector<int64_t>* probes, BatchGrid grid) {
  // One search over grid positions 0..n-1: `value` maps a position to its batch size, `twice` and `half` move to the
  // position of (about) twice and half the size.
  const std::vector<int64_t> rungs = grid == BatchGrid::kLadder ? batch_ladder(limit) : std::vector<int64_t>{};
  const int64_t n = grid == BatchGrid::kLadder ? static_cast<int64_t>(rungs.size()) : limit;
  if (n <= 0) return 0;
  auto value = [&](int64_t i) { return grid == BatchGrid::kLadder ? rungs[static_cast<size_t>(i)] : i + 1; };
  auto twice = [&](int64_t i) { return std::min(n - 1, grid == BatchGrid::kLadder ? i + 2 : 2 * i + 1); };
  auto half = [&](int64_t i) { return std::max<int64_t>(0, grid == BatchGrid::kLadder ? i - 2 : (i + 1) / 2 - 1); };
  auto probe = [&](int64_t i) {
    if (probes != nullptr) probes->push_back(value(i));
    return fits(value(i));
  };
  const int64_t first = std::max<int64_t>(1, std::min(start, limit));
  int64_t at = grid == BatchGrid::kLadder
                   ? static_cast<int64_t>(std::upper_bound(rungs.begin(), rungs.end(), first) - rungs.begin()) - 1
                   : first - 1;
  int64_t ok = -1, bad = n;
  // Grow (or shrink, if the start does not fit) by factors of two to bracket the limit.
  if (probe(at)) {
    ok = at;
    while (ok < n - 1) {
      const int64_t next = twice(ok);
      if (probe(next)) {
        ok = next;
      } else {
        bad = next;
        break;
      }
    }
  } else {
    bad = at;
    while (bad > 0) {
      const int64_t next = half(bad);
      if (probe(next)) {
        ok = next;
        break;
      }
      bad = next;
    }
  }
  while (ok >= 0 && bad - ok > 1) {
    const int64_t mid = ok + (bad - ok) / 2;
    if (probe(mid)) {
      ok = mid;
    } else {
      bad = mid;
    }
  }
  return ok < 0 ? 0 : value(ok);
}

}  // namespace gpubench
