#include "gpubench/core/record/host_facts.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gpubench
