#include "cuda/lt_epilogues.h"

#include <ATen/cuda/CUDAContextLight.h>
#include <c10/cuda/CUDAStream.h>
#include <cublasLt.h>
#include <dlfcn.h>

#include <atomic>
#include <map>
#include <mutex>
#include <tuple>

namespace gpubench::engine::fused::lt {

namespace {

/// The cuBLASLt entry points used here, found in the process (LibTorch's copy) or, failing that, by soname.
struct Api {
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  std::string missing;  ///< empty when every entry point was found
};

template <typename F>
void find(void* lib, const char* name, F& f, std::string& missing) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  if (f == nullptr && missing.empty()) missing = std::string("cuBLASLt has no ") + name;
}

const Api& api() {
  static const Api a = [] {
    Api r;
    void* lib = RTLD_DEFAULT;
    if (dlsym(lib, "cublasLtMatmul") == nullptr) {
      for (const char* so : {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}) {
        if ((lib = dlopen(so, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
      }
      if (lib == nullptr) {
        r.missing = "cuBLASLt (libcublasLt) was not found in this process";
        return r;
      }
    }
    find(lib, "cublasLtMatmulDescCreate", r.desc_create, r.missing);
    find(lib, "cublasLtMatmulDescDestroy", r.desc_destroy, r.missing);
    find(lib, "cublasLtMatmulDescSetAttribute", r.desc_set, r.missing);
    find(lib, "cublasLtMatrixLayoutCreate", r.layout_create, r.missing);
    find(lib, "cublasLtMatrixLayoutDestroy", r.layout_destroy, r.missing);
    find(lib, "cublasLtMatmulPreferenceCreate", r.pref_create, r.missing);
    find(lib, "cublasLtMatmulPreferenceDestroy", r.pref_destroy, r.missing);
    find(lib, "cublasLtMatmulPreferenceSetAttribute", r.pref_set, r.missing);
    find(lib, "cublasLtMatmulAlgoGetHeuristic", r.heuristic, r.missing);
    find(lib, "cublasLtMatmul", r.matmul, r.missing);
    return r;
  }();
  return a;
}

std::mutex g_mutex;
std::string g_declined;  // guarded by g_mutex
std::atomic<bool> g_used{false};

bool decline(const std::string& why) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_declined.empty()) g_declined = why;
  return false;
}

/// Owns the descriptors of one call.
struct Descriptors {
  const Api& a;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  explicit Descriptors(const Api& api) : a(api) {}
  ~Descriptors() {
    if (pref) a.pref_destroy(pref);
    for (auto* l : {la, lb, ld}) {
      if (l) a.layout_destroy(l);
    }
    if (op) a.desc_destroy(op);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
};

/// A problem as cuBLASLt sees it (column-major): D [n x rows] = op(A) [n x k] * B [k x rows].
using Key = std::tuple<int, int, int64_t, int64_t, int64_t, bool, int64_t, int64_t>;
struct Choice {
  bool ok = false;
  cublasLtMatmulAlgo_t algo{};
};
std::map<Key, Choice> g_choices;  // guarded by g_mutex

}  // namespace

bool gemm(Epilogue e, const at::Tensor& x, const at::Tensor& w, const at::Tensor& out, const at::Tensor& bias,
          const at::Tensor& aux) {
  const Api& a = api();
  if (!a.missing.empty()) return decline(a.missing);
  const at::ScalarType st = x.scalar_type();
  if ((st != at::kBFloat16 && st != at::kHalf) || w.scalar_type() != st || out.scalar_type() != st ||
      aux.scalar_type() != st || bias.scalar_type() != st) {
    return decline("the cuBLASLt epilogues are used for bf16 and fp16 only");
  }
  const int64_t rows = x.size(0), k = x.size(1), n = out.size(1);
  // A = w: rows of [n, k] are column-major k x n (transposed by op), a transposed [k, n] is column-major n x k.
  bool transpose_a;
  int64_t lda;
  if (w.stride(1) == 1) {
    transpose_a = true;
    lda = w.stride(0);
  } else if (w.stride(0) == 1) {
    transpose_a = false;
    lda = w.stride(1);
  } else {
    return decline("the weight is not dense in either layout");
  }
  if (!x.is_contiguous() || !out.is_contiguous() || !aux.is_contiguous() || n % 8 != 0) {
    return decline("the epilogue's auxiliary matrix needs rows of a multiple of 8 elements, all operands dense");
  }
  const cudaDataType_t dt = st == at::kBFloat16 ? CUDA_R_16BF : CUDA_R_16F;
  const auto epilogue = e == Epilogue::kGeluAuxBias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_DGELU_BGRAD;
  Descriptors d(a);
  const cublasOperation_t op_a = transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = CUBLAS_OP_N;
  const void* bias_ptr = bias.data_ptr();
  void* aux_ptr = aux.data_ptr();
  const int64_t aux_ld = n;
  bool set = a.desc_create(&d.op, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS;
  set = set && a.desc_set(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)) == CUBLAS_STATUS_SUCCESS;
  set = set && a.desc_set(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)) == CUBLAS_STATUS_SUCCESS;
  set = set && a.desc_set(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)) == CUBLAS_STATUS_SUCCESS;
  set = set && a.desc_set(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr, sizeof(bias_ptr)) == CUBLAS_STATUS_SUCCESS;
  set = set &&
        a.desc_set(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux_ptr, sizeof(aux_ptr)) == CUBLAS_STATUS_SUCCESS;
  set = set && a.desc_set(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, sizeof(aux_ld)) == CUBLAS_STATUS_SUCCESS;
  set = set && a.layout_create(&d.la, dt, transpose_a ? k : n, transpose_a ? n : k, lda) == CUBLAS_STATUS_SUCCESS;
  set = set && a.layout_create(&d.lb, dt, k, rows, x.stride(0)) == CUBLAS_STATUS_SUCCESS;
  set = set && a.layout_create(&d.ld, dt, n, rows, n) == CUBLAS_STATUS_SUCCESS;
  if (!set) return decline("cuBLASLt refused the epilogue's descriptors");

  cublasLtHandle_t handle = at::cuda::getCurrentCUDABlasLtHandle();
  void* workspace = at::cuda::getCUDABlasLtWorkspace();
  const size_t workspace_bytes = at::cuda::getCUDABlasLtWorkspaceSize();
  const Key key{static_cast<int>(e), static_cast<int>(dt), rows, n, k, transpose_a, lda, x.stride(0)};
  Choice choice;
  bool known = false;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (auto it = g_choices.find(key); it != g_choices.end()) {
      choice = it->second;
      known = true;
    }
  }
  if (!known) {
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const bool ok =
        a.pref_create(&d.pref) == CUBLAS_STATUS_SUCCESS &&
        a.pref_set(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof(workspace_bytes)) ==
            CUBLAS_STATUS_SUCCESS &&
        a.heuristic(handle, d.op, d.la, d.lb, d.ld, d.ld, d.pref, 1, &result, &found) == CUBLAS_STATUS_SUCCESS &&
        found > 0;
    choice.ok = ok;
    if (ok) choice.algo = result.algo;
    std::lock_guard<std::mutex> lock(g_mutex);
    g_choices[key] = choice;
  }
  if (!choice.ok) {
    return decline(std::string("cuBLASLt offers no algorithm for the ") +
                   (e == Epilogue::kGeluAuxBias ? "GELU_AUX_BIAS" : "DGELU_BGRAD") + " epilogue at " +
                   std::to_string(rows) + " x " + std::to_string(k) + " x " + std::to_string(n));
  }
  const float alpha = 1.0f, beta = 0.0f;
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  if (a.matmul(handle, d.op, &alpha, w.data_ptr(), d.la, x.data_ptr(), d.lb, &beta, out.data_ptr(), d.ld,
               out.data_ptr(), d.ld, &choice.algo, workspace, workspace_bytes, stream) != CUBLAS_STATUS_SUCCESS) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_choices[key].ok = false;
    if (g_declined.empty()) g_declined = "cublasLtMatmul failed with the epilogue";
    return false;
  }
  g_used = true;
  return true;
}

std::string declined() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_declined;
}

bool used() { return g_used.load(); }

void forget_run() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_declined.clear();
  g_used = false;
}

}  // namespace gpubench::engine::fused::lt
