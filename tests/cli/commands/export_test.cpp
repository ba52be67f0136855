// `gpubench export`: records as tables pandas loads.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <utility>
#include <vector>

#include "cli/cli_fixture.h"
#include "gpubench/core/record/record_io.hpp"

namespace gpubench {
namespace {

bool has_pandas() { return std::system("/usr/bin/python3 -c 'import pandas' > /dev/null 2>&1") == 0; }

TEST_F(CliTest, ExportOfACommittedRecordLoadsInPandas) {
  if (!has_pandas()) GTEST_SKIP() << "python3-pandas is not installed (scripts/bootstrap.sh installs it)";
  const std::string csv = (dir_ / "e.csv").string(), jsonl = (dir_ / "e.jsonl").string();
  ASSERT_EQ(gpubench("export " + kCommitted + " --out " + csv).exit_code, 0);
  ASSERT_EQ(gpubench("export " + kCommitted + " --per run --format jsonl --out " + jsonl).exit_code, 0);
  // No gpubench code on the reading side: pandas alone, and the numbers are the record's.
  const std::string script = dir_.string() + "/check.py";
  std::ofstream(script) << "import json, sys, pandas as pd\n"
                           "r = json.load(open(sys.argv[1]))\n"
                           "e = pd.read_csv(sys.argv[2])\n"
                           "assert len(e) == len(r['epochs']), (len(e), len(r['epochs']))\n"
                           "assert abs(e['samples_per_s'][0] - r['epochs'][0]['samples_per_s']) < 1e-6\n"
                           "assert e['model'][0] == 'resnet50' and e['batch_size'][0] == 256\n"
                           "assert abs(e['joules_per_sample'][0] - r['epochs'][0]['telemetry']['joules_per_sample']) < 1e-9\n"
                           "j = pd.read_json(sys.argv[3], lines=True)\n"
                           "assert len(j) == 1 and abs(j['samples_per_s'][0] - r['summary']['samples_per_s']) < 1e-6\n"
                           "assert abs(j['step_time_p95_ms'][0] - r['summary']['step_time']['p95_ms']) < 1e-9\n"
                           "print('ok', e.shape, j.shape)\n";
  const std::string cmd = "/usr/bin/python3 " + script + " " + kCommitted + " " + csv + " " + jsonl + " > " +
                          (dir_ / "py.out").string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << slurp(dir_ / "py.out");
}

}  // namespace
}  // namespace gpubench
