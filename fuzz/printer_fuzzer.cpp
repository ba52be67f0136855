// Every printer on record-supplied text, as `export`, `report`, `compare` and `history` print fields of records they
// were given: NUL-separated strings from the input become a document's title, heading, paragraph, list item, column
// keys and headers, table cells and test cases. Whatever they hold, no printer throws, the console and JUnit outputs
// carry no control character but newline (XML 1.0 forbids the rest), Markdown and HTML carry no raw `<`, and no CSV
// field starts a spreadsheet formula.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
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
  for (const auto& format : gpubench::printer_formats()) {
    const std::string out = gpubench::make_printer(format)->render(d);
    if ((format == "console" || format == "junit") && has_control(out)) __builtin_trap();
    if ((format == "md" || format == "html") && has_control(out)) __builtin_trap();
    if (format == "md" && out.find('<') != std::string::npos) __builtin_trap();
    if (format == "csv" && !csv_is_inert(out)) __builtin_trap();
  }
  return 0;
}
