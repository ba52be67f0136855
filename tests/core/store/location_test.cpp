// A store's name parsed once (store/location.hpp) and secrets kept in (io/redact.hpp).

#include "gpubench/core/store/location.hpp"

#include <gtest/gtest.h>

#include "gpubench/core/io/redact.hpp"

namespace gpubench {
namespace {

using Params = std::vector<std::pair<std::string, std::string>>;

TEST(StoreLocationTest, APostgresUrlIsTakenApartAsLibpqWould) {
  const StoreLocation a = StoreLocation::parse("postgresql://ci:p%20w%25d@db.example.org:5433/results?sslmode=require");
  EXPECT_TRUE(a.is_postgres());
  EXPECT_EQ(a.display(), "postgresql://ci@db.example.org:5433/results?sslmode=require");
  EXPECT_EQ(a.connection_parameters(), (Params{{"user", "ci"}, {"password", "p w%d"}, {"host", "db.example.org"},
                                               {"port", "5433"}, {"dbname", "results"}, {"sslmode", "require"}}));
  // A percent-encoded key is libpq's `password` too; a capitalised scheme is a URL; hosts and IPv6.
  const StoreLocation b = StoreLocation::parse("POSTGRES://ci@[::1]:5432,h2/db?pass%77ord=s%40cret&application_name=x");
  EXPECT_EQ(b.display(), "postgres://ci@[::1]:5432,h2/db?application_name=x");
  EXPECT_EQ(b.connection_parameters(), (Params{{"user", "ci"}, {"host", "::1,h2"}, {"port", "5432,"}, {"dbname", "db"},
                                               {"password", "s@cret"}, {"application_name", "x"}}));
  // The last '@' before the path ends the credentials; '#' is a character.
  EXPECT_EQ(StoreLocation::parse("postgresql://u:p@ss#1@h/db").connection_parameters().at(1).second, "p@ss#1");
}

TEST(StoreLocationTest, AMalformedUrlIsRefusedWithoutItsPassword) {
  for (const std::string url : {"postgresql://u:p%zzsecret@h/db", "postgresql://u:sec/ret@h/db",
                                "postgresql://u:sec?ret@h/db", "postgresql://u@h/db?password=sec%zret",
                                "postgresql://u:secret@h:port/db", "postgresql://u:secret@[::1/db",
                                "postgresql://h/db?user=a@b&password=secret", "postgresql://u:secret@h/db?novalue"}) {
    try {
      (void)StoreLocation::parse(url);
      ADD_FAILURE() << url << " was accepted";
    } catch (const StoreLocationError& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.find("sec"), std::string::npos) << m;
      EXPECT_EQ(m.find("zz"), std::string::npos) << m;
      EXPECT_NE(m.find("postgresql://***"), std::string::npos) << m;
    }
  }
}

TEST(StoreLocationTest, EverythingElseIsAFileName) {
  for (const std::string name : {"a#b.db", "c?mode=memory", ":memory:", "file:x.db", "postgresql:/one-slash.db"}) {
    const StoreLocation s = StoreLocation::parse(name);
    EXPECT_FALSE(s.is_postgres()) << name;
    EXPECT_EQ(s.path(), name);
    EXPECT_EQ(s.display(), name);
  }
  EXPECT_THROW(StoreLocation::parse(""), StoreLocationError);
  try {
    (void)StoreLocation::parse("host=db user=ci password=hunter2");
    ADD_FAILURE() << "a libpq key=value string was taken as a file name";
  } catch (const StoreLocationError& e) {
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
  }
}

TEST(RedactTest, NoSpellingOfAPasswordSurvives) {
  forget_secrets();
  // A space cuts a URL in free text: the registered secret is what finds it.
  register_secrets_in_argument("--db=postgresql://u:pa ss%21@h/db");
  EXPECT_EQ(without_passwords("cannot reach postgresql://u:pa ss%21@h/db (timeout)"),
            "cannot reach postgresql://u@h/db (timeout)");
  EXPECT_EQ(without_passwords("libpq: authentication failed for pa ss! and pa ss%21"),
            "libpq: authentication failed for *** and ***");
  EXPECT_EQ(without_passwords("postgresql://u@h/db?pass%77ord=x1y2z3&sslmode=disable"),
            "postgresql://u@h/db?sslmode=disable");
  EXPECT_EQ(without_passwords("host=h PASSWORD='a b' sslpassword=k3y"), "host=h PASSWORD=*** sslpassword=***");
  EXPECT_EQ(without_passwords("Postgresql://u:zz%zz@h"), "postgresql://***");
  const std::string once = without_passwords("postgresql://u:secret@h:5/d?x=1 and postgres://v@w");
  EXPECT_EQ(once, "postgresql://u@h:5/d?x=1 and postgres://v@w");
  EXPECT_EQ(without_passwords(once), once);
  forget_secrets();
}

}  // namespace
}  // namespace gpubench
