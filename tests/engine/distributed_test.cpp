// Data parallelism over Gloo on 127.0.0.1: two ranks (this test binary started twice as workers) must end with the
// parameters one process gets from the concatenated batch, whatever the bucket boundaries.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/functional/loss.h>
#include <torch/serialize.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "distributed.h"
#include "optimizers.h"

namespace gpubench::engine {
namespace {

constexpr int kSteps = 4;

torch::nn::Sequential make_mlp() {
  torch::manual_seed(7);
  return torch::nn::Sequential(torch::nn::Linear(8, 16), torch::nn::ReLU(), torch::nn::Linear(16, 3));
}

/// Rank r's data: 4 samples, different per rank.
std::pair<torch::Tensor, torch::Tensor> data_of(int r) {
  torch::manual_seed(100 + r);
  return {torch::randn({4, 8}), torch::randint(0, 3, {4})};
}

std::vector<torch::Tensor> detached(const std::vector<torch::Tensor>& ps) {
  std::vector<torch::Tensor> out;
  for (const auto& p : ps) out.push_back(p.detach().clone());
  return out;
}

TEST(BucketTest, StartsFollowTheCapAndGiveLargeParametersTheirOwnBucket) {
  EXPECT_EQ(bucket_starts({10, 10, 30, 5}, 20), (std::vector<size_t>{0, 2, 3}));
  EXPECT_EQ(bucket_starts({10, 10, 30, 5}, 1000), (std::vector<size_t>{0}));
  EXPECT_EQ(bucket_starts({1, 1, 1}, 1), (std::vector<size_t>{0, 1, 2}));
}

// Not a test on its own: the body of one rank, run when the parent test starts this binary with RANK set.
TEST(DataParallelTest, Worker) {
  const char* out = std::getenv("GPUBENCH_DP_OUT");
  if (out == nullptr) GTEST_SKIP() << "runs only as a rank started by TwoRanksMatchOneProcessOnTheWholeBatch";
  const RankInfo info = rank_info_from_process_env();
  Communicator comm(info, at::Device(at::kCPU), 30.0);
  auto mlp = make_mlp();
  comm.broadcast(mlp->parameters());
  GradientBuckets buckets(comm, mlp->parameters(), std::atof(std::getenv("GPUBENCH_DP_BUCKET_MB")));
  if (std::getenv("GPUBENCH_DP_EXPECT_BUCKETS") != nullptr) {
    EXPECT_EQ(buckets.bucket_count(), static_cast<size_t>(std::atoi(std::getenv("GPUBENCH_DP_EXPECT_BUCKETS"))));
  }
  FusedSgd opt(mlp->parameters(), SgdOptions{0.1, 0.9, 0.0, 1e-4, false});
  const auto [x, y] = data_of(info.rank);
  for (int s = 0; s < kSteps; ++s) {
    buckets.zero_grads();
    buckets.begin_micro_batch(true);
    torch::nn::functional::cross_entropy(mlp->forward(x), y).backward();
    buckets.finish();
    opt.step();
  }
  if (info.rank == 0) torch::save(detached(mlp->parameters()), out);
}

std::vector<torch::Tensor> run_two_ranks(double bucket_mb, int expect_buckets, const std::string& out, int port) {
  std::vector<pid_t> pids;
  for (int r = 0; r < 2; ++r) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setenv("RANK", std::to_string(r).c_str(), 1);
      ::setenv("WORLD_SIZE", "2", 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      ::setenv("GPUBENCH_DP_OUT", out.c_str(), 1);
      ::setenv("GPUBENCH_DP_BUCKET_MB", std::to_string(bucket_mb).c_str(), 1);
      ::setenv("GPUBENCH_DP_EXPECT_BUCKETS", std::to_string(expect_buckets).c_str(), 1);
      ::setenv("OMP_NUM_THREADS", "1", 1);
      ::execl("/proc/self/exe", "distributed_worker", "--gtest_filter=DataParallelTest.Worker", nullptr);
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  for (pid_t p : pids) {
    int st = 0;
    ::waitpid(p, &st, 0);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "a rank failed (status " << st << ")";
  }
  std::vector<torch::Tensor> params;
  torch::load(params, out);
  std::filesystem::remove(out);
  return params;
}

TEST(DataParallelTest, TwoRanksMatchOneProcessOnTheWholeBatchWhateverTheBuckets) {
  // One process, both ranks' samples in one batch (the mean over 8 samples = the mean of the two ranks' means).
  auto mlp = make_mlp();
  FusedSgd opt(mlp->parameters(), SgdOptions{0.1, 0.9, 0.0, 1e-4, false});
  const auto [x0, y0] = data_of(0);
  const auto [x1, y1] = data_of(1);
  const auto x = torch::cat({x0, x1}), y = torch::cat({y0, y1});
  for (int s = 0; s < kSteps; ++s) {
    opt.zero_grad();
    torch::nn::functional::cross_entropy(mlp->forward(x), y).backward();
    opt.step();
  }
  const auto expected = detached(mlp->parameters());
  const std::string out = (std::filesystem::temp_directory_path() / ("gpubench_dp_" + std::to_string(::getpid()))).string();
  // 4 parameters (two weights, two biases): one bucket for all, or one per parameter.
  int port = 20000 + ::getpid() % 20000;
  for (const auto& [mb, buckets] : std::vector<std::pair<double, int>>{{25.0, 1}, {1e-6, 4}}) {
    const auto got = run_two_ranks(mb, buckets, out, port++);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(torch::allclose(got[i], expected[i], 1e-5, 1e-6))
          << "bucket " << mb << " MiB, parameter " << i << " differs by "
          << (got[i] - expected[i]).abs().max().item<double>();
    }
  }
}

}  // namespace
}  // namespace gpubench::engine
