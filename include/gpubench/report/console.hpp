#pragma once
// Human-readable views of records for the terminal.

#include <string>

#include "gpubench/core/run_record.hpp"

namespace gpubench {

/// Multi-line summary of one run: what ran where, a row per epoch, totals, status and notes.
std::string format_run_summary(const RunRecord& record);

/// "1.23 GiB" style rendering of a byte count (binary units).
std::string format_bytes(int64_t bytes);

}  // namespace gpubench
