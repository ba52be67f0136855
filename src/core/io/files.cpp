#include "gpubench/core/io/files.hpp"

#include "gpubench/core/store/location.hpp"

#include <ctime>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#ifdef GPUBENCH_WITH_ZLIB
#include <zlib.h>
#endif

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

std::string json_text(const nlohmann::json& j, int indent, bool* replaced) {
  if (replaced != nullptr) *replaced = false;
  try {
    return j.dump(indent);
  } catch (const nlohmann::json::type_error&) {  // 316: a string that is not valid UTF-8
    if (replaced != nullptr) *replaced = true;
    return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
  }
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

std::string read_text_file_or_gzip(const std::string& path, size_t max_bytes, const std::string& what) {
  std::string raw = read_text_file(path, max_bytes, what);  // the compressed bytes are bounded too
  if (raw.size() < 2 || static_cast<unsigned char>(raw[0]) != 0x1f || static_cast<unsigned char>(raw[1]) != 0x8b) {
    return raw;
  }
#ifdef GPUBENCH_WITH_ZLIB
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) throw FileReadError(path, "cannot start gzip decompression");  // 16: gzip
  z.next_in = reinterpret_cast<Bytef*>(raw.data());
  z.avail_in = static_cast<uInt>(raw.size());
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      inflateEnd(&z);
      throw FileReadError(path, "is not a valid gzip file (" + std::string(z.msg != nullptr ? z.msg : "truncated") + ")");
    }
    out.append(buf, sizeof buf - z.avail_out);
    if (out.size() > max_bytes) {
      inflateEnd(&z);
      throw FileReadError(path, "decompresses to more than " + std::to_string(max_bytes >> 20) + " MiB; a " + what +
                                    " is at most that");
    }
    if (rc != Z_STREAM_END && z.avail_in == 0 && z.avail_out != 0) {
      inflateEnd(&z);
      throw FileReadError(path, "is a truncated gzip file");
    }
  }
  inflateEnd(&z);
  return out;
#else
  (void)max_bytes;
  throw FileReadError(path, "is gzip-compressed, and this gpubench was built without zlib (install zlib1g-dev and "
                            "rebuild, or gunzip it)");
#endif
}

std::string utc_now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
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

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  const bool ea = ::stat(a.c_str(), &sa) == 0, eb = ::stat(b.c_str(), &sb) == 0;
  if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (ea != eb) return false;
  std::error_code ec1, ec2;
  const fs::path ca = fs::weakly_canonical(fs::absolute(a, ec1), ec1);
  const fs::path cb = fs::weakly_canonical(fs::absolute(b, ec2), ec2);
  if (ec1 || ec2) return fs::absolute(a).lexically_normal() == fs::absolute(b).lexically_normal();
  return ca == cb;
}

bool is_store_url(const std::string& location) { return is_postgres_url(location); }

void FileRoles::input(const std::string& path, const std::string& flag, std::function<bool(const std::string&)> member) {
  if (!path.empty()) inputs_.push_back({path, flag, false, std::move(member)});
}

void FileRoles::store(const std::string& path, const std::string& flag) {
  if (!path.empty() && !is_store_url(path)) inputs_.push_back({path, flag, true, nullptr});
}

void FileRoles::output(const std::string& path, const std::string& flag) {
  if (path.empty()) throw std::runtime_error(flag + ": an empty file name; name the file to write");
  if (is_store_url(path)) return;  // a database, not a file: no file can clash with it
  outputs_.push_back({path, flag, false, nullptr});
}

void FileRoles::check() const {
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const Use& o = outputs_[i];
    std::error_code ec;
    if (fs::is_directory(o.path, ec)) continue;  // check_output_location names a folder given as a file
    const bool exists = fs::exists(o.path, ec);
    for (const Use& in : inputs_) {
      std::string what;
      if (same_file(o.path, in.path)) {
        what = in.is_store ? "the results store " + in.path : "the input " + in.path;
      } else if (in.is_store) {
        for (const char* suffix : {"-wal", "-shm", "-journal"}) {
          if (same_file(o.path, in.path + suffix)) what = "a journal of the results store " + in.path;
        }
      } else if (exists && fs::path(o.path).extension() == ".json" && fs::is_directory(in.path, ec)) {
        // A file in a folder of records is an input when the readers take it.
        const fs::path target = fs::canonical(o.path, ec);  // through a link too
        if (!ec && same_file(target.parent_path().string(), in.path) && (!in.member || in.member(target.string()))) {
          what = "a record read from " + in.path;
        }
      }
      if (what.empty()) continue;
      throw std::runtime_error(o.flag + " " + o.path + " is " + what + " (" + in.flag +
                               "): gpubench never writes over what it reads; name another output file");
    }
    for (size_t j = 0; j < i; ++j) {
      if (same_file(o.path, outputs_[j].path)) {
        throw std::runtime_error(o.flag + " " + o.path + " is also " + outputs_[j].flag + " " + outputs_[j].path +
                                 ": one file cannot hold two outputs");
      }
    }
  }
}

bool is_sqlite_file(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;  // a FIFO or a device is never opened (opening one can block)
  std::ifstream in(path, std::ios::binary);
  char header[16] = {};
  return static_cast<bool>(in.read(header, sizeof header)) &&
         std::string(header, sizeof header) == std::string("SQLite format 3\0", 16);
}

}  // namespace gpubench
