// The results store where SQLite was not found at build time: every use says how to get it.

#include <stdexcept>

#include "gpubench/core/store/store.hpp"

namespace gpubench {

namespace {
[[noreturn]] void unavailable() {
  throw std::runtime_error("this gpubench was built without SQLite, so it has no results store (Debian: apt install "
                           "libsqlite3-dev, then rebuild)");
}
}  // namespace

bool store_available() { return false; }
std::string record_fingerprint(const RunRecord&) { unavailable(); }
ResultsStore::ResultsStore(const std::string& path, Access) : path_(path) { unavailable(); }
std::vector<std::string> ResultsStore::metric_tags() const { unavailable(); }
void ResultsStore::migrate(int) { unavailable(); }
ResultsStore::~ResultsStore() = default;
bool ResultsStore::add(const RunRecord&, const std::string&) { unavailable(); }
std::vector<HistoryRow> ResultsStore::history(const HistoryQuery&) const { unavailable(); }
RunRecord ResultsStore::record(int64_t) const { unavailable(); }
std::vector<LoadedRecord> ResultsStore::records() const { unavailable(); }
int64_t ResultsStore::remove(const std::vector<int64_t>&) { unavailable(); }
std::vector<LoadedRecord> ResultsStore::baseline_for(const RunRecord&, int, const std::vector<const RunRecord*>&) const {
  unavailable();
}
int64_t ResultsStore::count() const { unavailable(); }
std::string ResultsStore::integrity() const { unavailable(); }
void ResultsStore::exec(const std::string&) const { unavailable(); }

}  // namespace gpubench
