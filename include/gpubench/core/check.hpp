#pragma once
// Internal invariants: a broken one is a gpubench bug, reported with the file and line that found it (never an abort,
// never undefined behaviour). A run turns the exception into a failed record with that message.

#include <string>

namespace gpubench {

/// Throws std::logic_error: "internal error at FILE:LINE: CONDITION does not hold (MESSAGE); please report it".
[[noreturn]] void check_failed(const char* condition, const std::string& message, const char* file, int line);

}  // namespace gpubench

#define GPUBENCH_CHECK(condition, message)                                        \
  do {                                                                            \
    if (!(condition)) ::gpubench::check_failed(#condition, (message), __FILE__, __LINE__); \
  } while (false)
