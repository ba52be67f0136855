#include "cli/summary.h"

#include <spdlog/spdlog.h>

#include <ctime>

#include "cli/commands/commands.h"

#include "gpubench/report/document.hpp"

namespace gpubench::cli {

std::string local_timestamp() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

void print_summary(const Context& ctx, const Document& d, const std::string& dir, const std::string& stem) {
  ctx.print(d);
  PrinterMultiplex files;
  files.add("md", dir + "/" + stem + ".md");
  files.add("json", dir + "/" + stem + ".json");
  try {
    files.print(d);
  } catch (const std::exception& e) {
    throw OutputNotWritten(e.what());
  }
  spdlog::info("summary: {}/{}.md", dir, stem);
}

}  // namespace gpubench::cli
