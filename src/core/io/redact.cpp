// Secrets never leave the process (redact.hpp).

#include "gpubench/core/io/redact.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <mutex>
#include <vector>

#include "gpubench/core/store/location.hpp"

namespace gpubench {

namespace {

constexpr size_t kShortestScrubbed = 3;
constexpr const char* kHidden = "***";

std::mutex& secrets_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::string>& secrets() {  // longest first, so a secret holding another is replaced whole
  static std::vector<std::string> s;
  return s;
}

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

/// Where the next PostgreSQL scheme starts in `text` at or after `from` (any case), or npos.
size_t find_scheme(const std::string& text, size_t from) {
  for (size_t i = from; i + 11 <= text.size(); ++i) {
    if (lower(text[i]) != 'p') continue;
    if (is_postgres_url(text.substr(i, 13))) return i;
  }
  return std::string::npos;
}

std::string replace_secrets(std::string text) {
  std::lock_guard<std::mutex> lock(secrets_mutex());
  // Until none is left: a replacement can make a secret anew from its neighbours (a password holding "***"). Each
  // replacement removes a character that is not '*' or shortens the text, so this ends ("***" itself is the mark).
  for (bool changed = true; changed;) {
    changed = false;
    for (const std::string& s : secrets()) {
      if (s.size() < kShortestScrubbed || s == kHidden) continue;
      for (size_t at = text.find(s); at != std::string::npos; at = text.find(s, at)) {
        text.replace(at, s.size(), kHidden);
        changed = true;
      }
    }
  }
  return text;
}

/// Every URL in `text` (a URL ends at white space or a quote) without its passwords.
std::string redact_urls(const std::string& text) {
  std::string out;
  size_t i = 0;
  for (size_t start = find_scheme(text, 0); start != std::string::npos; start = find_scheme(text, i)) {
    const size_t end = std::min(text.find_first_of(" \t\r\n\"'`<>", start), text.size());
    const store_url::Parsed p = store_url::parse(text.substr(start, end - start));
    out += text.substr(i, start - i);
    if (p.ok) {
      out += p.display;
    } else {
      std::string scheme = text.substr(start, text.find("://", start) + 3 - start);
      for (char& c : scheme) c = lower(c);
      out += scheme + kHidden;
    }
    i = end;
  }
  return out + text.substr(std::min(i, text.size()));
}

/// `KEY=VALUE` where KEY (percent-decoded, any case) holds "pass": libpq's key=value strings (`password=`,
/// `sslpassword=`) and what is left of a URL's query where free text cut the URL short (`pass%77ord=`), VALUE hidden.
std::string redact_keywords(const std::string& text) {
  std::string out = text;
  for (size_t eq = out.find('='); eq != std::string::npos; eq = out.find('=', eq + 1)) {
    size_t k = eq;
    while (k > 0 && std::isspace(static_cast<unsigned char>(out[k - 1])) == 0 && std::strchr("&?;,\"'`(", out[k - 1]) == nullptr) {
      --k;
    }
    std::string key;
    if (!store_url::percent_decode(out.substr(k, eq - k), key)) key = out.substr(k, eq - k);  // as typed, then
    for (char& c : key) c = lower(c);
    if (key.find("pass") == std::string::npos) continue;
    const size_t v = eq + 1;
    size_t end = v;
    if (v < out.size() && (out[v] == '\'' || out[v] == '"')) {
      const size_t close = out.find(out[v], v + 1);
      end = close == std::string::npos ? out.size() : close + 1;
    } else {
      while (end < out.size() && std::isspace(static_cast<unsigned char>(out[end])) == 0 && out[end] != '&') ++end;
    }
    out.replace(v, end - v, kHidden);
  }
  return out;
}

}  // namespace

void register_secret(const std::string& secret) {
  if (secret.empty()) return;
  std::lock_guard<std::mutex> lock(secrets_mutex());
  auto& s = secrets();
  if (std::find(s.begin(), s.end(), secret) != s.end()) return;
  s.push_back(secret);
  std::stable_sort(s.begin(), s.end(), [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
}

void forget_secrets() {
  std::lock_guard<std::mutex> lock(secrets_mutex());
  secrets().clear();
}

void register_secrets_in_argument(const std::string& argument) {
  const size_t start = find_scheme(argument, 0);
  if (start == std::string::npos) return;
  for (const auto& s : store_url::parse(argument.substr(start)).secrets) register_secret(s);
}

std::string without_passwords(const std::string& text) {
  // Known secrets first: a password with a space in it is whole only before the URL is cut at the space.
  return redact_keywords(redact_urls(replace_secrets(text)));
}

}  // namespace gpubench
