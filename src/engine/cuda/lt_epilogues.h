#pragma once
// cuBLASLt GEMMs with work in their epilogue (GELU with its pre-activation kept, GELU's gradient with the bias
// gradient), for the fused MLP of `kernels: fused`. cuBLASLt is LibTorch's own (already loaded with libtorch_cuda);
// its entry points are looked up at run time, so gpubench links no second copy of it.

#include <ATen/ATen.h>

#include <string>

namespace gpubench::engine::fused::lt {

/// What the GEMM out = x w^T adds in its epilogue.
enum class Epilogue {
  kGeluAuxBias,  ///< out = gelu_tanh(x w^T + bias), aux = x w^T + bias (the pre-activation, for the backward pass)
  kDGeluBGrad,   ///< out = (x w^T) * gelu_tanh'(aux), bias = out's column sums (the bias gradient, in out's dtype)
};

/// out [rows, n] = epilogue(x [rows, k] w^T) on the current CUDA stream, with w [n, k] in either dense layout (rows
/// of [n, k], or the transpose of a row-major [k, n], as GPT-2's Conv1D stores it). x, out and aux contiguous, all of
/// one dtype, bf16 or fp16; bias [n] of that dtype. Returns false, having launched nothing, where cuBLASLt cannot be
/// found or offers no algorithm for the problem (the caller then computes the same with other kernels; status()
/// says why). The choice of algorithm is cached per problem shape.
bool gemm(Epilogue e, const at::Tensor& x, const at::Tensor& w, const at::Tensor& out, const at::Tensor& bias,
          const at::Tensor& aux);

/// For the record: "" while every call of this run has run on cuBLASLt's epilogues, else the first reason one did not.
std::string declined();

/// Whether any call has run on cuBLASLt's epilogues since the last forget_run().
bool used();

/// Starts a run's account afresh: declined() and used() then speak of this run only (a process runs several:
/// `run --repeat`). The algorithms chosen per shape are kept.
void forget_run();

}  // namespace gpubench::engine::fused::lt
