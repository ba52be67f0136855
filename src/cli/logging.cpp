#include "cli/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

#include <memory>

#include "gpubench/core/io/redact.hpp"

namespace gpubench::cli {

namespace {

/// spdlog's pattern formatter, given each message with its secrets hidden.
class RedactingFormatter final : public spdlog::formatter {
 public:
  explicit RedactingFormatter(std::string pattern)
      : pattern_(std::move(pattern)), inner_(std::make_unique<spdlog::pattern_formatter>(pattern_)) {}
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const std::string clean = without_passwords(std::string(msg.payload.data(), msg.payload.size()));
    spdlog::details::log_msg copy = msg;
    copy.payload = spdlog::string_view_t(clean.data(), clean.size());
    inner_->format(copy, dest);
    // The colour sink reads the level's colour range from the message it holds (mutable fields the pattern sets).
    msg.color_range_start = copy.color_range_start;
    msg.color_range_end = copy.color_range_end;
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<RedactingFormatter>(pattern_); }

 private:
  std::string pattern_;
  std::unique_ptr<spdlog::pattern_formatter> inner_;
};

}  // namespace

void set_log_pattern(const std::string& pattern) {
  spdlog::set_formatter(std::make_unique<RedactingFormatter>(pattern));
}

}  // namespace gpubench::cli
