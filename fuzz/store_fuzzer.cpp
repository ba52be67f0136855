// The results store on arbitrary input, as `db add` and `history` meet it: the first byte picks the mode.
//   even: the rest is a record file; an accepted record is added to a store (twice: stored once), read back equal,
//         and found as its own baseline's candidate without error.
//   odd:  the rest is history filter values (model, KEY=VALUE, metric, since, separated by NUL bytes), run against a
//         store holding one real record: a filter is data, never SQL, so the store is unchanged and intact after it.
// The only acceptable failures are std::runtime_error / std::invalid_argument.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpubench/core/record/record_io.hpp"
#include "gpubench/core/store/store.hpp"

namespace {

std::string store_path() {
  static const std::string path = [] {
    char tmpl[] = "/tmp/gpubench-store-fuzz-XXXXXX";
    const int fd = ::mkstemp(tmpl);
    if (fd >= 0) ::close(fd);
    std::remove(tmpl);  // the store makes its own file
    return std::string(tmpl);
  }();
  return path;
}

void remove_store() {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((store_path() + suffix).c_str());
}

[[noreturn]] void fail(const char* why) {
  std::fprintf(stderr, "store_fuzzer: %s\n", why);
  __builtin_trap();
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == '\0') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) == 0) {
    gpubench::RunRecord r;
    try {
      r = gpubench::parse_record(text, "fuzz.json");
    } catch (const std::runtime_error&) {
      return 0;
    }
    remove_store();
    try {
      gpubench::ResultsStore db(store_path());
      const bool first = db.add(r, "fuzz.json");
      const bool second = db.add(r, "fuzz.json");
      if (!first || second || db.count() != 1) fail("a record is stored once");
      if (db.integrity() != "ok") fail("the store is intact after an add");
      const auto rows = db.history(gpubench::HistoryQuery{});
      if (rows.size() != 1) fail("history lists the stored run");
      if (!(db.record(rows.front().id) == r)) fail("what was stored reads back the same");
      (void)db.baseline_for(r, 5);
    } catch (const std::runtime_error&) {
    } catch (const std::invalid_argument&) {
    }
    remove_store();
    return 0;
  }
  static bool seeded = false;
  if (!seeded) {
    remove_store();
    gpubench::RunRecord r;
    r.scenario.model = "resnet50";
    r.scenario.batch_size = 8;
    r.status = gpubench::RunStatus::kOk;
    r.environment.start_time_utc = "2026-11-01T00:00:00Z";
    gpubench::ResultsStore(store_path()).add(r, "seed");
    seeded = true;
  }
  const std::vector<std::string> parts = split(text);
  gpubench::HistoryQuery q;
  q.model = parts[0];
  for (size_t i = 1; i + 1 < parts.size() && i < 9; i += 2) q.scenario[parts[i]] = parts[i + 1];
  if (parts.size() > 9) q.metric = parts[9];
  if (parts.size() > 10) q.since = parts[10];
  try {
    const gpubench::ResultsStore db(store_path(), gpubench::ResultsStore::Access::kRead);
    (void)db.history(q);
    if (db.count() != 1) fail("a filter never changes the store");
    if (db.integrity() != "ok") fail("the store is intact after a query");
  } catch (const std::runtime_error&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
