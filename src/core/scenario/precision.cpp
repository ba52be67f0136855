#include "gpubench/core/scenario/precision.hpp"

#include <stdexcept>

namespace gpubench {

std::optional<Precision> parse_precision(std::string_view text) {
  const auto& names = precision_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == text) return static_cast<Precision>(i);
  }
  return std::nullopt;
}

const std::string& precision_name(Precision p) { return precision_names().at(static_cast<size_t>(p)); }

Precision requested_precision(const Scenario& s) {
  if (const auto p = parse_precision(s.precision)) return *p;
  throw std::invalid_argument("precision: '" + s.precision + "' is not one of fp32, tf32, bf16, fp16, amp, fp8");
}

bool half_width(Precision p) { return p == Precision::kBf16 || p == Precision::kFp16 || p == Precision::kFp8; }

}  // namespace gpubench
