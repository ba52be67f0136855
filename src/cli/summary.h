#pragma once
// A sweep's or scaling run's summary: printed as the user asked (--format, --save) and kept beside its records as
// <dir>/<stem>.md and <dir>/<stem>.json.

#include <string>

#include "cli/app.h"

namespace gpubench::cli {

/// Prints `d` through `ctx`, then writes <dir>/<stem>.md and .json. Throws OutputNotWritten when a file could not be
/// written.
void print_summary(const Context& ctx, const Document& d, const std::string& dir, const std::string& stem);

}  // namespace gpubench::cli
