#pragma once
// Data-parallel training on c10d: the process group (TCPStore rendezvous, NCCL on GPUs, Gloo on the CPU), and
// gradient buckets that all-reduce from autograd hooks so communication overlaps the backward pass.

#include <ATen/ATen.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "gpubench/core/scenario/launch.hpp"

namespace gpubench::engine {

/// This rank's process group plus liveness bookkeeping (a heartbeat thread publishes progress to the store so a
/// failure can name the rank that died or hung).
class Communicator {
 public:
  /// Rendezvous with the other ranks (rank 0 hosts the TCPStore) and create the backend for `device`:
  /// NCCL for CUDA devices, Gloo for the CPU. Throws std::runtime_error when the backend is not compiled in or
  /// the rendezvous times out.
  Communicator(const RankInfo& info, const at::Device& device, double timeout_s);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int world_size() const;
  const std::string& backend_name() const;
  const RankInfo& info() const;

  /// Copies rank 0's values into `tensors` on every rank (one broadcast per tensor; at start-up only).
  void broadcast(const std::vector<at::Tensor>& tensors);
  /// Every rank's `value`, indexed by rank (a synchronising collective).
  std::vector<double> gather(double value);
  /// Every rank's `text`, indexed by rank (a synchronising collective; text without NUL bytes, a few KB).
  std::vector<std::string> gather_text(const std::string& text);
  /// True on every rank if it is true on any rank (a synchronising collective).
  bool any(bool value);
  /// Asynchronous in-place sum all-reduce of one tensor; returns the work handle's wait function.
  void allreduce_async(at::Tensor& t);
  /// Waits for every all-reduce launched since the last call (on GPUs the current stream waits, the host does not).
  void wait_all();

  /// Steps this rank has finished, published by the heartbeat thread.
  void set_progress(int64_t steps) { progress_.store(steps, std::memory_order_relaxed); }
  /// After a failed collective: which ranks stopped publishing heartbeats (died) or fell behind (hung).
  std::string describe_unresponsive_ranks();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<int64_t> progress_{0};
};

/// Gradients as views into flat buckets; each bucket is all-reduced (averaged) as soon as all its gradients are
/// accumulated. Buckets follow reverse parameter order, the order backward produces gradients, as DDP's do.
class GradientBuckets {
 public:
  GradientBuckets(Communicator& comm, const std::vector<at::Tensor>& params, double bucket_mb);
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  /// Zeroes all gradients (one memset) and re-attaches them as bucket views; replaces optimizer.zero_grad().
  void zero_grads();
  /// Before each micro-batch's backward: only the last one of a step launches all-reduces.
  void begin_micro_batch(bool last);
  /// After the last backward: launches buckets not yet launched (unused parameters) and waits for all of them.
  void finish();
  size_t bucket_count() const;

  /// Time the compute stream waited for all-reduces after backward, summed over the epoch's steps (s).
  void begin_epoch(int64_t max_steps);
  double end_epoch_wait_seconds();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Splits parameter sizes (bytes, in reverse parameter order) into buckets of at most `cap_bytes` each (a
/// parameter larger than the cap gets a bucket of its own). Returns the first index of each bucket.
std::vector<size_t> bucket_starts(const std::vector<int64_t>& bytes_in_order, int64_t cap_bytes);

}  // namespace gpubench::engine
