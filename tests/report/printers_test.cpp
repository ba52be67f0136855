// The printers (document.hpp): one document, each format's rules.

#include <gtest/gtest.h>

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
