// The printers: one Document, seven formats (document.hpp).

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

#include "gpubench/core/record/metric_catalog.hpp"
#include "gpubench/core/record/record_io.hpp"
#include "gpubench/report/document.hpp"

namespace gpubench {

size_t Table::add_column(Column c) {
  columns.push_back(std::move(c));
  for (auto& r : rows) r.resize(columns.size());
  return columns.size() - 1;
}

size_t Table::column_for(const Column& c) {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].key == c.key) return i;
  }
  return add_column(c);
}

size_t Table::put(std::vector<Cell>& row, const Column& c, Cell value) {
  const size_t i = column_for(c);
  if (row.size() < columns.size()) row.resize(columns.size());
  row[i] = std::move(value);
  return i;
}

std::vector<Cell>& Table::add_row() {
  rows.emplace_back(columns.size());
  return rows.back();
}

Block& Document::add(Block::Kind kind, std::string text) {
  Block b;
  b.kind = kind;
  b.text = std::move(text);
  blocks.push_back(std::move(b));
  return blocks.back();
}
Document& Document::heading(std::string text, int level) {
  add(Block::Kind::kHeading, std::move(text)).level = level;
  return *this;
}
Document& Document::paragraph(std::string text) {
  add(Block::Kind::kParagraph, std::move(text));
  return *this;
}
Document& Document::list(std::vector<std::string> items) {
  add(Block::Kind::kList, "").items = std::move(items);
  return *this;
}
Document& Document::quote(std::string text) {
  add(Block::Kind::kQuote, std::move(text));
  return *this;
}
Document& Document::image(std::string file, std::string title, std::vector<std::string> labels) {
  Block& b = add(Block::Kind::kImage, std::move(title));
  b.file = std::move(file);
  b.items = std::move(labels);
  return *this;
}
Table& Document::table(Table t) {
  Block& b = add(Block::Kind::kTable, "");
  b.table = std::move(t);
  return b.table;
}
std::vector<const Table*> Document::tables() const {
  std::vector<const Table*> out;
  for (const auto& b : blocks) {
    if (b.kind == Block::Kind::kTable) out.push_back(&b.table);
  }
  return out;
}

std::string format_bytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", v, units[u]);
}

std::string format_rate(double per_s) {
  return std::abs(per_s) >= 10 || per_s == 0 ? fmt::format("{:.1f}", per_s) : fmt::format("{:.3g}", per_s);
}

Column metric_column(const Metric& m) { return Column{m.tag, m.name, m.unit, m.better}; }

std::string format_value(double v, const std::string& unit) {
  if (!std::isfinite(v)) return "-";
  if (unit == "bytes") return format_bytes(static_cast<int64_t>(std::llround(v)));
  if (unit == "fraction") return fmt::format("{:.1f}%", v * 100.0);
  if (unit == "%") return fmt::format("{:.2f}%", v);
  if (unit == "ms" || unit == "s") return fmt::format("{:.2f}", v);
  if (unit == "count") return fmt::format("{:.0f}", v);
  if (unit == "W" || unit == "C" || unit == "MHz") return fmt::format("{:.0f}", v);
  if (unit == "TFLOP/s") return fmt::format("{:.3g}", v);
  if (is_rate_unit(unit)) return fmt::format("{:.1f}", v);
  if (unit == "ratio") return fmt::format("{:.3f}", v);
  return fmt::format("{:.4g}", v);
}

std::string header_with_unit(const Column& c) {
  if (c.unit.empty() || c.unit == "bytes" || c.unit == "fraction" || c.unit == "count" || c.unit == "%" ||
      c.unit == "ratio") {
    return c.header;
  }
  return c.header + " (" + c.unit + ")";
}

std::string markup_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string inert_text(const std::string& s, bool keep_newlines) {
  static const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  std::string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      if (c == '\n') {
        out += keep_newlines ? '\n' : ' ';
      } else if (c == '\t' || c == '\r') {
        out += ' ';
      } else if (c < 0x20 || c == 0x7F) {
        out += kReplacement;
      } else {
        out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A UTF-8 sequence: its length from the lead byte, its code point checked for overlong forms and surrogates.
    const size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    bool ok = len > 0 && i + len <= n;
    uint32_t cp = len == 2 ? c & 0x1Fu : len == 3 ? c & 0x0Fu : c & 0x07u;
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (p[i + k] & 0xC0) == 0x80;
      cp = (cp << 6) | (p[i + k] & 0x3Fu);
    }
    if (ok) {
      ok = !(len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) && !(len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) &&
           !(cp >= 0x80 && cp <= 0x9F) && cp != 0xFFFE && cp != 0xFFFF;
    }
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += kReplacement;
      ++i;
    }
  }
  return out;
}

std::string base64_encode(const std::string& bytes) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    out += {t[(v >> 18) & 63], t[(v >> 12) & 63], t[(v >> 6) & 63], t[v & 63]};
  }
  if (i + 1 == bytes.size()) {
    const unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    out += {t[(v >> 18) & 63], t[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == bytes.size()) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) | (static_cast<unsigned char>(bytes[i + 1]) << 8);
    out += {t[(v >> 18) & 63], t[(v >> 12) & 63], t[(v >> 6) & 63], '='};
  }
  return out;
}

namespace {

/// A cell for people: one line, nothing a terminal or a browser acts on.
std::string human(const Cell& c, const Column& col) {
  if (c.number) return format_value(*c.number, col.unit);
  return c.text.empty() ? "-" : inert_text(c.text, false);
}

/// Text for Markdown: inert, with `<` as an entity, so no record field becomes an HTML tag in a renderer (a lone `>`
/// or `&` cannot start one, and gpubench's own "580 -> 590" stays readable in the raw file).
std::string md_text(const std::string& s, bool keep_newlines) {
  std::string out;
  for (char c : inert_text(s, keep_newlines)) {
    if (c == '<') {
      out += "&lt;";
    } else {
      out += c;
    }
  }
  return out;
}

/// Text for HTML and XML: inert, then escaped.
std::string xml_text(const std::string& s) { return markup_escape(inert_text(s, true)); }

/// A number for programs: the shortest text that reads back to the same double.
std::string raw_number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : ""; }

nlohmann::json cell_json(const Cell& c, const Column& col) {
  if (c.number) {
    if (!std::isfinite(*c.number)) return nullptr;
    // Counts and byte sizes are integers for programs too (256, not 256.0).
    const bool whole = (col.unit == "count" || col.unit == "bytes") && std::fabs(*c.number) < 9.0e15 &&
                       std::floor(*c.number) == *c.number;
    return whole ? nlohmann::json(static_cast<int64_t>(*c.number)) : nlohmann::json(*c.number);
  }
  if (c.text.empty()) return nullptr;
  if (c.boolean) return c.text == "true";
  return c.text;
}

nlohmann::json row_json(const Table& t, const std::vector<Cell>& row) {
  nlohmann::json o = nlohmann::json::object();
  for (size_t i = 0; i < t.columns.size(); ++i) {
    o[t.columns[i].key] = i < row.size() ? cell_json(row[i], t.columns[i]) : nullptr;
  }
  return o;
}

class ConsolePrinter : public Printer {
 public:
  std::string render(const Document& d) const override {
    std::string out;
    for (const auto& b : d.blocks) {
      switch (b.kind) {
        case Block::Kind::kHeading: out += inert_text(b.text, false) + "\n"; break;
        case Block::Kind::kParagraph: out += inert_text(b.text, true) + "\n"; break;
        case Block::Kind::kQuote: out += "  \"" + inert_text(b.text, true) + "\"\n"; break;
        case Block::Kind::kList:
          for (const auto& i : b.items) out += "  " + inert_text(i, false) + "\n";
          break;
        case Block::Kind::kImage: out += "chart: " + inert_text(b.file, false) + " (" + inert_text(b.text, false) + ")\n"; break;
        case Block::Kind::kTable: out += table(b.table); break;
      }
    }
    return out;
  }

 private:
  static std::string table(const Table& t) {
    std::string out;
    if (!t.title.empty()) out += inert_text(t.title, false) + "\n";
    std::vector<size_t> width(t.columns.size());
    std::vector<std::vector<std::string>> cells;
    for (size_t i = 0; i < t.columns.size(); ++i) width[i] = inert_text(header_with_unit(t.columns[i]), false).size();
    for (const auto& r : t.rows) {
      std::vector<std::string> line;
      for (size_t i = 0; i < t.columns.size(); ++i) {
        line.push_back(i < r.size() ? human(r[i], t.columns[i]) : "-");
        width[i] = std::max(width[i], line.back().size());
      }
      cells.push_back(std::move(line));
    }
    auto emit = [&](const std::vector<std::string>& line, const std::vector<Cell>* row) {
      std::string s;
      for (size_t i = 0; i < line.size(); ++i) {
        const bool right = row != nullptr && i < row->size() && (*row)[i].number.has_value();
        s += (i ? "  " : "") + (right ? fmt::format("{:>{}}", line[i], width[i]) : fmt::format("{:<{}}", line[i], width[i]));
      }
      while (!s.empty() && s.back() == ' ') s.pop_back();
      return s + "\n";
    };
    std::vector<std::string> headers;
    for (const auto& c : t.columns) headers.push_back(inert_text(header_with_unit(c), false));
    out += emit(headers, nullptr);
    for (size_t r = 0; r < cells.size(); ++r) out += emit(cells[r], &t.rows[r]);
    for (const auto& n : t.notes) out += inert_text(n, true) + "\n";
    return out;
  }
};

/// A Markdown table cell: one line, inert, its `|` escaped (a cell can never add a column or a row).
std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : md_text(s, false)) {
    if (c == '|') {
      out += "\\|";
    } else {
      out += c;
    }
  }
  return out;
}

/// An image's link target: no character that ends the link or starts another.
std::string md_link(const std::string& s) {
  std::string out;
  for (char c : inert_text(s, false)) {
    if (c == ' ' || c == '(' || c == ')' || c == '<' || c == '>' || c == '"') {
      out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out;
}

class MarkdownPrinter : public Printer {
 public:
  std::string render(const Document& d) const override {
    std::string out;
    for (const auto& b : d.blocks) {
      switch (b.kind) {
        case Block::Kind::kHeading:
          out += std::string(static_cast<size_t>(std::clamp(b.level, 1, 6)), '#') + " " + md_text(b.text, false) + "\n\n";
          break;
        case Block::Kind::kParagraph: out += md_text(b.text, true) + "\n\n"; break;
        case Block::Kind::kQuote: out += "> " + md_text(b.text, false) + "\n\n"; break;
        case Block::Kind::kList:
          for (const auto& i : b.items) out += "- " + md_text(i, false) + "\n";
          out += "\n";
          break;
        case Block::Kind::kImage: out += "![" + md_cell(b.text) + "](" + md_link(b.file) + ")\n\n"; break;
        case Block::Kind::kTable: out += table(b.table) + "\n"; break;
      }
    }
    while (out.size() > 1 && out[out.size() - 1] == '\n' && out[out.size() - 2] == '\n') out.pop_back();
    return out;
  }

 private:
  static std::string table(const Table& t) {
    std::string out;
    // GitHub and most Markdown renderers fold a <details> block; elsewhere it reads as the table with a line above.
    if (!t.details.empty()) out += "<details><summary>" + md_text(t.details, false) + "</summary>\n\n";
    if (!t.title.empty()) out += md_text(t.title, false) + "\n\n";
    out += "|";
    for (const auto& c : t.columns) out += " " + md_cell(header_with_unit(c)) + " |";
    out += "\n|";
    for (const auto& c : t.columns) out += c.unit.empty() ? " --- |" : " ---: |";
    out += "\n";
    for (const auto& r : t.rows) {
      out += "|";
      for (size_t i = 0; i < t.columns.size(); ++i) out += " " + md_cell(i < r.size() ? human(r[i], t.columns[i]) : "-") + " |";
      out += "\n";
    }
    if (!t.notes.empty()) out += "\n";
    for (const auto& n : t.notes) out += md_text(n, false) + "\n";
    if (!t.details.empty()) out += "\n</details>\n";
    return out;
  }
};

/// The page's style: one column of text up to 1,240 px (usable on a 1,280 px screen), tables that wrap their long
/// cells rather than overflow, figures as wide as the page at most.
constexpr const char* kHtmlStyle =
    "body{font-family:system-ui,sans-serif;max-width:1240px;margin:1em auto;padding:0 12px;color:#222}"
    "h1{font-size:1.6em}h2{font-size:1.3em;border-bottom:1px solid #ddd;margin-top:1.6em}h3{font-size:1.1em}"
    "table{border-collapse:collapse;max-width:100%;margin:.4em 0}"
    "td,th{border:1px solid #ccc;padding:3px 7px;font-size:13px;vertical-align:top}td{overflow-wrap:anywhere}"
    "th{background:#eee;text-align:left;overflow-wrap:break-word}td.n{text-align:right;white-space:nowrap}"
    "p.caption{font-weight:600;margin:.8em 0 .2em}p.note{font-size:12px;color:#555;margin:.2em 0}"
    "details{margin:.4em 0 1em}summary{cursor:pointer;color:#1f5fa0}"
    "figure{margin:1em 0}figcaption{font-weight:600;margin-bottom:.3em}img{max-width:100%;height:auto}";

class HtmlPrinter : public Printer {
 public:
  explicit HtmlPrinter(std::function<std::string(const std::string&)> load) : load_(std::move(load)) {}
  std::string render(const Document& d) const override {
    std::string out = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + xml_text(d.title) +
                      "</title>\n<meta name=\"viewport\" content=\"width=device-width\">\n<style>" + kHtmlStyle +
                      "</style></head><body>\n";
    for (const auto& b : d.blocks) {
      switch (b.kind) {
        case Block::Kind::kHeading: {
          const int l = std::clamp(b.level, 1, 6);
          out += fmt::format("<h{}>{}</h{}>\n", l, xml_text(b.text), l);
          break;
        }
        case Block::Kind::kParagraph: out += "<p>" + xml_text(b.text) + "</p>\n"; break;
        case Block::Kind::kQuote: out += "<blockquote>" + xml_text(b.text) + "</blockquote>\n"; break;
        case Block::Kind::kList:
          out += "<ul>";
          for (const auto& i : b.items) out += "<li>" + xml_text(i) + "</li>";
          out += "</ul>\n";
          break;
        case Block::Kind::kImage: {
          const std::string data = load_ ? load_(b.file) : std::string();
          if (load_ && data.empty()) break;  // an unreadable chart is left out, not shown broken
          // The chart's labels travel with it (data-labels, a JSON array): a test or a reader's script can check a
          // chart without reading pixels.
          out += "<figure><figcaption>" + xml_text(b.text) + "</figcaption>\n<img alt=\"" + xml_text(b.text) +
                 "\" data-chart=\"" + xml_text(b.file) + "\" data-labels=\"" +
                 xml_text(nlohmann::json(b.items).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) +
                 "\" src=\"" + (data.empty() ? xml_text(b.file) : "data:image/png;base64," + base64_encode(data)) +
                 "\"></figure>\n";
          break;
        }
        case Block::Kind::kTable: out += table(b.table); break;
      }
    }
    return out + "</body></html>\n";
  }

 private:
  static std::string table(const Table& t) {
    std::string out;
    if (!t.details.empty()) out += "<details><summary>" + xml_text(t.details) + "</summary>\n";
    if (!t.title.empty()) out += "<p class=\"caption\">" + xml_text(t.title) + "</p>\n";
    out += "<table data-table=\"" + xml_text(t.id) + "\"><tr>";
    for (const auto& c : t.columns) out += "<th>" + xml_text(header_with_unit(c)) + "</th>";
    out += "</tr>\n";
    for (const auto& r : t.rows) {
      out += "<tr>";
      for (size_t i = 0; i < t.columns.size(); ++i) {
        const bool number = i < r.size() && r[i].number.has_value();
        out += std::string(number ? "<td class=\"n\">" : "<td>") +
               xml_text(i < r.size() ? human(r[i], t.columns[i]) : "-") + "</td>";
      }
      out += "</tr>\n";
    }
    out += "</table>\n";
    for (const auto& n : t.notes) out += "<p class=\"note\">" + xml_text(n) + "</p>\n";
    if (!t.details.empty()) out += "</details>\n";
    return out;
  }
  std::function<std::string(const std::string&)> load_;
};

/// True when all of `s` reads as one number (a spreadsheet takes it as a value, never as a formula).
bool plain_number(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && s.find_first_of(" \t\r\n") == std::string::npos;
}

/// An RFC 4180 field that a spreadsheet never runs: text starting with =, +, -, @, tab or CR (OWASP's CSV-injection
/// list) gets a leading apostrophe, unless it is a plain number.
std::string csv_field(std::string s) {
  if (!s.empty() && std::string("=+-@\t\r").find(s.front()) != std::string::npos && !plain_number(s)) s = "'" + s;
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

/// RFC 4180 CSV of the document's first table: one header line of column keys, raw numbers.
class CsvPrinter : public Printer {
 public:
  std::string render(const Document& d) const override {
    const auto tables = d.tables();
    if (tables.empty()) return "";
    const Table& t = *tables.front();
    std::string out;
    for (size_t i = 0; i < t.columns.size(); ++i) out += (i ? "," : "") + csv_field(t.columns[i].key);
    out += "\n";
    for (const auto& r : t.rows) {
      for (size_t i = 0; i < t.columns.size(); ++i) {
        std::string v;
        if (i < r.size()) v = r[i].number ? raw_number(*r[i].number) : r[i].text;
        out += (i ? "," : "") + csv_field(v);
      }
      out += "\n";
    }
    return out;
  }
};

/// One JSON object per table row; with several tables each object names its table.
class JsonlPrinter : public Printer {
 public:
  std::string render(const Document& d) const override {
    const auto tables = d.tables();
    std::string out;
    for (const Table* t : tables) {
      for (const auto& r : t->rows) {
        nlohmann::json o = row_json(*t, r);
        if (tables.size() > 1) o["table"] = t->id;
        out += json_text(o, -1) + "\n";
      }
    }
    return out;
  }
};

class JsonPrinter : public Printer {
 public:
  std::string render(const Document& d) const override {
    if (!d.data.is_null()) return json_text(d.data, 2) + "\n";
    nlohmann::json tables = nlohmann::json::object();
    for (const Table* t : d.tables()) {
      nlohmann::json rows = nlohmann::json::array();
      for (const auto& r : t->rows) rows.push_back(row_json(*t, r));
      tables[t->id.empty() ? "rows" : t->id] = rows;
    }
    return json_text(nlohmann::json{{"schema", "gpubench." + d.kind}, {"title", d.title}, {"tables", tables}}, 2) + "\n";
  }
};

class JunitPrinter : public Printer {
 public:
  std::string render(const Document& d) const override {
    int failures = 0, skipped = 0;
    for (const auto& c : d.cases) {
      failures += c.outcome == TestCase::Outcome::kFail;
      skipped += c.outcome == TestCase::Outcome::kSkip;
    }
    std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out += fmt::format("<testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">\n",
                       xml_text("gpubench " + d.kind), d.cases.size(), failures, skipped);
    // CI systems key test history by name: a name met again is numbered ("... (2)"), never merged or overwritten.
    std::map<std::string, int> seen;
    for (const auto& c : d.cases) {
      const int n = ++seen[c.name];
      const std::string name = n == 1 ? c.name : c.name + " (" + std::to_string(n) + ")";
      out += fmt::format("  <testcase classname=\"gpubench\" name=\"{}\">", xml_text(name));
      switch (c.outcome) {
        case TestCase::Outcome::kFail:
          out += fmt::format("\n    <failure message=\"{}\">{}</failure>\n  ", xml_text(c.message),
                             xml_text(c.message));
          break;
        case TestCase::Outcome::kSkip:
          out += fmt::format("\n    <skipped message=\"{}\"/>\n  ", xml_text(c.message));
          break;
        case TestCase::Outcome::kPass:
          out += fmt::format("\n    <system-out>{}</system-out>\n  ", xml_text(c.message));
          break;
      }
      out += "</testcase>\n";
    }
    return out + "</testsuite>\n";
  }
};

/// OpenMetrics text exposition (also read as Prometheus' text format 0.0.4, where `# EOF` is a comment): one gauge
/// family per metric, its samples together, labels escaped as the format says (backslash, double quote, newline), no
/// timestamps (node_exporter's textfile collector refuses them). The exposition is valid whatever the gauges: a
/// label name appears once in a sample, no two samples of a family share their labels (an exact repeat is printed
/// once; a repeat with another value gets a `sample` label numbering it), and label values are UTF-8. No gauges:
/// only `# EOF` (commands without metrics refuse the format before they work: cli/app.cpp).
class OpenMetricsPrinter : public Printer {
 public:
  std::string render(const Document& d) const override {
    std::vector<std::string> order;
    std::map<std::string, std::vector<const Gauge*>> families;
    for (const auto& g : d.gauges) {
      auto [it, added] = families.try_emplace(g.family);
      if (added) order.push_back(g.family);
      it->second.push_back(&g);
    }
    std::string out;
    for (const auto& name : order) {
      const auto& samples = families[name];
      out += "# TYPE " + name + " gauge\n";
      out += "# HELP " + name + " " + help_text(samples.front()->help) + "\n";
      std::map<std::string, double> seen;  // a sample's label text -> its value
      for (const Gauge* g : samples) {
        std::vector<std::pair<std::string, std::string>> labels;
        for (const auto& [key, value] : g->labels) {
          const std::string k = openmetrics_name(key);
          const bool repeated = std::any_of(labels.begin(), labels.end(), [&k](const auto& l) { return l.first == k; });
          if (!repeated) labels.emplace_back(k, value);
        }
        std::string text = label_text(labels);
        if (const auto it = seen.find(text); it != seen.end() && same_value(it->second, g->value)) continue;
        for (int n = 2; seen.count(text) > 0; ++n) {
          auto numbered = labels;
          numbered.emplace_back("sample", std::to_string(n));
          text = label_text(numbered);
        }
        seen.emplace(text, g->value);
        out += name + text + " " + number(g->value) + "\n";
      }
    }
    return out + "# EOF\n";
  }

 private:
  static std::string label_text(const std::vector<std::pair<std::string, std::string>>& labels) {
    if (labels.empty()) return "";
    std::string out = "{";
    for (size_t i = 0; i < labels.size(); ++i) {
      out += (i == 0 ? "" : ",") + labels[i].first + "=\"" + openmetrics_escape(labels[i].second) + "\"";
    }
    return out + "}";
  }
  static bool same_value(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }
  static std::string help_text(const std::string& s) {
    std::string out;
    for (char c : s) out += c == '\n' ? ' ' : c == '"' ? '\'' : c == '\\' ? '/' : c;
    return out;
  }
  static std::string number(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    return fmt::format("{}", v);
  }
};

}  // namespace

std::string openmetrics_escape(const std::string& value) {
  std::string out;
  for (char c : inert_text(value, true)) {  // UTF-8, no control characters but the newline escaped below
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string openmetrics_name(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
    out += ok ? c : '_';
  }
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0])) != 0) out.insert(0, "_");
  return out;
}

const std::vector<std::string>& printer_formats() {
  static const std::vector<std::string> f{"console", "md", "html", "csv", "jsonl", "json", "junit", "openmetrics"};
  return f;
}

std::unique_ptr<Printer> make_printer(const std::string& format, std::function<std::string(const std::string&)> load_image) {
  if (format == "console" || format == "text") return std::make_unique<ConsolePrinter>();
  if (format == "md" || format == "markdown") return std::make_unique<MarkdownPrinter>();
  if (format == "html") return std::make_unique<HtmlPrinter>(std::move(load_image));
  if (format == "csv") return std::make_unique<CsvPrinter>();
  if (format == "jsonl") return std::make_unique<JsonlPrinter>();
  if (format == "json") return std::make_unique<JsonPrinter>();
  if (format == "junit" || format == "xml") return std::make_unique<JunitPrinter>();
  if (format == "openmetrics" || format == "prometheus") return std::make_unique<OpenMetricsPrinter>();
  std::string known;
  for (const auto& f : printer_formats()) known += (known.empty() ? "" : ", ") + f;
  throw std::invalid_argument("unknown output format '" + format + "' (known: " + known + ")");
}

std::string format_for_path(const std::string& path) {
  const auto dot = path.find_last_of('.');
  const auto slash = path.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  const std::string ext = path.substr(dot + 1);
  if (ext == "md" || ext == "markdown") return "md";
  if (ext == "html" || ext == "htm") return "html";
  if (ext == "csv" || ext == "jsonl" || ext == "json") return ext;
  if (ext == "xml") return "junit";
  if (ext == "prom") return "openmetrics";  // node_exporter's textfile collector reads *.prom
  if (ext == "txt") return "console";
  return "";
}

void PrinterMultiplex::add(std::string format, std::string destination,
                           std::function<std::string(const std::string&)> load_image) {
  outputs_.push_back(Output{make_printer(format, std::move(load_image)), std::move(destination), nullptr});
}

void PrinterMultiplex::add_stream(std::string format, std::FILE* stream) {
  outputs_.push_back(Output{make_printer(format), "", stream});
}

void PrinterMultiplex::print(const Document& d) const {
  std::string first_error;
  for (const auto& o : outputs_) {
    const std::string text = o.printer->render(d);
    if (o.stream != nullptr || o.destination == "-") {
      std::FILE* f = o.stream != nullptr ? o.stream : stdout;
      std::fwrite(text.data(), 1, text.size(), f);
      std::fflush(f);
      continue;
    }
    try {
      write_file_atomic(o.destination, text);
    } catch (const std::exception& e) {
      if (first_error.empty()) first_error = o.destination + ": " + e.what();
    }
  }
  if (!first_error.empty()) throw std::runtime_error(first_error);
}

}  // namespace gpubench
