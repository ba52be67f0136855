#pragma once
// Secrets never leave the process: what a console, a log, a record or a child's command line may show of a text that
// can hold a PostgreSQL password. Two layers: every postgresql:// URL is shown without its passwords (parsed as
// store/location.hpp parses it, so a password with a space, a '%', an '@' or a percent-encoded `pass%77ord=` key is
// found where libpq would find it), and every secret the process has met (a store URL's password, PGPASSWORD) is
// replaced wherever it still shows up (a library's message that echoes part of a URL, an argument CLI11 repeats).

#include <string>

namespace gpubench {

/// `text` with every postgresql:// or postgres:// URL (scheme in any case) shown without its passwords (user:pw@ ->
/// user@; password=, sslpassword= and any other *pass* query parameter dropped; a URL that cannot be parsed shown as
/// its scheme and `***`), `password=VALUE` / `sslpassword=VALUE` outside URLs as `password=***`, and every
/// registered secret as `***`. Idempotent.
std::string without_passwords(const std::string& text);

/// Remembers `secret` (a password, in every spelling it was met in) for without_passwords. Secrets shorter than 3
/// characters are not scrubbed from free text (they would mangle it); URLs still never show them. Thread-safe.
void register_secret(const std::string& secret);

/// Forgets every registered secret (tests and fuzzers start each case afresh).
void forget_secrets();

/// Registers the secrets of every PostgreSQL URL in `argument` (one command-line argument: the URL runs to its end,
/// spaces included), and the whole URL when it cannot be parsed. The CLI calls it on every argument first.
void register_secrets_in_argument(const std::string& argument);

}  // namespace gpubench
