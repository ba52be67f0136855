// Where libpq was not found at build time: postgresql:// stores are refused with what to install.

#include <stdexcept>

#include "connection.h"
#include "gpubench/core/io/files.hpp"
#include "gpubench/core/store/store.hpp"

namespace gpubench {

bool postgres_store_available() { return false; }

namespace store {

std::unique_ptr<Connection> open_postgres(const StoreLocation& location, bool) {
  throw std::runtime_error("results store " + location.display() + ": this gpubench was built without libpq, so "
                           "it cannot open PostgreSQL stores (Debian: apt install libpq-dev, then rebuild)");
}

}  // namespace store
}  // namespace gpubench
