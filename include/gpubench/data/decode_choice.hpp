#pragma once
// Which decoder a `data: folder` run uses. Asked for (cpu, gpu, mixed), it is the request. `decode: auto` on a CUDA
// device is decided by measurement in each run (issue #62): after the warm-up the run times, on this host and this
// device, the training step alone, the loader's workers decoding flat out (libjpeg-turbo), nvJPEG delivering alone,
// and the step fed by each candidate path (engine/input_pipeline.h, InputPipeline::calibrate's callers); plan_decode
// turns those rates into the path, the `mixed` split's starting share and the reason written to the record
// (data.decode_calibration, data.decode_reason).
//
// Why a measurement and not a rule: the rule this replaces assumed ~465 images/s per worker, the rate of one H200
// host's cores, and picked the CPU from 14 workers up. On another H200 host of the same kind 15 workers delivered
// 6,712 images/s against the ~7,500 a fused fp16 step takes, and real data trained at 0.89 of synthetic. What the
// workers deliver depends on the host's cores, how many GPUs share them and the files; what the step takes depends on
// the model, precision and kernel path; nvJPEG's cost depends on the card (a hardware JPEG engine on A100/H100/H200,
// SM time elsewhere). Torch-free, so the choice is tested anywhere with injected rates.

#include <cstdint>
#include <string>

namespace gpubench::data {

struct DecodeChoice {
  bool try_gpu = false;   ///< open nvJPEG (it may still fail; then the CPU decodes and says why)
  bool mixed = false;     ///< split each batch between the workers and nvJPEG (decode_split.hpp)
  bool required = false;  ///< asked for (gpu, mixed): where nvJPEG cannot run the run fails instead of falling back
  bool calibrate = false; ///< decode: auto on a CUDA device: measure the paths before the timed epochs (plan_decode)
  std::string reason;     ///< why this decoder, for the record (data.decode_reason)
};

/// The decoder for `requested` (auto | cpu | gpu | mixed) with `workers` decode threads, on a CUDA device or not,
/// before anything is measured. `auto` on a CUDA device opens nvJPEG where it can and asks for a calibration.
DecodeChoice choose_decode(const std::string& requested, int64_t workers, bool cuda_device);

/// What a run measured before choosing (images/s, this rank's; 0 = not measured). "Fed" rates are the training
/// step's, fed by the pipeline at that split, so they include whatever GPU time decoding takes from the step.
struct DecodeRates {
  int64_t batch = 0;           ///< samples per batch
  int64_t workers = 0;         ///< the loader's decode threads
  bool data_only = false;      ///< no step: the pipeline is what is timed
  double step = 0;             ///< the step alone, its batch already on the device
  double cpu = 0;              ///< the workers decoding every sample, nothing else running
  bool gpu_usable = false;     ///< nvJPEG opened on this device
  std::string gpu_backend;     ///< hardware | gpu_hybrid | hybrid (NvjpegDecoder::backend)
  std::string gpu_unusable;    ///< why nvJPEG cannot run here (empty when usable)
  double gpu = 0;              ///< nvJPEG decoding every sample it can take, nothing else running
  double fed_cpu = 0;          ///< the step fed by the workers alone
  double fed_gpu = 0;          ///< the step fed by nvJPEG alone
  double fed_mixed = 0;        ///< the step fed at `mixed_share`
  double mixed_share = 0;      ///< the split fed_mixed was measured at (mixed_start_share)
  double seconds = 0;          ///< the calibration's wall time
};

/// What the workers deliver while the step runs beside them: the step fed by them alone where it waited for them
/// (fed_cpu below the step alone), else their rate alone. The two differ: on the H100's host 15 workers decoded
/// 11,700 images/s alone, and their busy time while fp16 ResNet-50 trained put them at ~6,150
/// (results/2026-12-05-h100-auto-decode).
double workers_while_training(const DecodeRates& r);

/// The workers' share from which the step and the workers finish a batch together: each image the workers decode
/// costs the step nothing, each nvJPEG image costs it c/B, where c = B/fed_gpu - B/step is what decoding a whole
/// batch on the GPU added to the step. With w = workers_while_training, solving  B/step + (1-s)c = sB/w  gives
/// s = (B/step + c) / (c + B/w), clamped to [0, 1]. Needs step, a worker rate and fed_gpu; -1 without them.
double mixed_start_share(const DecodeRates& r);

/// decode: auto's answer, and what it expects.
struct DecodePlan {
  std::string decode = "cpu";  ///< cpu | gpu | mixed
  double cpu_share = 1.0;      ///< mixed: the split's starting share (DecodeSplit adapts it from there)
  double expected = 0;         ///< images/s the chosen path was measured (or, for data_only, delivered) at
  std::string reason;          ///< for data.decode_reason, with the figures
};

/// Fed rates within this fraction of each other count as equal; the CPU is preferred among equals (it takes no GPU
/// time), then mixed (its split adapts during the run). The step fed by the workers within this fraction of the step
/// alone is the CPU's answer without further comparison: the workers keep up. (Their rate alone is no such answer:
/// beside a training step they deliver far less, see workers_while_training.)
inline constexpr double kFedTie = 0.01;
/// Below this share of each batch, the workers' part of a mixed split is not worth the split: nvJPEG takes it all.
inline constexpr double kMinMixedShare = 0.05;

/// Chooses from measured rates (see DecodeRates): the CPU where the step fed by the workers keeps its own rate or
/// nothing else can run; otherwise the path whose fed rate is highest (ties as kFedTie says); data_only runs take the
/// path that delivers the most.
DecodePlan plan_decode(const DecodeRates& r);

}  // namespace gpubench::data
