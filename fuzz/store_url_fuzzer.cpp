// Store names and URLs on arbitrary input, as a command line, a message or a record meets them: the first byte picks
// where the fuzz bytes go, the rest (up to a NUL) is a password, anything after the NUL a user name.
//   0: postgresql://USER:PASSWORD@127.0.0.1:5432/db?sslmode=disable
//   1: postgresql://USER@127.0.0.1/db?pass%77ord=PASSWORD (a percent-encoded key)
//   2: POSTGRES://USER:PASSWORD@h (the scheme in capitals)
//   3: the bytes as a whole store name (a file or a URL)
// Whatever the bytes, parsing never crashes, and once the CLI has registered the argument's secrets
// (register_secrets_in_argument), neither the store's display name nor without_passwords of the URL alone, inside a
// message, or cut at a space shows the password (of 3 or more characters, not a part of the rest of the URL).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "gpubench/core/io/redact.hpp"
#include "gpubench/core/store/location.hpp"

namespace {

[[noreturn]] void fail(const char* why, const std::string& url) {
  std::fprintf(stderr, "store_url_fuzzer: %s: %zu bytes\n", why, url.size());
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t nul = rest.find('\0');
  const std::string password = rest.substr(0, nul);
  const std::string user = nul == std::string::npos ? "u" : rest.substr(nul + 1);
  std::string url, skeleton;
  switch (data[0] % 4) {
    case 0:
      url = "postgresql://" + user + ":" + password + "@127.0.0.1:5432/db?sslmode=disable";
      skeleton = "postgresql://" + user + "@127.0.0.1:5432/db?sslmode=disable";
      break;
    case 1:
      url = "postgresql://" + user + "@127.0.0.1/db?pass%77ord=" + password;
      skeleton = "postgresql://" + user + "@127.0.0.1/db?pass%77ord=";
      break;
    case 2:
      url = "POSTGRES://" + user + ":" + password + "@h";
      skeleton = "postgres://" + user + "@h";
      break;
    default:
      url = rest;
      break;
  }
  gpubench::forget_secrets();
  gpubench::register_secrets_in_argument(url);
  std::string display;
  try {
    display = gpubench::StoreLocation::parse(url).display();
  } catch (const gpubench::StoreLocationError& e) {
    display = e.what();
  }
  if (data[0] % 4 == 3) return 0;  // no known password: parsing alone must hold
  // A password that is part of what the URL shows anyway (a host, the user name) cannot be told apart.
  if (password.size() < 3 || password.find('\0') != std::string::npos || skeleton.find(password) != std::string::npos) {
    return 0;
  }
  if (display.find(password) != std::string::npos) fail("the display name shows the password", url);
  for (const std::string& text : {url, "could not connect to " + url + " (timeout)", "'" + url + "'"}) {
    if (gpubench::without_passwords(text).find(password) != std::string::npos) fail("a message shows the password", url);
  }
  return 0;
}
