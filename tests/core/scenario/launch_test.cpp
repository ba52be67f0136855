#include <gtest/gtest.h>

#include <map>

#include "gpubench/core/scenario/launch.hpp"

namespace gpubench {
namespace {

RankInfo from(const std::map<std::string, std::string>& vars) {
  return rank_info_from_env([&](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  });
}

TEST(LaunchEnvTest, NoLauncherIsASingleProcess) {
  const RankInfo r = from({});
  EXPECT_FALSE(r.distributed());
  EXPECT_EQ(r.launcher, "none");
}

TEST(LaunchEnvTest, Torchrun) {
  const RankInfo r = from({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
                           {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "1234"}});
  EXPECT_EQ(r.launcher, "torchrun");
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.world_size, 8);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.local_world_size, 2);
  EXPECT_EQ(r.master_addr, "node0");
  EXPECT_EQ(r.master_port, 1234);
  EXPECT_TRUE(r.distributed());
  EXPECT_EQ(from({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"GPUBENCH_LAUNCHER", "gpubench"}}).launcher, "gpubench");
}

TEST(LaunchEnvTest, SlurmTakesTheFirstNodeOfTheStepAsMaster) {
  const RankInfo r = from({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"},
                           {"SLURM_NTASKS_PER_NODE", "4(x2)"}, {"SLURM_STEP_NODELIST", "gpu[07-08]"}});
  EXPECT_EQ(r.launcher, "slurm");
  EXPECT_EQ(r.rank, 5);
  EXPECT_EQ(r.world_size, 8);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.local_world_size, 4);
  EXPECT_EQ(r.master_addr, "gpu07");
  EXPECT_EQ(r.master_port, 29500);
  EXPECT_EQ(first_slurm_host("a1,b[2-3]"), "a1");
  EXPECT_EQ(first_slurm_host("node[12,14-15]"), "node12");
  EXPECT_EQ(first_slurm_host("solo"), "solo");
}

TEST(LaunchEnvTest, OpenMpi) {
  const RankInfo r = from({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                           {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  EXPECT_EQ(r.launcher, "mpirun");
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.master_addr, "127.0.0.1");  // one node: loopback
  // Across nodes the master cannot be guessed: say which variable to set.
  try {
    from({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("MASTER_ADDR"), std::string::npos);
  }
}

TEST(LaunchEnvTest, MalformedValuesNameTheVariable) {
  try {
    from({{"RANK", "one"}, {"WORLD_SIZE", "2"}});
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("RANK='one'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(from({{"RANK", "2"}, {"WORLD_SIZE", "2"}}), std::runtime_error);
  EXPECT_THROW(from({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}), std::runtime_error);
}

TEST(LaunchTest, TheLocalAddressIsTheOneOnTheRouteToTheRendezvousHost) {
  EXPECT_EQ(local_address_towards("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(local_address_towards("localhost").rfind("127.", 0) == 0 || local_address_towards("localhost") == "::1",
            true);
  EXPECT_EQ(local_address_towards("no-such-host.invalid"), "");  // unresolvable: the caller falls back
  EXPECT_EQ(from({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"GLOO_SOCKET_IFNAME", "eth1"}}).gloo_interface, "eth1");
  EXPECT_EQ(from({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}}).gloo_interface, "");
}

}  // namespace
}  // namespace gpubench
