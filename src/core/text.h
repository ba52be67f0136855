#pragma once
// Small text helpers the core's units share (internal to gpubench_core).

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <string>

namespace gpubench::text {

/// `v` printed with the printf format `f` (one double conversion), e.g. num("%.1f", 2.25) == "2.2".
inline std::string num(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

/// `s` in lower case (ASCII).
inline std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

/// The first line of a small file (under /proc or /sys), at most 4,096 characters, without a trailing CR or spaces;
/// "" when it cannot be read.
inline std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  if (line.size() > 4096) line.resize(4096);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

}  // namespace gpubench::text
