// Every printer on record-supplied text, as `export`, `report`, `compare` and `history` print fields of records they
// were given: NUL-separated strings from the input become a document's title, heading, paragraph, list item, column
// keys and headers, table cells, test cases and OpenMetrics labels and help. Whatever they hold, no printer throws, the
// OpenMetrics text keeps one line per sample, the console and JUnit outputs
// carry no control character but newline (XML 1.0 forbids the rest), Markdown and HTML carry no raw `<`, and no CSV
// field starts a spreadsheet formula.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "gpubench/report/document.hpp"

namespace {

bool has_control(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && c != '\n') || c == 0x7f) return true;
    if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9f &&
        static_cast<unsigned char>(s[i + 1]) >= 0x80) {
      return true;
    }
  }
  return false;
}

/// Every CSV field of `csv` (RFC 4180) starts with no formula character, unless it reads as a plain number.
bool csv_is_inert(const std::string& csv) {
  size_t i = 0;
  while (i < csv.size()) {
    std::string field;
    if (csv[i] == '"') {
      ++i;
      while (i < csv.size()) {
        if (csv[i] == '"' && i + 1 < csv.size() && csv[i + 1] == '"') {
          field += '"';
          i += 2;
        } else if (csv[i] == '"') {
          ++i;
          break;
        } else {
          field += csv[i++];
        }
      }
    } else {
      while (i < csv.size() && csv[i] != ',' && csv[i] != '\n') field += csv[i++];
    }
    if (!field.empty() && std::string("=+-@\t\r").find(field[0]) != std::string::npos) {
      char* end = nullptr;
      std::strtod(field.c_str(), &end);
      if (end != field.c_str() + field.size()) return false;
    }
    if (i < csv.size()) ++i;  // the separator
  }
  return true;
}

/// The text has one line per sample, two per family and `# EOF` last: no label value or help text broke a line, and
/// every sample line's quotes are balanced once escapes are skipped.
bool openmetrics_is_whole(const std::string& out, size_t samples) {
  if (out.size() < 6 || out.compare(out.size() - 6, 6, "# EOF\n") != 0) return false;
  size_t lines = 0, families = 0;
  size_t start = 0;
  while (start < out.size()) {
    const size_t end = out.find('\n', start);
    const std::string line = out.substr(start, end - start);
    ++lines;
    if (line.rfind("# TYPE ", 0) == 0) ++families;
    if (!line.empty() && line[0] != '#') {
      bool quoted = false;
      for (size_t i = 0; i < line.size(); ++i) {
        if (quoted && line[i] == '\\') {
          ++i;
        } else if (line[i] == '"') {
          quoted = !quoted;
        }
      }
      if (quoted) return false;
    }
    start = end + 1;
  }
  // No two samples of a family share their label set (an invalid exposition); an exact repeat is printed once.
  std::set<std::string> label_sets;
  size_t sample_lines = 0;
  for (size_t s = 0; s < out.size();) {
    const size_t e = out.find('\n', s);
    const std::string line = out.substr(s, e - s);
    s = e + 1;
    if (line.empty() || line[0] == '#') continue;
    ++sample_lines;
    if (!label_sets.insert(line.substr(0, line.rfind(' '))).second) return false;
  }
  return sample_lines <= samples && lines == sample_lines + 2 * families + 1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> parts(1);
  for (size_t i = 0; i < size && parts.size() < 64; ++i) {
    if (data[i] == 0) {
      parts.emplace_back();
    } else {
      parts.back() += static_cast<char>(data[i]);
    }
  }
  auto part = [&parts](size_t i) { return parts[i % parts.size()]; };
  gpubench::Document d;
  d.kind = "fuzz";
  d.title = part(0);
  d.heading(part(1), 2);
  d.paragraph(part(2));
  d.list({part(3), part(4)});
  d.quote(part(5));
  gpubench::Table t;
  t.id = "t";
  t.title = part(6);
  t.add_column(gpubench::Column{part(7), part(8), "", gpubench::Better::kNeither});
  t.add_column(gpubench::Column{part(9), part(10), "images/s", gpubench::Better::kHigher});
  t.notes.push_back(part(11));
  for (size_t r = 12; r + 1 < parts.size(); r += 2) t.rows.push_back({gpubench::Cell::str(part(r)), gpubench::Cell::str(part(r + 1))});
  d.table(std::move(t));
  d.cases.push_back(gpubench::TestCase{part(13), gpubench::TestCase::Outcome::kFail, part(14)});
  // OpenMetrics: label values and help text from the input (names are the views' own, made valid by openmetrics_name).
  for (size_t g = 15; g < 15 + 3 * 3; g += 3) {
    d.gauges.push_back(gpubench::Gauge{"gpubench_" + gpubench::openmetrics_name(part(g)), part(g + 1),
                                       {{"host", part(g + 2)}, {gpubench::openmetrics_name(part(g + 1)), part(g)}},
                                       static_cast<double>(g)});
  }
  for (const auto& format : gpubench::printer_formats()) {
    const std::string out = gpubench::make_printer(format)->render(d);
    if (format == "openmetrics" && !openmetrics_is_whole(out, d.gauges.size())) __builtin_trap();
    if ((format == "console" || format == "junit") && has_control(out)) __builtin_trap();
    if ((format == "md" || format == "html") && has_control(out)) __builtin_trap();
    if (format == "md" && out.find('<') != std::string::npos) __builtin_trap();
    if (format == "csv" && !csv_is_inert(out)) __builtin_trap();
  }
  return 0;
}
