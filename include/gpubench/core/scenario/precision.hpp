#pragma once
// The scenario's `precision` as a type: what code branches on. The key's text (precision_names(), scenario.hpp) is what
// files, flags and records hold; `amp` is a request only (it resolves to fp16, bf16 or fp32: resolved_precision).

#include <optional>
#include <string>
#include <string_view>

#include "gpubench/core/scenario/scenario.hpp"

namespace gpubench {

/// In precision_names()'s order.
enum class Precision { kFp32, kTf32, kBf16, kFp16, kAmp, kFp8 };

/// `text` as a Precision; nullopt where it is none of precision_names().
std::optional<Precision> parse_precision(std::string_view text);
/// The key's text of `p`.
const std::string& precision_name(Precision p);
/// `s.precision` as a Precision. Throws std::invalid_argument naming the value for text the loader would have refused.
Precision requested_precision(const Scenario& s);
/// Whether `p` computes in a 16-bit type (bf16, fp16, and fp8's bf16 autocast around its FP8 products).
bool half_width(Precision p);

}  // namespace gpubench
