#include "gpubench/core/record_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gpubench {

namespace fs = std::filesystem;

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

void write_record(const std::string& path, const RunRecord& record) {
  write_file_atomic(path, nlohmann::json(record).dump(2) + "\n");
}

RunRecord read_record(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read record '" + path + "': " + std::strerror(errno));
  try {
    return nlohmann::json::parse(in).get<RunRecord>();
  } catch (const std::exception& e) {
    throw std::runtime_error("'" + path + "' is not a readable gpubench record: " + e.what());
  }
}

void append_json_line(const std::string& path, const nlohmann::json& line) {
  const fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  std::ofstream out(path, std::ios::app);
  if (!out) throw std::runtime_error("cannot open '" + path + "' for appending: " + std::strerror(errno));
  out << line.dump() << '\n';
  out.flush();
  if (!out) throw std::runtime_error("cannot append to '" + path + "'");
}

std::string epochs_stream_path(const std::string& record_path) {
  fs::path p(record_path);
  if (p.extension() == ".json") p.replace_extension();
  return p.string() + ".epochs.jsonl";
}

}  // namespace gpubench
