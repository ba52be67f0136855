#pragma once
// One printer interface for every view gpubench prints (google/benchmark's reporters, nvbench's printer_base and
// printer_multiplex). A command builds a `Document` (what to say: headings, text, tables whose number cells carry a
// unit hint, test cases, charts, a machine-readable payload) and hands it to printers (how to say it: console,
// Markdown, HTML, CSV, JSONL, JSON, JUnit). A new output format is one Printer; a new view is one Document builder;
// a new metric reaches every format through the tables' unit hints.

#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpubench/core/record/metric.hpp"

namespace gpubench {

/// A table cell: a number (formatted by its column's unit hint by human printers, written raw by data printers), a
/// text, a truth value ("true"/"false" for people and CSV, a JSON boolean for JSON and JSONL), or empty (no value:
/// "-" for people, an empty CSV field, JSON null).
struct Cell {
  std::optional<double> number;
  std::string text;
  bool boolean = false;  ///< `text` is "true" or "false" and is a JSON boolean for programs
  bool empty() const { return !number && text.empty(); }
  static Cell num(double v) { return Cell{v, {}}; }
  static Cell num(const std::optional<double>& v) { return Cell{v, {}}; }
  static Cell str(std::string s) { return Cell{std::nullopt, std::move(s)}; }
  static Cell flag(bool v) { return Cell{std::nullopt, v ? "true" : "false", true}; }
  static Cell flag(const std::optional<bool>& v) { return v ? flag(*v) : none(); }
  static Cell none() { return Cell{}; }
};

struct Column {
  std::string key;     ///< machine name: CSV header, JSON key (snake_case, unit in the name as record fields)
  std::string header;  ///< for people
  std::string unit;    ///< unit hint (metrics.hpp) for number cells; "" = a plain number or text
  Better better = Better::kNeither;
  /// A column of text, and one of whole numbers (counts, ids, batch sizes).
  static Column text(std::string key, std::string header) { return Column{std::move(key), std::move(header), "", Better::kNeither}; }
  static Column count(std::string key, std::string header) {
    return Column{std::move(key), std::move(header), "count", Better::kNeither};
  }
};

struct Table {
  std::string id;      ///< names the table in JSON output and selects it for CSV/JSONL
  std::string title;   ///< heading shown above it (none when empty)
  std::vector<Column> columns;
  std::vector<std::vector<Cell>> rows;
  std::vector<std::string> notes;  ///< lines shown under it
  /// When set, the table is one click away: folded under this summary line (HTML and Markdown `<details>`), so a
  /// page shows its headline columns and keeps the rest at hand.
  std::string details;
  /// Adds a column; returns its index.
  size_t add_column(Column c);
  /// Index of the column with `key`, adding it (and an empty cell to existing rows) when absent.
  size_t column_for(const Column& c);
  /// Appends an empty row and returns it (sized to the columns).
  std::vector<Cell>& add_row();
  /// Sets `row`'s cell in column `c`, adding the column (and widening `row`) when the table lacks it; returns the
  /// column's index.
  size_t put(std::vector<Cell>& row, const Column& c, Cell value);
};

/// A JUnit test case (compare verdicts, sweep points, runs).
struct TestCase {
  std::string name;
  enum class Outcome { kPass, kFail, kSkip } outcome = Outcome::kPass;
  std::string message;  ///< failure or skip reason; the pass detail otherwise
};

/// One sample for OpenMetrics output (`--format openmetrics`): a gauge of the family `family` (gpubench_<metric>),
/// with the run's identity as labels. Commands whose documents carry metrics (run, history, export) fill these.
struct Gauge {
  std::string family;  ///< a valid metric name: [a-zA-Z_:][a-zA-Z0-9_:]*
  std::string help;    ///< the metric's name and unit, for # HELP
  std::vector<std::pair<std::string, std::string>> labels;  ///< label name (valid) and value (any text)
  double value = 0;
};

/// One block of a document, in order.
struct Block {
  enum class Kind { kHeading, kParagraph, kList, kQuote, kTable, kImage } kind = Kind::kParagraph;
  int level = 1;                    ///< headings: 1, 2, 3
  std::string text;                 ///< heading, paragraph or quote text; an image's title
  std::vector<std::string> items;   ///< list items; an image's labels (its bars, series, panels), for tests and alt text
  Table table;                      ///< kTable
  std::string file;                 ///< kImage: the PNG file next to the output
};

struct Document {
  std::string kind;                 ///< "run", "compare", "sweep", "scaling", "report", "export", "published"
  std::string title;
  std::vector<Block> blocks;
  std::vector<TestCase> cases;      ///< for JUnit
  std::vector<Gauge> gauges;        ///< for OpenMetrics; empty where the command has no metrics to expose
  /// The machine-readable form for JSON output; when null, JSON output is the document's tables as arrays of rows.
  nlohmann::json data;

  Document& heading(std::string text, int level = 2);
  Document& paragraph(std::string text);
  Document& list(std::vector<std::string> items);
  Document& quote(std::string text);
  Document& image(std::string file, std::string title, std::vector<std::string> labels = {});
  Table& table(Table t);
  /// The tables in order (CSV and JSONL print these).
  std::vector<const Table*> tables() const;

 private:
  Block& add(Block::Kind kind, std::string text);
};

/// "1.23 GiB" style rendering of a byte count (binary units).
std::string format_bytes(int64_t bytes);

/// A rate as people read it: one decimal from 10 up ("6122.3"), three significant digits below ("4.4", "0.0481"), so
/// a slow CPU run never reads "0.0 images/s".
std::string format_rate(double per_s);

/// A metric as a column (its tag, name, unit hint and direction).
Column metric_column(const Metric& m);

/// Formats `value` for people by unit hint: bytes as "1.23 GiB", "fraction" as a percentage, rates with one
/// decimal, seconds and milliseconds with two, counts as integers.
std::string format_value(double value, const std::string& unit);
/// A header with its unit for people: "throughput (images/s)"; bytes and fractions need none.
std::string header_with_unit(const Column& c);

class Printer {
 public:
  virtual ~Printer() = default;
  virtual std::string render(const Document& d) const = 0;
};

/// The formats: console, md (markdown), html, csv, jsonl, json, junit, openmetrics. Throws std::invalid_argument naming the
/// known ones. `load_image(file)` gives an image's bytes for HTML (data URIs); without it images are links.
std::unique_ptr<Printer> make_printer(const std::string& format,
                                      std::function<std::string(const std::string&)> load_image = {});
const std::vector<std::string>& printer_formats();
/// A label value as the OpenMetrics/Prometheus text format escapes it: backslash, double quote and newline.
std::string openmetrics_escape(const std::string& value);
/// `text` as a metric or label name: characters outside [a-zA-Z0-9_] become '_', and a leading digit gets one.
std::string openmetrics_name(const std::string& text);
/// The format a file name asks for by its extension (.md, .html, .csv, .jsonl, .json, .xml = junit, .txt = console,
/// .prom = openmetrics),
/// or "" when the extension says nothing.
std::string format_for_path(const std::string& path);

/// Prints one document to several destinations, each with its own printer (nvbench's printer_multiplex).
/// Destination "-" is standard output; files are written atomically.
class PrinterMultiplex {
 public:
  void add(std::string format, std::string destination,
           std::function<std::string(const std::string&)> load_image = {});
  /// A stream instead of a file (standard error, when standard output carries data).
  void add_stream(std::string format, std::FILE* stream);
  bool empty() const { return outputs_.empty(); }
  /// Renders and writes to every destination; throws on the first that cannot be written (after trying all).
  void print(const Document& d) const;

 private:
  struct Output {
    std::unique_ptr<Printer> printer;
    std::string destination;
    std::FILE* stream = nullptr;  ///< set: written here (destination unused)
  };
  std::vector<Output> outputs_;
};

/// `&`, `<`, `>` and `"` as entities: safe text for HTML and XML elements and attributes.
std::string markup_escape(const std::string& s);
/// `s` with nothing a reader acts on: bytes that are not UTF-8, control characters (C0 but newline, DEL, C1: a
/// terminal's escape sequences, bytes XML 1.0 forbids) and the non-characters U+FFFE/U+FFFF become U+FFFD; tab and
/// carriage return become spaces, and so does newline unless `keep_newlines` (a table cell or a heading is one line).
/// Every printer passes record-supplied text through it.
std::string inert_text(const std::string& s, bool keep_newlines);
/// Standard base64 (RFC 4648) of `bytes`.
std::string base64_encode(const std::string& bytes);

}  // namespace gpubench
