// The record's account of `kernels: fused` (execution.fusions): one catalog entry per fused operation, with what its
// kernel does, what runs without one, and the kernel_options that steer it. The choices' part of each note comes from
// kernel_option_table() (the same table the loader, the resolver and the engine read), with this run's values.

#include <string>
#include <vector>

#include "decode/decode_ops.h"
#include "fused/fused_ops.h"
#include "gpubench/core/scenario/kernel_options.hpp"

#include "cuda/kernel_calls.h"

namespace gpubench::engine::fused {

namespace {

struct FusionEntry {
  std::string name;
  std::string kernel;             ///< what gpubench's kernel does
  std::string aten;               ///< what runs where there is no kernel, after "<why>: "
  std::string implementation_aten = "aten";
  std::vector<std::string> options = {};  ///< the kernel_options that steer it
  bool decode = false;            ///< a decode-step operation (bf16 and fp16 only)
};

std::string batch_norm_text(const std::string& n) {
  return std::string(n == "batch_norm_relu" ? "batch-norm and ReLU"
                     : n == "batch_norm"    ? "the downsample shortcuts' batch-norm (no ReLU)"
                                            : "batch-norm, the residual add and ReLU") +
         " in training, channels-last: the batch statistics in one read (fp64 sums across blocks, no finalising "
         "launch), the output in one pass" +
         (n == "batch_norm" ? "" : " writing the ReLU's mask as one byte per 8 elements") +
         "; backward, the two per-channel sums in one read and the input's" +
         (n == "batch_norm_add_relu" ? " and the residual's" : "") +
         " gradients in one pass (evaluation, NCHW tensors or channel counts not a multiple of 8: ATen's batch_norm" +
         (n == "batch_norm" ? "" : ", add and relu") + ")";
}

const std::vector<FusionEntry>& catalog() {
  static const std::vector<FusionEntry> entries = [] {
    const std::string one_node = "the ATen operations, in one autograd node";
    const std::string resnet_aten = "ATen's batch_norm, add and relu";
    std::vector<FusionEntry> e{
        {"linear_cross_entropy",
         "the LM head's GEMMs with the vocabulary padded to a multiple of 64, then softmax, loss and gradient in one "
         "pass, in place; no fp32 logits",
         "the same loss in chunks of tokens with ATen operations (no fp32 logits of the whole batch)",
         "aten (chunked)"},
        {"decode_gemv",
         "the decode step's matrix products by gpubench's GEMV, one pass over the weights with the input's norm, "
         "bias, GELU, SwiGLU (gate and up together) and the residual add in it, q, k and v as one product. On sm_90 "
         "and later, one sequence: over 8 MiB of weights or more (TinyLlama's output, gate/up and down products, the "
         "LM heads) the run GEMV (each warp of two blocks an SM streams its run of weight rows straight into "
         "registers), else over rows of at least 2,048 and 8 MiB or more the streamed GEMV (one block an SM, its "
         "weight rows copied into a ring of shared memory by bulk asynchronous copies, ~100 KB requested before the "
         "previous kernel ends), both reading their weights with L2's evict_first priority; otherwise the per-warp "
         "GEMV where it beats cuBLAS on the H200 (one sequence: every product but a large plain one; 2 to 8: rows of "
         "at most 1,024), cuBLAS with the residual as its C and one SwiGLU kernel elsewhere. On sm_90 and later each "
         "decode kernel is launched programmatically: it requests its weights while the kernel before it finishes",
         "the same operations by ATen", "aten", {"decode_run", "decode_stream", "decode_pdl", "decode_evict_first"},
         true},
        {"decode_norm",
         "the decode step's RMSNorm / LayerNorm, inside the GEMV that reads its output (gamma and beta folded into "
         "the weights, the row statistics summed beside the product); the final norm before cuBLAS's LM head is one "
         "kernel",
         "the same operations by ATen", "aten", {}, true},
        {"decode_attention",
         "one query per sequence over the keys in use, split over positions (64 or more a split), in one launch (up "
         "to 8 sequences, head_dim 64 or 128; FlashAttention or SDPA otherwise): for one sequence on sm_90 and later "
         "a thread block cluster per kv head, each block's keys and values whole in shared memory, copied before the "
         "previous kernel ends, the splits combined through the cluster's distributed shared memory; otherwise in "
         "tiles, the splits combined by the last block",
         "the same operations by ATen", "aten", {"attention_cluster_splits", "attention_min_split"}, true},
        {"decode_argmax",
         "the greedy choice (the first largest logit) of each sequence: where the run GEMV takes the LM head (sm_90, "
         "one sequence), inside its launch, whose last block also writes the token, the history and the next "
         "position; else two small launches, then the token, the history and the position by three ATen operations",
         "the same operations by ATen", "aten", {"decode_greedy_tail"}, true},
        {"decode_embed",
         "the step's input: the tokens' embedding rows (+ GPT-2's position row) in one programmatic launch, so the "
         "first product's weights stream in during it",
         "the same operations by ATen", "aten", {"decode_embed"}, true},
        {"decode_qkv_cache",
         "the new token's q, k and v split, rotated (llama's rotary embeddings) and written to the cache: in the "
         "streamed GEMV's epilogue where that GEMV takes the q/k/v product (each warp computes a rotary pair of rows; "
         "no q/k/v product in memory, no launch of its own); without rotary embeddings (GPT-2, one sequence, sm_90), "
         "in the decode attention's cluster form, which reads q, k and v from the product and writes k and v into "
         "the cache; else one kernel",
         "the same operations by ATen", "aten", {}, true},
        {"batch_norm_relu", batch_norm_text("batch_norm_relu"), resnet_aten},
        {"batch_norm_add_relu", batch_norm_text("batch_norm_add_relu"), resnet_aten},
        {"batch_norm", batch_norm_text("batch_norm"), resnet_aten},
        {"max_pool",
         "the stem's 3 x 3 max pool, channels-last: the forward pass keeps each maximum's window position as one "
         "byte, the backward pass gathers each input's gradient from the windows that chose it (no scatter, no "
         "atomics; NCHW tensors: ATen's max_pool2d)",
         "ATen's max_pool2d"},
        {"swiglu", "silu(gate) * up and its gradient, one pass each", one_node},
        {"rotary", "q and k rotated together, one pass each way", one_node},
        {"geglu",
         "a * gelu(gate) over the two halves of the projection and its gradient, one pass each (the gradient written "
         "as one tensor, no concatenation)",
         one_node},
        {"linear_add_layer_norm",
         "the output projection by cuBLAS (bias in the epilogue), the residual add and the next LayerNorm in one "
         "pass writing the residual stream and the normalised input of the next sub-layer in the compute dtype; "
         "backward, one pass with the stream's own gradient added (rows of up to 1,536 elements; ATen's operations "
         "beyond)",
         one_node},
        {"linear_qkv",
         "the query, key and value projections of one input by cuBLAS (bias in the epilogue); backward, the input "
         "gradient accumulated by the three GEMMs in one buffer, the weight gradients written in fp32 and the bias "
         "gradients by one column-sum pass each",
         one_node},
        {"linear_gelu",
         "the linear layer by cuBLAS with its bias in the epilogue and ATen's GELU; backward, GELU's gradient and the "
         "bias gradient in one pass",
         one_node},
        {"add_rms_norm",
         "the residual add and the next RMSNorm in one pass writing the residual stream and the normalised input of "
         "the next sub-layer in the compute dtype; backward, one pass with the stream's own gradient added and "
         "gamma's gradient summed per block (rows of up to 8,192 elements; ATen's operations beyond)",
         one_node},
        {"mlp_add_layer_norm",
         "the MLP (c_fc, GELU tanh, c_proj) as one operation: c_fc by cuBLASLt with bias + GELU in its epilogue "
         "keeping the pre-activation (GELU_AUX_BIAS); backward, GELU's derivative and c_fc's bias gradient in the "
         "epilogue of the GEMM giving c_fc's output gradient (DGELU_BGRAD); c_proj's output with dropout, the "
         "residual add and the next LayerNorm in one pass each way, the residual stream in the compute dtype "
         "(bf16/fp16; fp32 runs the GEMMs and gpubench's GELU kernels)",
         one_node},
        {"linear_dropout_add_layer_norm",
         "the linear layer by cuBLAS with its bias in the epilogue, then dropout (the CUDA generator's Philox "
         "stream), the residual add and LayerNorm in one pass writing the compute dtype (the residual stream stays "
         "in it, no fp32 copies); backward, one pass giving the input, residual, gamma, beta and bias gradients (rows "
         "of up to 1,536 elements; ATen's operations beyond)",
         one_node},
    };
    return e;
  }();
  return entries;
}

/// The entry for `name`; the last (the linear + dropout + residual + LayerNorm form) for a name not listed, as the
/// prose did before the catalog existed.
const FusionEntry& entry(const std::string& name) {
  for (const auto& e : catalog()) {
    if (e.name == name) return e;
  }
  return catalog().back();
}

/// "; kernel_options: decode_run auto, decode_stream auto": the run's values of the options that steer an entry.
std::string choices(const FusionEntry& e, const KernelOptions& options) {
  std::string out;
  for (const auto& name : e.options) {
    const KernelOptionInfo* info = find_kernel_option(name);
    if (info == nullptr) continue;
    const nlohmann::json v = info->get(options);
    out += (out.empty() ? "; kernel_options: " : ", ") + name + " " + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

}  // namespace

std::vector<FusionRecord> describe(const std::vector<std::string>& names, const at::Device& device,
                                   const KernelOptions& options) {
  std::vector<FusionRecord> out;
  const bool kernels = device.is_cuda() && cuda_kernels_compiled();
  const std::string why = device.is_cuda() ? "this gpubench was built without nvcc" : "no kernel for " + device.str();
  for (const auto& n : names) {
    const FusionEntry& e = entry(n);
    FusionRecord f;
    f.name = n;
    f.implementation = kernels ? "cuda kernel" : e.implementation_aten;
    if (!kernels) {
      f.note = why + ": " + e.aten;
    } else {
      f.note = e.kernel + (e.decode ? " (bf16 and fp16; fp32 runs the ATen operations)" : "") + choices(e, options);
      if (e.decode) f.note += cuda_ops::decode_choices_this_run(n);
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace gpubench::engine::fused
