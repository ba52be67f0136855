#include "gpubench/core/record/host_facts.hpp"
#include "gpubench/core/record/host_activity.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>

#include "common/temp_dir.h"

namespace gpubench {
namespace {

namespace fs = std::filesystem;

/// A fake /, /proc and /sys with what fill_host_facts reads.
class HostFactsTest : public ::testing::Test {
 protected:
  void put(const std::string& rel, const std::string& text) {
    const fs::path p = dir_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  HostPaths paths() const { return HostPaths{(dir_ / "proc").string(), (dir_ / "sys").string(), (dir_ / "root").string()}; }
  testing::TempDir dir_{"host_facts"};
};

TEST_F(HostFactsTest, MemoryGovernorContainerAndTheVariablesThatChangeSpeed) {
  put("proc/meminfo", "MemTotal:       24683064 kB\nMemFree:         1000 kB\n");
  put("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance\n");
  put("sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "performance\n");
  put("sys/devices/system/cpu/cpufreq/policy0/scaling_governor", "schedutil\n");  // not a cpuN folder
  put("root/.dockerenv", "");
  const char* env[] = {"CUDA_VISIBLE_DEVICES=1,0", "NCCL_ALGO=Ring", "TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT=1",
                       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "OMP_NUM_THREADS=8", "HOME=/root",
                       "PATH=/usr/bin", "=odd", "NOEQUALS", nullptr};
  EnvironmentRecord e;
  fill_host_facts(e, env, paths());
  EXPECT_EQ(e.host_memory_bytes, int64_t{24683064} * 1024);
  EXPECT_EQ(e.cpu_governor, "performance");
  EXPECT_EQ(e.container, "docker");
  EXPECT_EQ(e.variables, (std::map<std::string, std::string>{{"CUDA_VISIBLE_DEVICES", "1,0"},
                                                            {"NCCL_ALGO", "Ring"},
                                                            {"OMP_NUM_THREADS", "8"},
                                                            {"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"},
                                                            {"TORCH_CUDNN_V8_API_LRU_CACHE_LIMIT", "1"}}));
}

TEST_F(HostFactsTest, MixedGovernorsKubernetesAndNothingReadableStayHonest) {
  put("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance\n");
  put("sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "powersave\n");
  put("proc/1/cgroup", "0::/kubepods/besteffort/pod1234\n");
  EnvironmentRecord e;
  const char* none[] = {nullptr};
  fill_host_facts(e, none, paths());
  EXPECT_EQ(e.cpu_governor, "mixed: performance, powersave");
  EXPECT_EQ(e.container, "kubernetes");
  EXPECT_FALSE(e.host_memory_bytes.has_value());  // no meminfo: unknown, not 0

  EnvironmentRecord bare;
  fill_host_facts(bare, nullptr, HostPaths{"/nonexistent/proc", "/nonexistent/sys", "/nonexistent"});
  EXPECT_EQ(bare.cpu_governor, "");
  EXPECT_EQ(bare.container, "");
  EXPECT_TRUE(bare.variables.empty());
}

TEST_F(HostFactsTest, AHugeVariableIsCutNotCopiedWhole) {
  const std::string big = "NCCL_DEBUG_FILE=" + std::string(100000, 'x');
  const char* env[] = {big.c_str(), nullptr};
  EnvironmentRecord e;
  fill_host_facts(e, env, paths());
  EXPECT_LE(e.variables.at("NCCL_DEBUG_FILE").size(), 1030u);
}

TEST_F(HostFactsTest, Bf16InstructionsAreReadFromTheFirstCpusFlagsAndAOneDnnCapTurnsThemOff) {
  const std::string avx2 = "processor : 0\nflags : fpu sse2 avx avx2 fma avx512f\n";
  put("proc/cpuinfo", avx2);
  EXPECT_FALSE(cpu_bf16_support(paths(), "").native);
  EXPECT_EQ(cpu_bf16_support(paths(), "").evidence, "no AVX512-BF16 or AMX-BF16 instructions");
  put("proc/cpuinfo", "processor : 0\nflags : fpu avx2 avx512f avx512_bf16 amx_tile amx_bf16\n");
  EXPECT_TRUE(cpu_bf16_support(paths(), "").native);
  EXPECT_EQ(cpu_bf16_support(paths(), "").evidence, "amx_bf16");
  EXPECT_TRUE(cpu_bf16_support(paths(), "avx512_core_bf16").native);  // a cap at or above them keeps them
  EXPECT_FALSE(cpu_bf16_support(paths(), "avx2").native);
  EXPECT_NE(cpu_bf16_support(paths(), "AVX2").evidence.find("ONEDNN_MAX_CPU_ISA=AVX2"), std::string::npos);
  put("proc/cpuinfo", "processor : 0\nFeatures : fp asimd bf16 i8mm\n");  // Arm (Neoverse V1, Graviton 3)
  EXPECT_TRUE(cpu_bf16_support(paths(), "").native);
  put("proc/cpuinfo", "processor : 0\nFeatures : fp asimd crc32\n");
  EXPECT_FALSE(cpu_bf16_support(paths(), "").native);
  fs::remove(dir_ / "proc" / "cpuinfo");
  EXPECT_FALSE(cpu_bf16_support(paths(), "").native);
  EXPECT_NE(cpu_bf16_support(paths(), "").evidence.find("could not be read"), std::string::npos);
}

TEST_F(HostFactsTest, HostActivityIsTheHostsBusyTimeLessThisProcesssBetweenTwoReadings) {
  const long hz = sysconf(_SC_CLK_TCK);
  auto counters = [&](long busy_user, long steal, long own) {
    // cpu user nice system idle iowait irq softirq steal guest guest_nice (ticks)
    put("proc/stat", "cpu  " + std::to_string(busy_user) + " 0 " + std::to_string(hz) + " 99999 5 0 0 " +
                         std::to_string(steal) + " 0 0\ncpu0 1 2 3\n");
    // The comm holds a space and a parenthesis: the last ')' ends it. utime and stime are fields 14 and 15.
    put("proc/self/stat", "42 (my (app) x) R 1 42 42 0 -1 4194304 100 0 0 0 " + std::to_string(own) + " " +
                              std::to_string(hz) + " 0 0 20 0 8 0\n");
  };
  put("proc/loadavg", "3.10 2.00 1.00 3/200 4242\n");
  counters(10 * hz, 0, 2 * hz);
  HostSample a = sample_host(paths());
  ASSERT_TRUE(a.ok);
  counters(40 * hz, hz / 2, 12 * hz);  // 30 s more busy time, 10 s of it this process's; 0.5 s stolen
  HostSample b = sample_host(paths());
  b.wall_s = a.wall_s + 10;
  a.cpu_cores = b.cpu_cores = 2;
  const auto h = host_activity_between(a, b, 1, paths());
  ASSERT_TRUE(h.has_value());
  EXPECT_DOUBLE_EQ(h->seconds, 10);
  EXPECT_NEAR(h->own_cpu_s, 10, 1e-9);
  EXPECT_NEAR(h->other_cpu_s, 20, 1e-9);
  EXPECT_NEAR(h->steal_s, 0.5, 1e-9);
  EXPECT_DOUBLE_EQ(h->load_average_1m, 3.1);
  EXPECT_EQ(busy_host_reason(*h), "other processes used 2.0 of 2 cores (load 3.1)");
  // The job's own peer ranks on the host are not "others": two ranks at 1 core each, nothing else.
  HostActivity ranks = *h;
  ranks.own_cpu_s = 10;
  ranks.other_cpu_s = 10;
  ranks.job_processes = 2;
  EXPECT_EQ(busy_host_reason(ranks), "");
  // Unreadable /proc: nothing is recorded rather than a guess.
  fs::remove(dir_ / "proc" / "stat");
  EXPECT_FALSE(sample_host(paths()).ok);
  EXPECT_FALSE(host_activity_between(a, sample_host(paths())).has_value());
}

TEST_F(HostFactsTest, ABusyHostIsAQuarterCoreAndATenthOfTheFreeCoresOrFivePercentStolen) {
  HostActivity quiet{60, 2, 90, 0.6, 0, 1.9, 1};  // 0.01 cores of daemons beside a 1.5-core run
  EXPECT_EQ(busy_host_reason(quiet), "");
  HostActivity install = quiet;
  install.other_cpu_s = 24.4;  // a package install beside it: 0.41 cores
  EXPECT_EQ(busy_host_reason(install), "other processes used 0.4 of 2 cores (load 1.9)");
  HostActivity big{60, 128, 90, 600, 0, 12, 1};  // 10 cores of others on a 128-core GPU host: under a tenth
  EXPECT_EQ(busy_host_reason(big), "");
  big.other_cpu_s = 60 * 13.0;
  EXPECT_NE(busy_host_reason(big), "");
  HostActivity stolen = quiet;
  stolen.steal_s = 0.06 * 60 * 2;
  EXPECT_EQ(busy_host_reason(stolen), "a hypervisor stole 6 % of the CPU time");
  RunRecord r;
  r.epochs.resize(2);
  r.epochs[1].index = 1;
  r.epochs[1].host = install;
  EXPECT_EQ(busy_host_evidence(r), "epoch 2: other processes used 0.4 of 2 cores (load 1.9)");
  r.epochs[1].host = quiet;
  r.telemetry.other_processes = std::vector<GpuProcess>{GpuProcess{4242, "python", std::nullopt}};
  EXPECT_EQ(busy_host_evidence(r), "other processes on the GPU: pid 4242 python");
}

}  // namespace
}  // namespace gpubench
