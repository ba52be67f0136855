// The printers (document.hpp): one document, each format's rules.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "../common/temp_dir.h"
#include "gpubench/report/document.hpp"

namespace gpubench {
namespace {

Document sample() {
  Document d;
  d.kind = "test";
  d.title = "T";
  d.heading("Runs", 2);
  Table t;
  t.id = "runs";
  t.add_column(Column{"name", "name", "", Better::kNeither});
  t.add_column(Column{"samples_per_s", "throughput", "images/s", Better::kHigher});
  t.add_column(Column{"peak_reserved_bytes", "peak reserved", "bytes", Better::kLower});
  t.add_column(Column{"mfu", "MFU", "fraction", Better::kHigher});
  t.rows.push_back({Cell::str("a, \"quoted\" | piped"), Cell::num(1234.56), Cell::num(1536.0), Cell::num(0.125)});
  t.rows.push_back({Cell::str("b"), Cell::none(), Cell::num(std::nullopt), Cell::num(0.5)});
  d.table(std::move(t));
  d.cases.push_back(TestCase{"a <1>", TestCase::Outcome::kFail, "worse & slower"});
  return d;
}

std::string render(const std::string& f) { return make_printer(f)->render(sample()); }

/// A document whose every field is what a hostile record could hold.
Document hostile() {
  Document d;
  d.kind = "hostile";
  d.title = "<script>alert(1)</script>";
  d.heading("runs on \x1b]0;owned\x07 GPU\r\n# forged heading", 2);
  d.paragraph("device <img src=x onerror=alert(1)> & \x1b[2J cleared \xc2\x9b" "31m C1 \xff bad");
  d.list({"item \x1b[31mred"});
  Table t;
  t.id = "runs";
  t.add_column(Column{"name", "name", "", Better::kNeither});
  t.add_column(Column{"=cmd|' /C calc'!A0", "tag from a record", "", Better::kNeither});
  t.add_column(Column{"samples_per_s", "throughput", "images/s", Better::kHigher});
  t.rows.push_back({Cell::str("=HYPERLINK(\"http://x\")"), Cell::str("+1+1"), Cell::num(-5)});
  t.rows.push_back({Cell::str("@SUM(A1)"), Cell::str("-2.5"), Cell::num(1)});
  t.rows.push_back({Cell::str("\tindent"), Cell::str("H200\r| forged | row | 1 |\n| x | y | z |"), Cell::num(2)});
  t.rows.push_back({Cell::str("a\x01" "b\x7f"), Cell::str("-"), Cell::num(3)});
  d.table(std::move(t));
  d.cases.push_back(TestCase{"case \x01 \xef\xbf\xbe", TestCase::Outcome::kFail, "slower \x1b on \x02 H200 \xc3"});
  return d;
}

bool has_control(const std::string& s, bool allow_newline) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n' && allow_newline) continue;
    if (c < 0x20 || c == 0x7f) return true;
    if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(s[i + 1]) <= 0x9f) {
      return true;  // a C1 control (U+0080-U+009F), CSI among them
    }
  }
  return false;
}

TEST(PrintersTest, TheConsoleNeverGetsEscapeSequencesFromRecords) {
  const std::string out = make_printer("console")->render(hostile());
  EXPECT_FALSE(has_control(out, true)) << out;
  EXPECT_NE(out.find("\xEF\xBF\xBD"), std::string::npos) << "replaced, visibly";
  EXPECT_NE(out.find("cleared"), std::string::npos);
}

TEST(PrintersTest, OpenMetricsGroupsEachFamilyEscapesLabelsAndEnds) {
  EXPECT_EQ(openmetrics_escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(openmetrics_name("step_time_p95_ms"), "step_time_p95_ms");
  EXPECT_EQ(openmetrics_name("9 lives/s"), "_9_lives_s");
  Document d;
  d.gauges.push_back(Gauge{"gpubench_a", "a (\"x\")\nmore", {{"host", "h\"1"}}, 1.5});
  d.gauges.push_back(Gauge{"gpubench_b", "b", {}, 2});
  d.gauges.push_back(Gauge{"gpubench_a", "a", {{"host", "h2"}}, std::nan("")});
  const std::string out = make_printer("openmetrics")->render(d);
  EXPECT_EQ(out,
            "# TYPE gpubench_a gauge\n# HELP gpubench_a a ('x') more\ngpubench_a{host=\"h\\\"1\"} 1.5\n"
            "gpubench_a{host=\"h2\"} NaN\n# TYPE gpubench_b gauge\n# HELP gpubench_b b\ngpubench_b 2\n# EOF\n");
  EXPECT_EQ(make_printer("openmetrics")->render(Document{}), "# EOF\n");  // nothing to expose: still valid
  EXPECT_EQ(format_for_path("/var/lib/node_exporter/gpubench.prom"), "openmetrics");
}

// An exposition with two samples of one name and label set is invalid (Prometheus refuses the whole scrape): the
// same run exported twice, two runs whose labels agree, a label given twice, bytes that are not UTF-8.
TEST(PrintersTest, OpenMetricsNeverRepeatsALabelSetOrALabel) {
  Document d;
  d.gauges.push_back(Gauge{"gpubench_x", "x", {{"run", "a"}}, 1});
  d.gauges.push_back(Gauge{"gpubench_x", "x", {{"run", "a"}}, 1});  // the same sample again: printed once
  d.gauges.push_back(Gauge{"gpubench_x", "x", {{"run", "a"}}, 2});  // same labels, another value: numbered
  d.gauges.push_back(Gauge{"gpubench_x", "x", {{"run", "a"}}, 3});
  d.gauges.push_back(Gauge{"gpubench_y", "y", {{"host", "h"}, {"host", "i"}, {"bad name", "\xff\x01v"}}, 4});
  const std::string out = make_printer("openmetrics")->render(d);
  EXPECT_EQ(out,
            "# TYPE gpubench_x gauge\n# HELP gpubench_x x\ngpubench_x{run=\"a\"} 1\n"
            "gpubench_x{run=\"a\",sample=\"2\"} 2\ngpubench_x{run=\"a\",sample=\"3\"} 3\n"
            "# TYPE gpubench_y gauge\n# HELP gpubench_y y\n"
            "gpubench_y{host=\"h\",bad_name=\"\xEF\xBF\xBD\xEF\xBF\xBDv\"} 4\n# EOF\n");
}

TEST(PrintersTest, CsvCellsNeverStartAFormula) {
  const std::string out = make_printer("csv")->render(hostile());
  std::istringstream in(out);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header, "name,'=cmd|' /C calc'!A0,samples_per_s");  // a record's metric tag is a header
  EXPECT_NE(out.find("\n\"'=HYPERLINK(\"\"http://x\"\")\",'+1+1,-5\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\n'@SUM(A1),-2.5,1\n"), std::string::npos) << "a number stays a number: " << out;
  EXPECT_NE(out.find("\n'\tindent,"), std::string::npos) << out;
  EXPECT_NE(out.find(",'-,3"), std::string::npos) << out;
}

TEST(PrintersTest, JunitIsWellFormedXmlWhateverTheRecordsHold) {
  const std::string out = make_printer("junit")->render(hostile());
  EXPECT_FALSE(has_control(out, true)) << out;
  EXPECT_EQ(out.find("\xef\xbf\xbe"), std::string::npos) << "U+FFFE is not an XML character";
  EXPECT_EQ(out.find("\xc3\""), std::string::npos) << "a cut UTF-8 sequence is replaced";
  EXPECT_NE(out.find("case \xEF\xBF\xBD \xEF\xBF\xBD"), std::string::npos) << out;
}

TEST(PrintersTest, MarkdownCarriesNoHtmlAndACellCannotForgeARow) {
  const std::string out = make_printer("md")->render(hostile());
  EXPECT_EQ(out.find("<script"), std::string::npos) << out;
  EXPECT_EQ(out.find("<img"), std::string::npos) << out;
  EXPECT_NE(out.find("&lt;img src=x onerror=alert(1)> &"), std::string::npos) << out;
  EXPECT_FALSE(has_control(out, true)) << out;
  int table_lines = 0;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    table_lines += !line.empty() && line[0] == '|';
    EXPECT_NE(line.rfind("# forged", 0), 0u) << "a heading's newline starts no new heading";
  }
  EXPECT_EQ(table_lines, 2 + 4) << out;  // header, rule, four rows: the CR and LF inside a cell made none
}

TEST(PrintersTest, HtmlEscapesRecordTextAndDropsControls) {
  const std::string out = make_printer("html")->render(hostile());
  EXPECT_EQ(out.find("<script"), std::string::npos);
  EXPECT_EQ(out.find("<img src=x"), std::string::npos);
  EXPECT_FALSE(has_control(out, true));
}

TEST(PrintersTest, InertTextKeepsValidUtf8AndReplacesTheRest) {
  EXPECT_EQ(inert_text("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", true), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(inert_text("a\nb\tc\rd", false), "a b c d");
  EXPECT_EQ(inert_text("a\nb", true), "a\nb");
  EXPECT_EQ(inert_text("\xc0\xaf", true), "\xEF\xBF\xBD\xEF\xBF\xBD") << "overlong";
  EXPECT_EQ(inert_text("\xed\xa0\x80", true), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD") << "a surrogate";
  EXPECT_EQ(inert_text("\xe2\x82", true), "\xEF\xBF\xBD\xEF\xBF\xBD") << "cut short";
}

TEST(PrintersTest, CsvIsRfc4180WithRawNumbersAndEmptyMissingValues) {
  EXPECT_EQ(render("csv"),
            "name,samples_per_s,peak_reserved_bytes,mfu\n"
            "\"a, \"\"quoted\"\" | piped\",1234.56,1536,0.125\n"
            "b,,,0.5\n");
}

TEST(PrintersTest, JsonlHasOneObjectPerRowWithNullForMissing) {
  std::istringstream in(render("jsonl"));
  std::string line;
  std::vector<nlohmann::json> rows;
  while (std::getline(in, line)) rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["samples_per_s"], 1234.56);
  EXPECT_TRUE(rows[1]["samples_per_s"].is_null());
  EXPECT_EQ(rows[1]["name"], "b");
  EXPECT_TRUE(rows[0]["peak_reserved_bytes"].is_number_integer());  // bytes and counts stay integers
  EXPECT_TRUE(rows[0]["samples_per_s"].is_number_float());
}

TEST(PrintersTest, JsonWithoutADataPayloadHoldsTheTables) {
  const nlohmann::json j = nlohmann::json::parse(render("json"));
  EXPECT_EQ(j["schema"], "gpubench.test");
  EXPECT_EQ(j["tables"]["runs"][0]["mfu"], 0.125);
}

TEST(PrintersTest, HumanFormatsUseTheUnitHints) {
  const std::string md = render("md");
  EXPECT_NE(md.find("## Runs"), std::string::npos) << md;
  EXPECT_NE(md.find("| throughput (images/s) | peak reserved | MFU |"), std::string::npos) << md;
  EXPECT_NE(md.find("| a, \"quoted\" \\| piped | 1234.6 | 1.50 KiB | 12.5% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| b | - | - | 50.0% |"), std::string::npos) << md;
  const std::string console = render("console");
  EXPECT_NE(console.find("1.50 KiB"), std::string::npos) << console;
  EXPECT_NE(console.find("12.5%"), std::string::npos) << console;
  const std::string html = render("html");
  EXPECT_NE(html.find("<td>a, &quot;quoted&quot; | piped</td>"), std::string::npos) << html;
  EXPECT_NE(html.find("<td class=\"n\">1.50 KiB</td>"), std::string::npos) << html;
}

TEST(PrintersTest, JUnitPrintsTheCasesEscaped) {
  const std::string x = render("junit");
  EXPECT_NE(x.find("tests=\"1\" failures=\"1\""), std::string::npos) << x;
  EXPECT_NE(x.find("name=\"a &lt;1&gt;\""), std::string::npos) << x;
  EXPECT_NE(x.find("message=\"worse &amp; slower\""), std::string::npos) << x;
}

TEST(PrintersTest, FormatsByNameAndByExtension) {
  EXPECT_THROW(make_printer("yaml"), std::invalid_argument);
  EXPECT_EQ(format_for_path("out/r.md"), "md");
  EXPECT_EQ(format_for_path("r.xml"), "junit");
  EXPECT_EQ(format_for_path("r.jsonl"), "jsonl");
  EXPECT_EQ(format_for_path("dir.v2/noext"), "");
  EXPECT_EQ(format_value(1536, "bytes"), "1.50 KiB");
  EXPECT_EQ(format_value(0.5, "fraction"), "50.0%");
  EXPECT_EQ(format_value(6100.82, "images/s"), "6100.8");
  EXPECT_EQ(format_value(41.946, "ms"), "41.95");
}

TEST(PrintersTest, MultiplexWritesEveryDestination) {
  testing::TempDir dir("printers");
  const std::string md = (dir.path() / "a.md").string(), csv = (dir.path() / "a.csv").string();
  PrinterMultiplex mux;
  mux.add("md", md);
  mux.add("csv", csv);
  mux.print(sample());
  std::ifstream a(md), b(csv);
  std::stringstream sa, sb;
  sa << a.rdbuf();
  sb << b.rdbuf();
  EXPECT_EQ(sa.str(), render("md"));
  EXPECT_EQ(sb.str(), render("csv"));
  PrinterMultiplex bad;
  bad.add("md", "/proc/gpubench-no/x.md");
  EXPECT_THROW(bad.print(sample()), std::runtime_error);
}

}  // namespace
}  // namespace gpubench
