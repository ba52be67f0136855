// Multi-process runs: --nproc-per-node, mpirun and SLURM starting ranks, and ranks that die.

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

TEST_F(CliTest, TwoCpuRanksTrainDataParallelAndRankZeroWritesTheOneRecord) {
  const std::string out = (dir_ / "ddp" / "tiny.json").string();
  const Result r = gpubench("run --config " + tiny() + " --device cpu --epochs 2 --dataset-size 32 --nproc-per-node 2 "
                            "--ddp-timeout 60s --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(j["status"], "ok");
  const auto& d = j["distributed"];
  EXPECT_EQ(d["world_size"], 2);
  EXPECT_EQ(d["backend"], "gloo");
  EXPECT_EQ(d["launcher"], "gpubench");
  ASSERT_EQ(d["rank_epoch_seconds"].size(), 2u);
  for (const auto& e : d["rank_epoch_seconds"]) EXPECT_EQ(e.size(), 2u);
  ASSERT_EQ(d["rank_comm_wait_seconds"].size(), 2u);
  // An epoch is dataset_size samples over both ranks: 32 / (4 per rank x 2 ranks) = 4 steps of 8 samples.
  for (const auto& e : j["epochs"]) {
    EXPECT_EQ(e["steps"], 4);
    EXPECT_EQ(e["samples"], 32);
    double slowest = 0;
    for (const auto& v : d["rank_epoch_seconds"][e["index"].get<int>()]) slowest = std::max(slowest, v.get<double>());
    EXPECT_DOUBLE_EQ(e["seconds"].get<double>(), slowest);
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "ddp"), {}), 1);  // rank 1 wrote nothing
}

TEST_F(CliTest, ProfileInATwoRankJobIsRankZerosAndNobodyHangs) {
  // Every rank takes the profiled steps (they all-reduce); rank 0 profiles them and writes the one record and trace.
  const std::string out = (dir_ / "ddp_prof" / "tiny.json").string();
  const Result r = gpubench("run --config " + tiny() + " --device cpu --epochs 1 --dataset-size 16 --nproc-per-node 2 "
                            "--ddp-timeout 60s --profile --profile-steps 2 --output " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const RunRecord rec = read_record(out);
  ASSERT_TRUE(rec.profile.has_value());
  EXPECT_EQ(rec.profile->steps, 2);
  bool communication = false;  // Gloo's all-reduces are CPU operators in rank 0's profile
  for (const auto& c : rec.profile->categories) communication = communication || c.category == "communication";
  EXPECT_TRUE(communication);
  EXPECT_TRUE(fs::exists(dir_ / "ddp_prof" / "tiny.trace.json"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "ddp_prof"), {}), 2);  // record + trace: rank 1 wrote nothing
}

TEST_F(CliTest, MpirunStartsTwoRanksThatTrainTogetherAndWriteOneRecord) {
  // A real Open MPI job (scripts/bootstrap.sh installs openmpi-bin): mpirun starts both processes, gpubench reads
  // OMPI_COMM_WORLD_* and rendezvouses over TCP, Gloo carries the all-reduces over loopback.
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun is not installed";
  const std::string out = (dir_ / "mpi" / "tiny.json").string();
  const std::string cmd = "timeout 240 mpirun --allow-run-as-root --oversubscribe -np 2 -x MASTER_ADDR=127.0.0.1 "
                          "-x MASTER_PORT=" + std::to_string(29600 + ::getpid() % 300) + " " + GPUBENCH_BINARY +
                          " run --config " + tiny() + " --device cpu --epochs 1 --dataset-size 16 --ddp-timeout 60s "
                          "--output " + out + " > " + (dir_ / "mpi.out").string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(dir_ / "mpi.out");
  const RunRecord r = read_record(out);
  EXPECT_EQ(r.status, RunStatus::kOk);
  ASSERT_TRUE(r.distributed.has_value());
  EXPECT_EQ(r.distributed->world_size, 2);
  EXPECT_EQ(r.distributed->launcher, "mpirun");
  EXPECT_EQ(r.distributed->backend, "gloo");
  ASSERT_EQ(r.distributed->rank_epoch_seconds.size(), 1u);
  EXPECT_EQ(r.distributed->rank_epoch_seconds[0].size(), 2u);  // both ranks' figures
  EXPECT_EQ(r.epochs[0].samples, 16);                          // 2 steps of 4 per rank x 2 ranks
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "mpi"), {}), 1);  // rank 1 wrote nothing
}

TEST_F(CliTest, UnderMpirunARankKilledEndsTheJobWithAFailedRecordThatNamesIt) {
  if (std::system("command -v mpirun > /dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun is not installed";
  const std::string out = (dir_ / "mpi" / "killed.json").string();
  const std::string cmd = "timeout 240 mpirun --allow-run-as-root --oversubscribe -np 2 -x MASTER_ADDR=127.0.0.1 "
                          "-x MASTER_PORT=" + std::to_string(29300 + ::getpid() % 300) +
                          " -x GPUBENCH_FAULT_INJECT=kill-rank:1:step:3 " + GPUBENCH_BINARY + " run --config " + tiny() +
                          " --device cpu --epochs 2 --dataset-size 32 --ddp-timeout 30s --output " + out + " > " +
                          (dir_ / "mpi.out").string() + " 2>&1";
  const auto t0 = std::chrono::steady_clock::now();
  const int status = std::system(cmd.c_str());
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 0);  // mpirun reports the killed process
  EXPECT_NE(WEXITSTATUS(status), 124) << "the job hung until the test's timeout";
  EXPECT_LT(took, 30 + 60.0);          // within --ddp-timeout (plus start-up on a loaded machine)
  const RunRecord r = read_record(out);
  EXPECT_EQ(r.status, RunStatus::kFailed);
  EXPECT_NE(r.reason.find("rank 1"), std::string::npos) << r.reason;
}

/// A single-node SLURM cluster started for one test (scripts/slurm_local.sh) and stopped, by its pids, when the test
/// ends, passes or fails.
class LocalSlurm {
 public:
  explicit LocalSlurm(const fs::path& dir) : dir_(dir) {
    const std::string script = std::string(GPUBENCH_SOURCE_DIR) + "/scripts/slurm_local.sh";
    const std::string cmd = "SLURM_LOCAL_PORT=" + std::to_string(17000 + ::getpid() % 2000 * 2) + " " + script +
                            " start " + dir.string() + " > " + (dir.parent_path() / "slurm_start.log").string() + " 2>&1";
    started_ = std::system(cmd.c_str()) == 0;
  }
  ~LocalSlurm() {
    const std::string cmd = std::string(GPUBENCH_SOURCE_DIR) + "/scripts/slurm_local.sh stop " + dir_.string();
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "could not stop the test's SLURM daemons\n");
  }
  bool started() const { return started_; }
  std::string env() const { return "SLURM_CONF=" + (dir_ / "slurm.conf").string() + " OMP_NUM_THREADS=1 "; }

 private:
  fs::path dir_;
  bool started_ = false;
};

TEST_F(CliTest, SlurmSrunAndTheShippedSbatchScriptRunATwoRankJob) {
  if (std::system("command -v slurmctld > /dev/null 2>&1 && command -v srun > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "slurm-wlm is not installed";
  }
  if (::geteuid() != 0) GTEST_SKIP() << "a throwaway slurmd must run as root";
  LocalSlurm slurm(dir_ / "slurm");
  ASSERT_TRUE(slurm.started()) << slurp(dir_ / "slurm_start.log") << slurp(dir_ / "slurm" / "slurmctld.log")
                               << slurp(dir_ / "slurm" / "slurmd.log");
  const std::string flags = " --config " + tiny() + " --device cpu --epochs 1 --dataset-size 16 --ddp-timeout 60s";
  const std::string run = " run" + flags;
  // srun -N1 -n2: two tasks of one step, ranks from SLURM_PROCID/SLURM_NTASKS.
  const std::string out = (dir_ / "srun" / "tiny.json").string();
  const std::string srun = slurm.env() + "MASTER_PORT=" + std::to_string(29000 + ::getpid() % 500) +
                           " timeout 300 srun -N1 -n2 " + GPUBENCH_BINARY + run + " --output " + out + " > " +
                           (dir_ / "srun.out").string() + " 2>&1";
  ASSERT_EQ(std::system(srun.c_str()), 0) << slurp(dir_ / "srun.out");
  const RunRecord r = read_record(out);
  EXPECT_EQ(r.status, RunStatus::kOk);
  ASSERT_TRUE(r.distributed.has_value());
  EXPECT_EQ(r.distributed->world_size, 2);
  EXPECT_EQ(r.distributed->launcher, "slurm");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "srun"), {}), 1);
  // The sbatch script users copy, as a batch job (sbatch --wait returns the job's exit code).
  const std::string batch_out = (dir_ / "sbatch" / "tiny.json").string();
  fs::create_directories(dir_ / "sbatch");
  const std::string sbatch = slurm.env() + "GPUBENCH=" + GPUBENCH_BINARY + " MASTER_PORT=" +
                             std::to_string(29500 + ::getpid() % 400) + " timeout 300 sbatch --wait -N1 -n2 --output " +
                             (dir_ / "sbatch.out").string() + " " + GPUBENCH_SOURCE_DIR + "/scripts/gpubench.sbatch" +
                             flags + " --output " + batch_out + " > " + (dir_ / "sbatch.submit").string() + " 2>&1";
  ASSERT_EQ(std::system(sbatch.c_str()), 0) << slurp(dir_ / "sbatch.submit") << slurp(dir_ / "sbatch.out");
  const RunRecord b = read_record(batch_out);
  EXPECT_EQ(b.status, RunStatus::kOk);
  ASSERT_TRUE(b.distributed.has_value());
  EXPECT_EQ(b.distributed->world_size, 2);
  EXPECT_EQ(b.distributed->launcher, "slurm");
  // A rank killed under srun: the job ends within --ddp-timeout and rank 0's failed record names the rank.
  const std::string killed = (dir_ / "srun" / "killed.json").string();
  const std::string kill = slurm.env() + "GPUBENCH_FAULT_INJECT=kill-rank:1:step:3 MASTER_PORT=" +
                           std::to_string(28500 + ::getpid() % 400) + " timeout 300 srun -N1 -n2 " + GPUBENCH_BINARY +
                           " run --config " + tiny() + " --device cpu --epochs 2 --dataset-size 32 --ddp-timeout 30s"
                           " --output " + killed + " > " + (dir_ / "kill.out").string() + " 2>&1";
  const int status = std::system(kill.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 0);
  EXPECT_NE(WEXITSTATUS(status), 124) << "the job hung until the test's timeout";
  const RunRecord k = read_record(killed);
  EXPECT_EQ(k.status, RunStatus::kFailed);
  EXPECT_NE(k.reason.find("rank 1"), std::string::npos) << k.reason;
}

TEST_F(CliTest, AMultiGpuJobsEnergyIsEveryRanksGpuSummedWithPerRankFigures) {
  // Two Gloo ranks, each reading "its GPU" through the scripted NVML stand-in: rank 0's board draws 200 W, rank 1's
  // 300 W (no energy counter, so energy is integrated power). The job draws 500 W, and J/sample counts both.
  std::ofstream(dir_ / "rank0.txt") << "200000 0 1900 2619 50 90 50 0\n";
  std::ofstream(dir_ / "rank1.txt") << "300000 0 1700 2619 60 90 50 0\n";
  const std::string out = (dir_ / "energy.json").string();
  const Result r = gpubench("run --config " + tiny() + " --device cpu --epochs 2 --dataset-size 32 --nproc-per-node 2 "
                            "--ddp-timeout 60s --telemetry-interval 20ms --output " + out,
                            "GPUBENCH_TELEMETRY_READER=nvml GPUBENCH_NVML_LIBRARY=" + std::string(GPUBENCH_FAKE_NVML) +
                                " FAKE_NVML_SCRIPT_RANK0=" + (dir_ / "rank0.txt").string() +
                                " FAKE_NVML_SCRIPT_RANK1=" + (dir_ / "rank1.txt").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const RunRecord rec = read_record(out);
  ASSERT_EQ(rec.epochs.size(), 2u);
  double job_joules = 0;
  for (const auto& e : rec.epochs) {
    ASSERT_EQ(e.rank_telemetry.size(), 2u);
    const EpochTelemetry& r0 = e.rank_telemetry[0];
    const EpochTelemetry& r1 = e.rank_telemetry[1];
    EXPECT_NEAR(*r0.power_avg_w, 200.0, 1e-9);  // time-weighted means: rounding
    EXPECT_NEAR(*r1.power_avg_w, 300.0, 1e-9);
    ASSERT_TRUE(e.telemetry.has_value());
    EXPECT_EQ(e.telemetry->devices, 2);
    EXPECT_NEAR(*e.telemetry->power_avg_w, 500.0, 1e-9);
    EXPECT_NEAR(*e.telemetry->energy_j, *r0.energy_j + *r1.energy_j, 1e-9 * *e.telemetry->energy_j);
    EXPECT_NEAR(*e.telemetry->joules_per_sample, *e.telemetry->energy_j / 32.0, 1e-12 * *e.telemetry->energy_j);  // all 32 samples, both ranks
    EXPECT_NEAR(*e.telemetry->sm_clock_avg_mhz, 1800.0, 1e-9);
    EXPECT_DOUBLE_EQ(*e.telemetry->temperature_peak_c, 60.0);
    job_joules += *e.telemetry->energy_j;
  }
  EXPECT_EQ(rec.summary.power_devices, 2);
  EXPECT_NEAR(*rec.summary.energy_j, job_joules, 1e-9 * job_joules);
  EXPECT_NEAR(*rec.summary.joules_per_sample, job_joules / 64.0, 1e-12);
  EXPECT_NE(r.err.find("2 GPUs, 500 W total"), std::string::npos) << r.err;
}

/// Processes whose command line contains `marker` (to check that no rank outlives the launcher).
int processes_with(const std::string& marker) {
  int n = 0;
  for (const auto& p : fs::directory_iterator("/proc")) {
    std::ifstream in(p.path() / "cmdline");
    std::string cmd((std::istreambuf_iterator<char>(in)), {});
    if (cmd.find(marker) != std::string::npos && cmd.find("gpubench") != std::string::npos) ++n;
  }
  return n;
}

TEST_F(CliTest, AKilledRankEndsEveryRankWithAFailedRecordNamingIt) {
  const std::string out = (dir_ / "killed.json").string();
  const std::string marker = "killed-rank-" + std::to_string(::getpid());
  const auto t0 = std::chrono::steady_clock::now();
  const Result r = gpubench("run --config " + tiny() + " --device cpu --epochs 3 --dataset-size 64 --nproc-per-node 2 "
                            "--ddp-timeout 20s --name " + marker + " --output " + out,
                            "GPUBENCH_FAULT_INJECT=kill-rank:1:step:3");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_LT(seconds, 120.0);  // the 20 s collective timeout plus start-up, not a hang
  const RunRecord rec = read_record(out);
  EXPECT_EQ(rec.status, RunStatus::kFailed);
  std::string all = rec.reason;
  for (const auto& n : rec.notes) all += " | " + n;
  EXPECT_NE(all.find("rank 1"), std::string::npos) << all;
  EXPECT_NE(r.err.find("rank 1 was killed by signal 9"), std::string::npos) << r.err;
  EXPECT_EQ(processes_with(marker), 0);
}

}  // namespace
}  // namespace gpubench
