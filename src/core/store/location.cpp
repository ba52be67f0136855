// A results store's name, parsed once (location.hpp): a SQLite file, or a PostgreSQL URL taken apart as libpq would,
// with its passwords held apart and registered as secrets.

#include "gpubench/core/store/location.hpp"

#include <algorithm>
#include <cctype>

#include "gpubench/core/io/redact.hpp"

namespace gpubench {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

/// The length of `text`'s PostgreSQL scheme with its "://", or 0.
size_t scheme_length(const std::string& text) {
  for (const char* scheme : {"postgresql://", "postgres://"}) {
    const std::string s(scheme);
    if (text.size() >= s.size() && lower(text.substr(0, s.size())) == s) return s.size();
  }
  return 0;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool names_a_secret(const std::string& key) { return lower(key).find("pass") != std::string::npos; }

bool all_digits(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

constexpr const char* kEncodeHint =
    "; a user name, password or value holding '@', '/', '?', '&', '%' or ':' must percent-encode it (%40 %2F %3F %26 "
    "%25 %3A)";

}  // namespace

bool is_postgres_url(const std::string& text) { return scheme_length(text) > 0; }

namespace store_url {

bool percent_decode(const std::string& in, std::string& out) {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const int hi = hex_value(in[i + 1]), lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) return false;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return true;
}

Parsed parse(const std::string& url) {
  Parsed p;
  const size_t scheme_len = scheme_length(url);
  const std::string rest = url.substr(scheme_len);
  const auto fail = [&p, &rest](const std::string& why) {
    p = Parsed{};
    p.problem = why;
    p.secrets = {rest};  // nothing of an unparseable URL is shown: all of it may be a password
    return p;
  };
  if (scheme_len == 0) return fail("not a postgresql:// URL");
  const size_t auth_end = std::min(rest.find_first_of("/?"), rest.size());
  const size_t at = auth_end == 0 ? std::string::npos : rest.rfind('@', auth_end - 1);
  if (rest.find('@', auth_end) != std::string::npos) {
    return fail("the URL has an '@' after its host (a password or value holding '/', '?' or '@' unencoded?)" +
                std::string(kEncodeHint));
  }
  std::string user, password;
  std::string user_typed;
  if (at != std::string::npos) {
    const std::string userinfo = rest.substr(0, at);
    const size_t colon = userinfo.find(':');
    user_typed = userinfo.substr(0, colon);
    if (!percent_decode(user_typed, user)) return fail("the user name is not valid percent-encoding" + std::string(kEncodeHint));
    if (colon != std::string::npos) {
      const std::string typed = userinfo.substr(colon + 1);
      if (!percent_decode(typed, password)) {
        return fail("the password is not valid percent-encoding (write '%' as %25)" + std::string(kEncodeHint));
      }
      p.secrets.push_back(typed);
      p.secrets.push_back(password);
    }
  }
  const size_t host_begin = at == std::string::npos ? 0 : at + 1;
  const std::string hostpart = rest.substr(host_begin, auth_end - host_begin);
  std::vector<std::string> hosts, ports;
  bool any_port = false;
  for (size_t i = 0; i <= hostpart.size();) {
    std::string host_typed, port_typed;
    size_t j = i;
    if (j < hostpart.size() && hostpart[j] == '[') {
      const size_t close = hostpart.find(']', j);
      if (close == std::string::npos) return fail("an IPv6 host's '[' is never closed");
      host_typed = hostpart.substr(j + 1, close - j - 1);
      j = close + 1;
      if (j < hostpart.size() && hostpart[j] != ':' && hostpart[j] != ',') return fail("text after an IPv6 host's ']'");
    } else {
      const size_t stop = std::min(hostpart.find_first_of(":,", j), hostpart.size());
      host_typed = hostpart.substr(j, stop - j);
      j = stop;
    }
    if (j < hostpart.size() && hostpart[j] == ':') {
      const size_t stop = std::min(hostpart.find(',', j), hostpart.size());
      port_typed = hostpart.substr(j + 1, stop - j - 1);
      j = stop;
    }
    std::string host, port;
    if (!percent_decode(host_typed, host)) return fail("a host name is not valid percent-encoding");
    if (!percent_decode(port_typed, port) || !all_digits(port) || port.size() > 5) {
      return fail("a port is not a number" + std::string(kEncodeHint));
    }
    hosts.push_back(host);
    ports.push_back(port);
    any_port = any_port || !port.empty();
    if (j >= hostpart.size()) break;
    i = j + 1;  // past the ','
  }
  const size_t query_begin = std::min(rest.find('?', auth_end), rest.size());
  std::string dbname;
  const std::string path_typed = rest.substr(auth_end, query_begin - auth_end);  // "" or "/db"
  if (path_typed.size() > 1 && !percent_decode(path_typed.substr(1), dbname)) {
    return fail("the database name is not valid percent-encoding");
  }
  std::vector<std::pair<std::string, std::string>> query;
  std::string kept;
  if (query_begin < rest.size()) {
    const std::string q = rest.substr(query_begin + 1);
    for (size_t i = 0; i <= q.size();) {
      const size_t amp = std::min(q.find('&', i), q.size());
      const std::string param = q.substr(i, amp - i);
      i = amp + 1;
      if (param.empty()) {
        if (amp >= q.size()) break;
        continue;
      }
      const size_t eq = param.find('=');
      if (eq == std::string::npos || eq == 0) return fail("a query parameter is not key=value" + std::string(kEncodeHint));
      std::string key, value;
      if (!percent_decode(param.substr(0, eq), key) || !percent_decode(param.substr(eq + 1), value)) {
        return fail("a query parameter is not valid percent-encoding");
      }
      if (names_a_secret(key)) {
        p.secrets.push_back(param.substr(eq + 1));
        p.secrets.push_back(value);
      } else {
        kept += (kept.empty() ? "" : "&") + param;
      }
      query.emplace_back(key, value);
      if (amp >= q.size()) break;
    }
  }
  if (!user.empty()) p.params.emplace_back("user", user);
  if (!password.empty()) p.params.emplace_back("password", password);
  const bool any_host = std::any_of(hosts.begin(), hosts.end(), [](const std::string& h) { return !h.empty(); });
  if (any_host || hosts.size() > 1) {
    std::string joined;
    for (size_t i = 0; i < hosts.size(); ++i) joined += (i ? "," : "") + hosts[i];
    p.params.emplace_back("host", joined);
  }
  if (any_port) {
    std::string joined;
    for (size_t i = 0; i < ports.size(); ++i) joined += (i ? "," : "") + ports[i];
    p.params.emplace_back("port", joined);
  }
  if (!dbname.empty()) p.params.emplace_back("dbname", dbname);
  p.params.insert(p.params.end(), query.begin(), query.end());
  p.display = lower(url.substr(0, scheme_len)) + (user_typed.empty() ? "" : user_typed + "@") + hostpart + path_typed +
              (kept.empty() ? "" : "?" + kept);
  p.ok = true;
  return p;
}

}  // namespace store_url

StoreLocation StoreLocation::parse(const std::string& text) {
  StoreLocation loc;
  loc.typed_ = text;
  if (text.empty()) throw StoreLocationError("an empty results store name; name a SQLite file or a postgresql:// URL");
  if (is_postgres_url(text)) {
    store_url::Parsed p = store_url::parse(text);
    for (const auto& s : p.secrets) register_secret(s);
    if (!p.ok) {
      throw StoreLocationError("results store URL " + lower(text.substr(0, scheme_length(text))) +
                               "***: " + p.problem);
    }
    loc.kind_ = Kind::kPostgres;
    loc.display_ = p.display;
    loc.params_ = std::move(p.params);
    return loc;
  }
  // libpq's key=value strings are not accepted (one spelling: URLs); taken as a file name, such a string would
  // create a file named after its password.
  const std::string low = lower(text);
  for (const char* key : {"host=", "hostaddr=", "dbname=", "user=", "password=", "port=", "sslmode=", "service="}) {
    const size_t pos = low.find(key);
    if (pos != std::string::npos && (pos == 0 || std::isspace(static_cast<unsigned char>(low[pos - 1])) != 0)) {
      throw StoreLocationError("results store '" + without_passwords(text) +
                               "' looks like a libpq key=value connection string; give a postgresql:// URL instead "
                               "(or a SQLite file name without '" + key + "')");
    }
  }
  loc.kind_ = Kind::kSqliteFile;
  loc.display_ = text;
  return loc;
}

}  // namespace gpubench
