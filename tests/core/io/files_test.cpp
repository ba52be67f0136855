// One rule for every command's outputs (core/io/files.hpp's FileRoles): an output is never an input, a store or
// another output, whatever path, link or hard link names it.

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "common/temp_dir.h"
#include "gpubench/core/io/files.hpp"

namespace gpubench {
namespace {

void touch(const std::filesystem::path& p, const std::string& text = "{}") { std::ofstream(p) << text; }

std::string refusal(const FileRoles& roles) {
  try {
    roles.check();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(FileRolesTest, AnOutputThatIsAnInputByPathLinkOrHardLinkIsRefusedNamingBoth) {
  testing::TempDir dir("files");
  touch(dir / "a.json");
  ASSERT_EQ(::symlink((dir / "a.json").c_str(), (dir / "link.json").c_str()), 0);
  ASSERT_EQ(::link((dir / "a.json").c_str(), (dir / "hard.json").c_str()), 0);
  const std::string a = (dir / "a.json").string();
  for (const std::string& out : {a, (dir / "link.json").string(), (dir / "hard.json").string(),
                                (dir / "." / "a.json").string(), (dir / "sub" / ".." / "a.json").string()}) {
    std::filesystem::create_directories(dir / "sub");
    FileRoles roles;
    roles.input(a, "RECORDS");
    roles.output(out, "--out");
    const std::string why = refusal(roles);
    EXPECT_NE(why.find("--out " + out), std::string::npos) << why;
    EXPECT_NE(why.find("RECORDS"), std::string::npos) << why;
    EXPECT_NE(why.find("never writes over"), std::string::npos) << why;
  }
  FileRoles fine;
  fine.input(a, "RECORDS");
  fine.output((dir / "new.json").string(), "--out");
  fine.output((dir / "b.csv").string(), "--save");
  EXPECT_EQ(refusal(fine), "");
}

TEST(FileRolesTest, AStoreItsJournalsAndTheRecordsOfAFolderAreInputs) {
  testing::TempDir dir("files");
  touch(dir / "s.db", "SQLite format 3");
  std::filesystem::create_directories(dir / "runs");
  touch(dir / "runs" / "r1.json");
  touch(dir / "runs" / "notes.txt");
  for (const std::string out : {"s.db", "s.db-wal", "s.db-journal", "runs/r1.json"}) {
    FileRoles roles;
    roles.store((dir / "s.db").string(), "--db");
    roles.input((dir / "runs").string(), "RECORDS");
    roles.output((dir / out).string(), "--save");
    EXPECT_NE(refusal(roles), "") << out;
  }
  FileRoles other;
  other.store((dir / "s.db").string(), "--db");
  other.input((dir / "runs").string(), "RECORDS");
  other.output((dir / "runs" / "summary.json").string(), "--save");  // new: nothing is replaced
  EXPECT_EQ(refusal(other), "");
  // A folder's file the readers do not take (a report's groups.json beside the records) may be rewritten.
  touch(dir / "runs" / "groups.json");
  const auto is_record = [](const std::string& p) { return std::filesystem::path(p).filename() == "r1.json"; };
  FileRoles report;
  report.input((dir / "runs").string(), "RECORDS", is_record);
  report.output((dir / "runs" / "groups.json").string(), "--out");
  EXPECT_EQ(refusal(report), "");
  report.output((dir / "runs" / "r1.json").string(), "--save");
  EXPECT_NE(refusal(report), "");
  // Through a link placed elsewhere.
  ASSERT_EQ(::symlink((dir / "runs" / "r1.json").c_str(), (dir / "elsewhere.json").c_str()), 0);
  FileRoles linked;
  linked.input((dir / "runs").string(), "RECORDS", is_record);
  linked.output((dir / "elsewhere.json").string(), "--out");
  EXPECT_NE(refusal(linked), "");
}

TEST(FileRolesTest, EmptyNamesAndTwoOutputsToOneFileAreRefused) {
  testing::TempDir dir("files");
  FileRoles roles;
  EXPECT_THROW(roles.output("", "--json"), std::runtime_error);
  roles.output((dir / "x.md").string(), "--markdown");
  roles.output((dir / "." / "x.md").string(), "--save");
  const std::string why = refusal(roles);
  EXPECT_NE(why.find("one file cannot hold two outputs"), std::string::npos) << why;
}

TEST(FileRolesTest, SameFileFollowsLinksAndSeesThroughDotDot) {
  testing::TempDir dir("files");
  touch(dir / "x");
  std::filesystem::create_directories(dir / "d");
  ASSERT_EQ(::symlink((dir / "d").c_str(), (dir / "dl").c_str()), 0);
  EXPECT_TRUE(same_file((dir / "x").string(), (dir / "d" / ".." / "x").string()));
  EXPECT_TRUE(same_file((dir / "d" / "new").string(), (dir / "dl" / "new").string()));  // not yet made, via a link
  EXPECT_FALSE(same_file((dir / "x").string(), (dir / "y").string()));
  EXPECT_FALSE(same_file((dir / "d" / "new").string(), (dir / "d" / "other").string()));
}

TEST(StoreUrlTest, PasswordsNeverLeaveAUrlWhateverItsShape) {
  EXPECT_TRUE(is_store_url("postgresql://h/db"));
  EXPECT_TRUE(is_store_url("postgres://h/db"));
  EXPECT_FALSE(is_store_url("results.db"));
  EXPECT_FALSE(is_store_url("db:postgresql://h/db"));
  EXPECT_EQ(without_passwords("postgresql://ci:s3cret@db.example.org:5432/results?sslmode=require"),
            "postgresql://ci@db.example.org:5432/results?sslmode=require");
  EXPECT_EQ(without_passwords("postgresql://ci@h/r?password=s3cret&sslmode=require&sslpassword=k3y"),
            "postgresql://ci@h/r?sslmode=require");
  EXPECT_EQ(without_passwords("postgresql://ci:p%40ss:word@h/r"), "postgresql://ci@h/r");  // ':' and '@' inside
  EXPECT_EQ(without_passwords("postgres://h/r"), "postgres://h/r");
  EXPECT_EQ(without_passwords("postgresql:///r?host=/tmp/s&port=5433"), "postgresql:///r?host=/tmp/s&port=5433");
  // In a command line and a message, every URL, wherever it stands.
  EXPECT_EQ(without_passwords("gpubench run --db=postgresql://u:pw@h/d --out x && compare db:postgres://u:pw@h/d:last-3 y"),
            "gpubench run --db=postgresql://u@h/d --out x && compare db:postgres://u@h/d:last-3 y");
  EXPECT_EQ(without_passwords("results store \"postgresql://u:pw@h/d\": gone"), "results store \"postgresql://u@h/d\": gone");
  EXPECT_EQ(without_passwords("no url here"), "no url here");
  EXPECT_EQ(without_passwords("postgresql://"), "postgresql://");
}

}  // namespace
}  // namespace gpubench
