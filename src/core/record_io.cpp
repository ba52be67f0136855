#include "gpubench/core/record_io.hpp"

#include <ctime>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gpubench {

namespace fs = std::filesystem;

const char* const kInvalidUtf8Note =
    "some text (a name, path or the command line) was not valid UTF-8: its invalid bytes are written as U+FFFD";

namespace {
[[noreturn]] void io_error(const std::string& what, const std::string& path, int err) {
  throw std::runtime_error(what + " '" + path + "': " + std::strerror(err));
}

void write_all(int fd, const std::string& text, const std::string& path) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      io_error("cannot write", path, errno);
    }
    done += static_cast<size_t>(n);
  }
}
}  // namespace

void write_file_atomic(const std::string& path, const std::string& text) {
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create directory '" + dir.string() + "': " + ec.message());

  std::string tmpl = (dir / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) io_error("cannot create a temporary file next to", path, errno);
  try {
    write_all(fd, text, tmpl);
    if (::fsync(fd) != 0) io_error("cannot flush", tmpl, errno);
    ::fchmod(fd, 0644);
    if (::close(fd) != 0) {
      ::unlink(tmpl.c_str());
      io_error("cannot close", tmpl, errno);
    }
  } catch (...) {
    ::close(fd);
    ::unlink(tmpl.c_str());
    throw;
  }
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmpl.c_str());
    io_error("cannot move the record into place at", path, err);
  }
}

std::string json_text(const nlohmann::json& j, int indent, bool* replaced) {
  if (replaced != nullptr) *replaced = false;
  try {
    return j.dump(indent);
  } catch (const nlohmann::json::type_error&) {  // 316: a string that is not valid UTF-8
    if (replaced != nullptr) *replaced = true;
    return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
  }
}

void write_record(const std::string& path, const RunRecord& record) {
  nlohmann::json j = record;
  bool replaced = false;
  std::string text = json_text(j, 2, &replaced);
  if (replaced) {
    j["notes"].push_back(kInvalidUtf8Note);
    text = json_text(j, 2, nullptr);
  }
  write_file_atomic(path, text + "\n");
}

FileReadError::FileReadError(const std::string& path, std::string problem)
    : std::runtime_error("'" + path + "' " + problem), problem_(std::move(problem)) {}

std::string read_text_file(const std::string& path, size_t max_bytes, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw FileReadError(path, std::string("cannot read file: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw FileReadError(path, "is a directory, not a " + what);
  if (!S_ISREG(st.st_mode)) throw FileReadError(path, "is not a regular file (a FIFO, socket or device), not a " + what);
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    throw FileReadError(path, "is " + std::to_string(st.st_size) + " bytes; a " + what + " is at most " +
                                  std::to_string(max_bytes >> 20) + " MiB");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileReadError(path, std::string("cannot read file: ") + std::strerror(errno));
  // At most one byte past the limit is read, whatever the file does meanwhile.
  std::string text(std::min(max_bytes + 1, static_cast<size_t>(st.st_size) + 4096), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (in.bad()) throw FileReadError(path, std::string("cannot read file: ") + std::strerror(errno));
  if (text.size() > max_bytes) throw FileReadError(path, "grew past " + std::to_string(max_bytes) + " bytes");
  return text;
}

/// A number no record field can hold: beyond the int64 range a float cannot be converted to an integer field without
/// undefined behaviour, and no measured value comes near it. Returns the JSON pointer of the first one.
std::string first_oversized_number(const nlohmann::json& j, const std::string& at) {
  if (j.is_number_float()) {
    const double v = j.get<double>();
    return std::isfinite(v) && std::fabs(v) <= 9.2e18 ? "" : at.empty() ? "/" : at;
  }
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      std::string found = first_oversized_number(v, at + "/" + k);
      if (!found.empty()) return found;
    }
  }
  if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      std::string found = first_oversized_number(j[i], at + "/" + std::to_string(i));
      if (!found.empty()) return found;
    }
  }
  return "";
}

std::string utc_now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

RunRecord parse_record(const std::string& text, const std::string& source) {
  RunRecord r;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    const std::string oversized = first_oversized_number(j, "");
    if (!oversized.empty()) throw std::runtime_error("the number at " + oversized + " is beyond what a record holds");
    r = j.get<RunRecord>();
  } catch (const std::exception& e) {
    throw std::runtime_error("'" + source + "' is not a readable gpubench record: " + e.what());
  }
  const std::vector<std::string> problems = record_problems(r);
  if (!problems.empty()) {
    std::string all;
    for (size_t i = 0; i < problems.size() && i < 5; ++i) all += (i ? "; " : "") + problems[i];
    if (problems.size() > 5) all += "; and " + std::to_string(problems.size() - 5) + " more";
    throw std::runtime_error("'" + source + "' holds impossible values: " + all);
  }
  return r;
}

RunRecord read_record(const std::string& path) {
  return parse_record(read_text_file(path, kMaxRecordBytes, "gpubench record"), path);
}

void append_json_line(const std::string& path, const nlohmann::json& line) {
  const fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  const std::string text = json_text(line, -1, nullptr) + "\n";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) io_error("cannot open for appending", path, errno);
  const off_t before = ::lseek(fd, 0, SEEK_END);
  try {
    write_all(fd, text, path);
    if (::fsync(fd) != 0) io_error("cannot flush", path, errno);
  } catch (...) {
    // Never leave a cut line: a reader of the stream sees whole epochs or none (full disk, file-size limit).
    if (before >= 0 && ::ftruncate(fd, before) != 0) {
      // Nothing more can be done; the error below still names the file.
    }
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) io_error("cannot close", path, errno);
}

void check_output_location(const std::string& path) {
  const fs::path target(path);
  std::error_code ec;
  if (target.filename().empty() || target.filename() == "." || target.filename() == "..") {
    throw std::runtime_error("'" + path + "' names a folder; give a file name such as runs/x.json");
  }
  if (fs::is_directory(target, ec)) throw std::runtime_error("'" + path + "' is a directory; give a file name");
  if (fs::exists(target, ec) && !fs::is_regular_file(target, ec)) {
    throw std::runtime_error("'" + path + "' exists and is not a regular file");
  }
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create directory '" + dir.string() + "': " + ec.message());
  if (!fs::is_directory(dir, ec)) throw std::runtime_error("'" + dir.string() + "' is not a directory");
  // The record is renamed into place from a temporary file beside it: that file must be creatable there.
  std::string probe = (dir / ".gpubench-probe-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) io_error("cannot write in the output folder of", path, errno);
  ::close(fd);
  ::unlink(probe.c_str());
}

std::optional<RunRecord> recover_from_stream(const std::string& stream_path) {
  std::string text;
  try {
    text = read_text_file(stream_path, kMaxRecordBytes, "epochs stream");
  } catch (const std::exception&) {
    return std::nullopt;
  }
  RunRecord r;
  bool any = false;
  std::vector<double> all_step_ms;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      if (j.contains("header")) {
        r = j.at("header").get<RunRecord>();
        r.epochs.clear();
        any = true;
      } else {
        EpochRecord e = j.get<EpochRecord>();
        all_step_ms.insert(all_step_ms.end(), e.step_times_ms.begin(), e.step_times_ms.end());
        r.epochs.push_back(std::move(e));
        any = true;
      }
    } catch (const std::exception&) {
      // A line that is not whole JSON (a writer killed mid-line before this version cut such lines back): skipped.
    }
  }
  if (!any) return std::nullopt;
  summarize_run(r, all_step_ms);
  return r;
}

namespace {
/// A companion file of a record: the record's path without ".json", plus `suffix`.
std::string beside_record(const std::string& record_path, const char* suffix) {
  fs::path p(record_path);
  if (p.extension() == ".json") p.replace_extension();
  return p.string() + suffix;
}
}  // namespace

std::string epochs_stream_path(const std::string& record_path) { return beside_record(record_path, ".epochs.jsonl"); }

std::string profile_trace_path(const std::string& record_path) { return beside_record(record_path, ".trace.json"); }

}  // namespace gpubench
