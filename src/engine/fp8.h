#pragma once
// FP8 training's building blocks (issue #30): the recipe, scales from amax (current or delayed), saturating casts,
// which Linear layers may run in FP8, and the FP8 linear layer itself through at::_scaled_mm (forward e4m3 x e4m3,
// backward with the gradient in the recipe's format), with master weights and the output in the compute dtype.
// Plain tensor code: every scale stays on the device (no host synchronisation) and the CPU runs the same operations
// (ATen has a CPU _scaled_mm), so the tests need no GPU.

#include <ATen/ATen.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cuda/kernel_calls.h"

namespace gpubench::engine::fp8 {

enum class Format { kE4M3, kE5M2 };
enum class Scaling { kTensor, kRowwise, kDelayed };

/// How FP8 is applied: activations and weights always e4m3 (the format with the precision the forward pass needs);
/// gradients e5m2 by default (their range, as Transformer Engine's HYBRID recipe) or e4m3.
struct Recipe {
  Format grad_format = Format::kE5M2;
  /// tensor: one scale per tensor from its current amax (default); rowwise: one per row of the activations and of
  /// the weight in the forward product (the backward products per tensor); delayed: per tensor, from the largest
  /// amax of the last `amax_history` steps.
  Scaling scaling = Scaling::kTensor;
  int64_t amax_history = 16;
  bool include_lm_head = false;     ///< convert the LM head too (off by default)
  bool include_classifier = false;  ///< convert a classifier head too (off by default)
};

std::string name(Format f);   ///< "e4m3" | "e5m2"
std::string name(Scaling s);  ///< "tensor" | "rowwise" | "delayed"
std::optional<Format> parse_format(const std::string& s);
std::optional<Scaling> parse_scaling(const std::string& s);

/// The ATen dtype of a format (float8_e4m3fn, float8_e5m2) and its largest finite value (448, 57344).
at::ScalarType dtype(Format f);
double max_value(Format f);

/// The scale that maps `amax` onto the format's largest value: max / amax, in fp32, on amax's device. An amax of 0
/// (an all-zero tensor) or a non-finite one gives 1, so a scale is never inf or NaN.
at::Tensor scale_from_amax(const at::Tensor& amax, Format f);

/// `n` fp32 zeros on `like`'s device for kernels to max amaxes into: on CUDA slots of a pre-zeroed buffer (no fill
/// kernel per amax), each handed out once.
at::Tensor zeroed_amaxes(int64_t n, const at::Tensor& like);

/// amax of x: a scalar, or with `rowwise` one per row of a 2-D x ([rows, 1]), in fp32.
at::Tensor amax(const at::Tensor& x, bool rowwise);

/// x in FP8: x * scale clamped to the format's range (saturating: e4m3 has no inf, and an unclamped cast of a value
/// beyond 448 gives NaN), with the inverse scale that _scaled_mm takes back.
struct Quantized {
  at::Tensor data;       ///< the FP8 values (undefined where only the transpose was asked for)
  at::Tensor inv_scale;  ///< 1 / scale, fp32: a scalar or [rows, 1]
  at::Tensor data_t;     ///< the FP8 values of a 2-D x transposed, [cols, rows], where asked for
};
Quantized quantize(const at::Tensor& x, Format f, const at::Tensor& scale);

/// A 2-D x ([rows, cols]) in FP8 at the per-tensor scale of `amax` (scale_from_amax's): the row-major values where
/// `rows`, their transpose where `transposed`, the same bytes as quantize. On a CUDA build's GPU (bf16, fp16, fp32)
/// one kernel pass writes both (the scale computed on the device from amax); elsewhere ATen's form.
Quantized quantize_from_amax(const at::Tensor& x, Format f, const at::Tensor& amax, bool rows, bool transposed);

/// Delayed scaling's record of amaxes: the scale of a step comes from the largest of the last `length` amaxes (the
/// current one included once pushed), all on the device. Before any amax was pushed the current one is used.
class AmaxHistory {
 public:
  explicit AmaxHistory(int64_t length);
  /// Adds this step's amax (a scalar tensor) and returns the largest amax of the history including it.
  at::Tensor push(const at::Tensor& amax);
  /// push, and the scale from that amax.
  at::Tensor push_and_scale(const at::Tensor& amax, Format f) { return scale_from_amax(push(amax), f); }
  const at::Tensor& values() const { return history_; }

 private:
  int64_t length_, next_ = 0;
  at::Tensor history_;
};

/// A layer's weight in FP8 ([out, in] and its transpose), kept while the weight is unchanged, so that forward passes
/// before the next backward pass (checkpointing's recomputation, evaluation) quantise it once. Dropped when the
/// layer's backward pass runs (an optimizer step may follow, and not all of them move the version counter: the fused
/// ones on the CPU and torch::optim's do not) and missed when the weight's storage address or version changed.
/// Weights a Plan quantised for the whole step (Plan::quantize_weights) are `prepared`: kept through the step's
/// backward passes (its micro-batches all read them) until the next step's quantize_weights.
struct WeightCache {
  Quantized q;
  at::Tensor source;  ///< the weight, detached (same storage and version counter)
  int64_t version = -1;
  bool prepared = false;  ///< by Plan::quantize_weights, for this step
  bool captured = false;  ///< prepared while a CUDA graph was captured: its replays redo it
};

/// The per-layer state: histories of the input, the weight and the output gradient (delayed scaling) and the FP8
/// weight.
struct LinearState {
  explicit LinearState(int64_t length) : x(length), w(length), g(length) {}
  AmaxHistory x, w, g;
  WeightCache weight;
  bool used = false;  ///< a forward pass found this layer in its plan (it ran in FP8)
};

/// The last input a converted layer quantised at a per-tensor current scale: layers reading the same tensor (Llama's
/// q, k and v; gate and up) share one quantisation. Holds the source, so its address cannot be reused while kept.
struct InputMemo {
  at::Tensor source;
  int64_t version = -1;
  Quantized q;
};

/// y = x W^T + b with x and W cast to e4m3 (the recipe's scaling), the product by at::_scaled_mm with fp32
/// accumulation and the output in x's compute dtype (autocast's, else x's); backward, dX = g W and dW = g^T x with
/// g in the recipe's gradient format. `state` is needed with delayed scaling; with it the FP8 weight is kept until
/// the weight changes (may be null otherwise). `memo`, where given, shares one quantisation between layers reading
/// the same input (per-tensor current scaling). x [..., in] with in a multiple of 16, weight [out, in] with out a
/// multiple of 16.
at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, const Recipe& recipe,
                  LinearState* state = nullptr, InputMemo* memo = nullptr);

/// Whether a Linear layer of this shape can run in FP8 (_scaled_mm needs both dimensions multiples of 16).
bool eligible(int64_t in_features, int64_t out_features);

/// A model's Linear layers split into those converted to FP8 and those left in the compute dtype, in order: every
/// eligible layer except the heads (`lm_head`, a name ending in `classifier`) unless the recipe includes them.
struct LinearLayer {
  std::string name;
  int64_t in_features, out_features;
};
struct Selection {
  std::vector<std::string> converted, kept;  ///< kept: "name (why)"
};
Selection select(const std::vector<LinearLayer>& layers, const Recipe& recipe);

/// Which Linear layers of a model run in FP8, with each one's delayed-scaling state. While a PlanScope holds it on a
/// thread, models::linear and GPT-2's Conv1D route the converted layers through fp8::linear (a layer is known by its
/// module's address; the backward pass needs no plan: each FP8 node keeps its layer's state).
class Plan {
 public:
  struct Layer {
    std::string name;
    const void* module;
    int64_t in_features, out_features;
    at::Tensor weight;  ///< [out, in] as the layer hands it to fp8::linear (a transposed view for GPT-2's Conv1D)
  };
  Plan(const std::vector<Layer>& layers, const Recipe& recipe);
  ~Plan();  ///< drops the amax notes (note_amax) no layer took
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  const Recipe& recipe() const { return recipe_; }
  const Selection& selection() const { return selection_; }
  /// The layer's state if it is converted (marking it used: the caller runs it in FP8), else null.
  LinearState* find(const void* module) const;
  /// The converted layers that ran in FP8 so far, in order; a selected layer a model never looked up here (its
  /// product inside a fused operation, or unused) is not among them.
  std::vector<std::string> ran() const;
  /// The plan's shared input quantisation (see InputMemo).
  InputMemo* input_memo() const { return &memo_; }

  /// Quantises every converted layer's weight for the coming step in two kernel launches (all amaxes, then all
  /// casts with their transposes), into buffers the plan keeps, instead of two launches per layer in its forward
  /// pass; the layers' caches then hold them as `prepared`. Called at the start of each training step (captured with
  /// it under a CUDA graph). Does nothing off CUDA builds' GPUs, under delayed scaling (each weight's history), and
  /// for weights the kernels do not take (another dtype than the first's, unaligned); those quantise in their forward
  /// pass as before. Returns how many weights it quantised.
  int64_t quantize_weights() const;

 private:
  struct Converted {
    std::string name;
    const void* module;
    std::unique_ptr<LinearState> state;
    at::Tensor weight;
  };
  Recipe recipe_;
  Selection selection_;
  std::vector<Converted> converted_;
  mutable InputMemo memo_;
  /// quantize_weights' job table on the device (fused::Fp8CastJob bytes), the amax slots, and the weights' addresses
  /// it was built for (rebuilt when one moves).
  struct WeightJobs {
    fused::cuda_ops::Fp8CastTable table;  ///< the many-tensor kernels' jobs on the device
    at::Tensor amaxes;
    std::vector<const void*> sources;
    std::vector<size_t> layers;       ///< converted_ indices, in table order
    std::vector<Quantized> buffers;   ///< each one's FP8 weight, kept from step to step
    std::vector<at::Tensor> held;     ///< each one's weight as its layer hands it, detached once (the caches' source)
    at::ScalarType dtype = at::kFloat;
  };
  mutable WeightJobs jobs_;
};

/// Makes `plan` the thread's active plan for its lifetime (the previous one restored after).
class PlanScope {
 public:
  explicit PlanScope(const Plan* plan);
  ~PlanScope();
  PlanScope(const PlanScope&) = delete;
  PlanScope& operator=(const PlanScope&) = delete;

 private:
  const Plan* previous_;
};

/// The thread's active plan, or null.
const Plan* active_plan();

/// Amaxes a kernel computed while writing a tensor (SwiGLU's and the residual add + RMSNorm's outputs and gradients,
/// rotary's gradients), for the FP8 layer that quantises that tensor next: it takes the noted value instead of reading the
/// tensor once more. Process-wide (the backward pass runs on autograd's threads), a few entries, each holding its
/// tensor so its address cannot be reused while noted; a Plan's end clears them.
void note_amax(const at::Tensor& t, const at::Tensor& amax);
/// The amax noted for t (the same storage address, element count, dtype and version), taken off the notes; undefined
/// where none is.
at::Tensor take_amax(const at::Tensor& t);

/// The amax slots of one kernel launch that writes `n` tensors FP8 layers read next (zeroed_amaxes), or none where
/// FP8 is off, and the notes of what it wrote: slot(i) is null when off, note(i, t) does nothing then.
class KernelAmaxes {
 public:
  KernelAmaxes(bool on, int64_t n, const at::Tensor& like);
  float* slot(int64_t i) const;
  void note(int64_t i, const at::Tensor& written) const;

 private:
  at::Tensor slots_;  ///< undefined when off
};

/// Why `device` cannot train in FP8, naming it and its compute capability (FP8 tensor cores start at 8.9: Ada and
/// Hopper), or nothing where it can. `capability` is major * 10 + minor for CUDA devices.
std::optional<std::string> unsupported(const std::string& device_type, const std::string& device_name, int capability);

}  // namespace gpubench::engine::fp8
