// Where SQLite was not found at build time: no file store, and every use says how to get it.

#include <stdexcept>

#include "connection.h"
#include "gpubench/core/store/store.hpp"

namespace gpubench {

bool store_available() { return false; }

namespace store {

std::unique_ptr<Connection> open_sqlite(const std::string&, bool) {
  throw std::runtime_error("this gpubench was built without SQLite, so it has no results store (Debian: apt install "
                           "libsqlite3-dev, then rebuild)");
}

}  // namespace store
}  // namespace gpubench
