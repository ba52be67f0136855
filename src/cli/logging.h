#pragma once
// The console log's one pattern setter: every message goes through without_passwords before it is printed, so no
// log line (ours, a library's text we pass on, an argument a parser repeats) shows a password.

#include <string>

namespace gpubench::cli {

/// Sets the default logger's pattern (spdlog's syntax) with the redacting formatter around it.
void set_log_pattern(const std::string& pattern);

}  // namespace gpubench::cli
