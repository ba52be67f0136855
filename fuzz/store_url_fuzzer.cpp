// Store names and URLs on arbitrary input, as a command line, a message or a record meets them: the first byte picks
// where the fuzz bytes go, the rest (up to a NUL) is a password, anything after the NUL a user name.
//   0: postgresql://USER:PASSWORD@127.0.0.1:5432/db?sslmode=disable
//   1: postgresql://USER@127.0.0.1/db?pass%77ord=PASSWORD (a percent-encoded key)
//   2: POSTGRES://USER:PASSWORD@h (the scheme in capitals)
//   3: the bytes as a whole store name (a file or a URL)
// Whatever the bytes, parsing never crashes, and once the CLI has registered the argument's secrets
// (register_secrets_in_argument), neither the store's display name nor without_passwords of the URL alone, inside a
// message, or cut at a space shows the password (of 3 or more characters, not a part of the rest of the URL).

#include <cctype>
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
  // The URL with `pw` as its password.
  const auto url_with = [&](const std::string& pw) -> std::string {
    switch (data[0] % 4) {
      case 0: return "postgresql://" + user + ":" + pw + "@127.0.0.1:5432/db?sslmode=disable";
      case 1: return "postgresql://" + user + "@127.0.0.1/db?pass%77ord=" + pw;
      case 2: return "POSTGRES://" + user + ":" + pw + "@h";
      default: return rest;
    }
  };
  const std::string url = url_with(password);
  // What may show: the URL without its password, as typed and as displayed (the scheme in lower case, user@host).
  std::string skeleton = url_with("");
  for (size_t i = 0; i < 11 && i < skeleton.size(); ++i) {
    skeleton[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(skeleton[i])));
  }
  const size_t colon = skeleton.find(':', 13);
  if (data[0] % 4 != 1 && colon != std::string::npos) skeleton += " " + skeleton.substr(0, colon) + skeleton.substr(colon + 1);
  gpubench::forget_secrets();
  gpubench::register_secrets_in_argument(url);
  std::string display;
  try {
    display = gpubench::StoreLocation::parse(url).display();
  } catch (const gpubench::StoreLocationError& e) {
    // The message is gpubench's own fixed wording (a fuzzed password can be any part of it) around the one part
    // that names the store: "results store URL <scheme>://***: <problem>".
    const std::string m = e.what();
    const size_t from = m.find("URL "), to = m.find("***: ");
    display = from == std::string::npos || to == std::string::npos ? std::string() : m.substr(from + 4, to + 3 - from - 4);
  }
  if (data[0] % 4 == 3) return 0;  // no known password: parsing alone must hold
  // A password that is part of what the URL shows anyway (a host, the user name) cannot be told apart.
  // A password holding '*' cannot be told from the mark that hides secrets ("***") beside the text around it.
  if (password.size() < 3 || password.find('\0') != std::string::npos || password.find('*') != std::string::npos) {
    return 0;
  }
  // In a query, '&' ends the value: what follows is another parameter, not the password.
  if (data[0] % 4 == 1 && password.find('&') != std::string::npos) return 0;
  // A user name holding ':' or '@' moves where the URL's password starts or ends: the bytes' password is then not the
  // URL's (found by this fuzzer: user "...port=" and password "port=@" look alike in the display "...port=@host").
  if (data[0] % 4 != 1 && user.find_first_of(":@") != std::string::npos) return 0;
  // Each text as a message would hold it; where the same text without the password already holds it (it is a part
  // of the user name, the host or the wording), it cannot be told apart.
  const auto message = [](int kind, const std::string& u) {
    return kind == 0 ? u : kind == 1 ? "could not connect to " + u + " (timeout)" : "'" + u + "'";
  };
  if (skeleton.find(password) == std::string::npos && display.find(password) != std::string::npos) {
    fail("the display name shows the password", url);
  }
  for (int kind = 0; kind < 3; ++kind) {
    if (message(kind, skeleton).find(password) != std::string::npos) continue;
    if (gpubench::without_passwords(message(kind, url)).find(password) != std::string::npos) {
      fail("a message shows the password", url);
    }
  }
  return 0;
}
