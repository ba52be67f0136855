// The profile's summary, on events built by hand (the bottleneck attribution it feeds: bottleneck_test.cpp).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "gpubench/core/analysis/profile.hpp"
#include "gpubench/core/record/run_record.hpp"

namespace gpubench {
namespace {

using Kind = ProfileEvent::Kind;

ProfileEvent ev(Kind kind, std::string name, int64_t start_us, int64_t end_us, int64_t lane = 7) {
  return ProfileEvent{kind, std::move(name), start_us * 1000, end_us * 1000, lane};
}

TEST(KernelCategoryTest, NamesTheKernelsOfOurWorkloads) {
  // Real kernel names from CUDA traces of ResNet-50, BERT and the UNet (cuBLAS, cuDNN, ATen, flash attention, NCCL).
  EXPECT_EQ(kernel_category("nvjet_tst_192x192_64x3_2x1_v_bz_coopB_TNT"), "gemm_conv");
  // precision: fp8 on the H200: the forward products (e4m3 x e4m3, bf16 out), the backward ones (e4m3 x e5m2), and a
  // bf16 product beside them (the LM head)
  EXPECT_EQ(kernel_category("nvjet_sm90_qqtst_256x128_128x4_1x2_h_bz_coopA_TNT"), "gemm_fp8");
  EXPECT_EQ(kernel_category("nvjet_sm90_qrtst_128x128_128x6_2x1_v_bz_coopA_algo2_TNT"), "gemm_fp8");
  EXPECT_EQ(kernel_category("nvjet_sm90_qrsss_144x128_128x6_1x2_h_bz_coopA_algo2_TNN"), "gemm_fp8");
  EXPECT_EQ(kernel_category("nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_TNT"), "gemm_conv");
  EXPECT_EQ(kernel_category("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NNT"), "gemm_conv");
  EXPECT_EQ(kernel_category("void gpubench::engine::fused::cast_transpose<__nv_bfloat16>(...)"), "elementwise");
  EXPECT_EQ(kernel_category("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
                            "direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1} c10::Float8_e4m3fn>"),
            "elementwise");
  EXPECT_EQ(kernel_category("void gpubench::engine::fused::swiglu_forward<__nv_bfloat16>(...)"), "elementwise");
  EXPECT_EQ(kernel_category("void nvjpeg::rgba2rgb<(nvjpegOutputFormat_t)5, nvjpeg::RGBAToRGBConversion::LaunchParams<32, 8>>(...)"),
            "input");
  EXPECT_EQ(kernel_category("gpubench::engine::(anonymous namespace)::crop_resize_normalize(...)"), "input");
  EXPECT_EQ(kernel_category("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64"),
            "gemm_conv");
  EXPECT_EQ(kernel_category("cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x2x1_0_tnn_align8"),
            "gemm_conv");
  EXPECT_EQ(kernel_category("void cudnn::engines_precompiled::nchwToNhwcKernel<__nv_bfloat16>(...)"), "gemm_conv");
  EXPECT_EQ(kernel_category("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128>, true>(...)"),
            "attention");
  EXPECT_EQ(kernel_category("fmha_cutlassB_bf16_aligned_64x64_k64_sm80(PyTorchMemEffAttention::AttentionBackwardKernel)"),
            "attention");
  EXPECT_EQ(kernel_category("cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x64_kernel0_0"),
            "attention");
  EXPECT_EQ(kernel_category("void cudnn::fusion::compute_dot_do_o_specialized<true, 64>(...)"), "attention");
  EXPECT_EQ(kernel_category("void cudnn::fusion::convert_dq_to_16bits<true>(...)"), "attention");
  EXPECT_EQ(kernel_category("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(...)"),
            "normalization");
  EXPECT_EQ(kernel_category("void cudnn::bn_fw_tr_1C11_singleread_spec<__nv_bfloat16, 512, true, 1, 2, 0>(...)"),
            "normalization");
  EXPECT_EQ(kernel_category("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>"),
            "elementwise");
  EXPECT_EQ(kernel_category("void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float>"),
            "elementwise");
  EXPECT_EQ(kernel_category("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>(...)"), "reduction");
  EXPECT_EQ(kernel_category("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>"), "reduction");
  EXPECT_EQ(kernel_category("void at::native::multi_tensor_apply_kernel<FusedAdamMathFunctor<float, 4>>(...)"),
            "optimizer");
  EXPECT_EQ(kernel_category("void at::native::(anonymous namespace)::_amp_non_finite_check_and_unscale_cuda_"),
            "optimizer");
  EXPECT_EQ(kernel_category("Memcpy HtoD (Pageable -> Device)"), "memcpy");
  EXPECT_EQ(kernel_category("Memset (Device)"), "memcpy");
  EXPECT_EQ(kernel_category("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            "communication");
  // Lambdas in ATen's kernel names are not the LAMB optimizer; layer-norm and pooling backward kernels.
  EXPECT_EQ(kernel_category("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<at::native::"
                            "CUDAFunctor_add<float> >(at::TensorIteratorBase&, ...)::{lambda(int)#1}>(int, ...)"),
            "elementwise");
  EXPECT_EQ(kernel_category("void at::native::vectorized_elementwise_kernel<8, at::native::BinaryFunctor<c10::Half, "
                            "c10::Half, c10::Half, at::native::threshold_kernel_impl<c10::Half>(...)::{lambda(c10::Half, "
                            "c10::Half)#1}>>"),
            "elementwise");
  EXPECT_EQ(kernel_category("void at::native::GammaBetaBackwardCUDAKernelTemplate<float, float, 32u, 32u, 256u>"),
            "normalization");
  EXPECT_EQ(kernel_category("void at::native::max_pool_backward_nhwc<c10::Half, float>(...)"), "elementwise");
  EXPECT_EQ(kernel_category("some_kernel_nobody_knows"), "other");
  // CPU operators (a CPU run's "kernels").
  EXPECT_EQ(kernel_category("aten::mm"), "gemm_conv");
  EXPECT_EQ(kernel_category("aten::mkldnn_convolution"), "gemm_conv");
  EXPECT_EQ(kernel_category("aten::native_layer_norm_backward"), "normalization");
  EXPECT_EQ(kernel_category("aten::_fused_adamw_"), "optimizer");
  EXPECT_EQ(kernel_category("aten::bernoulli_"), "elementwise");
  EXPECT_EQ(kernel_category("autograd::engine::evaluate_function: AddmmBackward0"), "other");
}

TEST(KernelCategoryTest, ShortNamesKeepTheFunctorAndDropTheNoise) {
  EXPECT_EQ(short_kernel_name("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>(int, "
                              "at::native::GeluCUDAKernelImpl, std::array<char*, 2ul>)"),
            "vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>");
  EXPECT_EQ(short_kernel_name("nvjet_tst_64x8_64x16_4x1_v_bz_TNT"), "nvjet_tst_64x8_64x16_4x1_v_bz_TNT");
  EXPECT_LE(short_kernel_name(std::string(400, 'k')).size(), 120u);
}

/// Two steps of 10 ms each on one stream: a GEMM, an elementwise kernel and a copy per step, with a gap.
std::vector<ProfileEvent> two_steps() {
  return {
      ev(Kind::kStep, "gpubench::profiled_step", 0, 8000),
      ev(Kind::kStep, "gpubench::profiled_step", 10000, 18000),
      // step 1: gemm 1000..7000 (6 ms), gelu 7000..8000 (1 ms), memcpy 9000..9500; idle 0..1000, 8000..9000,
      // 9500..10000
      ev(Kind::kKernel, "nvjet_tst_gemm", 1000, 7000),
      ev(Kind::kKernel, "vectorized_elementwise_kernel<Gelu>", 7000, 8000),
      ev(Kind::kMemcpy, "Memcpy DtoD (Device -> Device)", 9000, 9500),
      // step 2: the same, and the last kernel ends after the step marker (the device runs behind the host)
      ev(Kind::kKernel, "nvjet_tst_gemm", 11000, 17000),
      ev(Kind::kKernel, "vectorized_elementwise_kernel<Gelu>", 17000, 18000),
      ev(Kind::kMemcpy, "Memcpy DtoD (Device -> Device)", 19000, 20000),
      ev(Kind::kLaunchApi, "cudaLaunchKernel", 500, 520),
      ev(Kind::kLaunchApi, "cudaLaunchKernel", 10500, 10520),
      // outside the window: the unrecorded step before it
      ev(Kind::kKernel, "nvjet_tst_gemm", -5000, -1000),
  };
}

TEST(ProfileSummaryTest, BusyIdleCategoriesAndTopKernels) {
  ProfileInputs in;
  in.steps = 2;
  in.model_flops_per_step = 6e12;  // 6 TFLOP per step over 6 ms of GEMM: 1000 TFLOP/s
  in.peak_tflops = 2000;
  in.peak_source = "test";
  const ProfileRecord p = summarize_profile(two_steps(), in);
  EXPECT_EQ(p.steps, 2);
  EXPECT_NEAR(p.wall_ms_per_step, 10.0, 1e-9);  // 0 .. 20 ms: stretched to the last copy's end
  EXPECT_NEAR(p.busy_ms_per_step, 7.75, 1e-9);  // (6 + 1 + 0.5) and (6 + 1 + 1)
  EXPECT_NEAR(p.idle_ms_per_step, 2.25, 1e-9);
  EXPECT_NEAR(p.busy_fraction, 0.775, 1e-9);
  EXPECT_NEAR(p.kernels_per_step, 3.0, 1e-9);
  EXPECT_NEAR(p.gaps_per_step, 1.5, 1e-9);  // between kernels: 8->9, 9.5->11 and 18->19 ms, in two steps
  EXPECT_NEAR(p.launch_api_ms_per_step, 0.02, 1e-9);
  // where the device waited: after GELU before the copy (1 ms in each step), after the copy before the next GEMM
  // (1.5 ms, once); the time before the first kernel is not a gap between kernels
  ASSERT_EQ(p.idle_gaps.size(), 2u);
  EXPECT_EQ(p.idle_gaps[0].after, "vectorized_elementwise_kernel<Gelu>");
  EXPECT_EQ(p.idle_gaps[0].before, short_kernel_name("Memcpy DtoD (Device -> Device)"));
  EXPECT_NEAR(p.idle_gaps[0].ms_per_step, 1.0, 1e-9);
  EXPECT_NEAR(p.idle_gaps[0].gaps_per_step, 1.0, 1e-9);
  EXPECT_EQ(p.idle_gaps[1].after, short_kernel_name("Memcpy DtoD (Device -> Device)"));
  EXPECT_EQ(p.idle_gaps[1].before, "nvjet_tst_gemm");
  EXPECT_NEAR(p.idle_gaps[1].ms_per_step, 0.75, 1e-9);
  EXPECT_NEAR(p.idle_gaps[1].gaps_per_step, 0.5, 1e-9);
  ASSERT_EQ(p.categories.size(), 3u);  // in display order, only those with time
  EXPECT_EQ(p.categories[0].category, "gemm_conv");
  EXPECT_NEAR(p.categories[0].ms_per_step, 6.0, 1e-9);
  EXPECT_NEAR(p.categories[0].fraction, 12.0 / 15.5, 1e-9);
  EXPECT_EQ(p.categories[1].category, "elementwise");
  EXPECT_EQ(p.categories[2].category, "memcpy");
  EXPECT_NEAR(p.categories[2].ms_per_step, 0.75, 1e-9);
  ASSERT_EQ(p.top_kernels.size(), 3u);
  EXPECT_EQ(p.top_kernels[0].name, "nvjet_tst_gemm");
  EXPECT_NEAR(p.top_kernels[0].calls_per_step, 1.0, 1e-9);
  EXPECT_NEAR(p.top_kernels[0].mean_us, 6000.0, 1e-6);
  ASSERT_TRUE(p.matrix_tflops.has_value());
  EXPECT_NEAR(*p.matrix_tflops, 1000.0, 1e-6);
  EXPECT_NEAR(*p.matrix_peak_fraction, 0.5, 1e-9);
  EXPECT_FALSE(p.busy_fraction_of_timed_step.has_value());  // no timed step given
  EXPECT_FALSE(p.attention_tflops.has_value());             // no attention kernels, no attention FLOPs given
  in.timed_step_ms = 8.0;  // the unprofiled step: faster than the profiled one (no CUPTI overhead)
  const ProfileRecord t = summarize_profile(two_steps(), in);
  EXPECT_NEAR(*t.busy_fraction_of_timed_step, 7.75 / 8.0, 1e-9);
}

TEST(ProfileSummaryTest, AttentionAndGemmRatesSplitTheModelFlops) {
  // 8 TFLOP a step, 2 of them attention's; GEMM kernels 6 ms, attention kernels 4 ms, in one step.
  ProfileInputs in;
  in.steps = 1;
  in.model_flops_per_step = 8e12;
  in.attention_flops_per_step = 2e12;
  const ProfileRecord p = summarize_profile({ev(Kind::kStep, "gpubench::profiled_step", 0, 10000),
                                             ev(Kind::kKernel, "nvjet_tst_gemm", 0, 6000),
                                             ev(Kind::kKernel, "pytorch_flash::flash_fwd_kernel", 6000, 10000)},
                                            in);
  EXPECT_NEAR(*p.matrix_tflops, 800.0, 1e-6);     // 8 TFLOP in 10 ms
  EXPECT_NEAR(*p.gemm_tflops, 1000.0, 1e-6);      // 6 TFLOP in 6 ms
  EXPECT_NEAR(*p.attention_tflops, 500.0, 1e-6);  // 2 TFLOP in 4 ms
}

TEST(ProfileSummaryTest, OverlappingStreamsCountOnceAsBusy) {
  ProfileInputs in;
  in.steps = 1;
  const ProfileRecord p = summarize_profile({ev(Kind::kStep, "gpubench::profiled_step", 0, 10000),
                                             ev(Kind::kKernel, "nvjet_a", 0, 6000, 1),
                                             ev(Kind::kKernel, "ncclDevKernel_AllReduce", 4000, 10000, 2)},
                                            in);
  EXPECT_NEAR(p.busy_ms_per_step, 10.0, 1e-9);
  EXPECT_NEAR(p.busy_fraction, 1.0, 1e-9);
  EXPECT_NEAR(p.gaps_per_step, 0.0, 1e-9);
  EXPECT_TRUE(p.idle_gaps.empty());
  ASSERT_EQ(p.categories.size(), 2u);
  EXPECT_EQ(p.categories[1].category, "communication");
  EXPECT_NEAR(p.categories[1].fraction, 0.5, 1e-9);  // of kernel time (12 ms), which exceeds the busy time
  EXPECT_FALSE(p.matrix_tflops.has_value());         // no model FLOPs given
}

TEST(ProfileSummaryTest, CpuOperatorsCountTheirSelfTime) {
  // aten::linear 0..10 ms contains aten::addmm 1..9, which contains aten::copy_ 2..3; aten::relu 12..14.
  ProfileInputs in;
  in.steps = 1;
  const ProfileRecord p = summarize_profile({ev(Kind::kStep, "gpubench::profiled_step", 0, 20000),
                                             ev(Kind::kCpuOp, "aten::linear", 0, 10000),
                                             ev(Kind::kCpuOp, "aten::addmm", 1000, 9000),
                                             ev(Kind::kCpuOp, "aten::copy_", 2000, 3000),
                                             ev(Kind::kCpuOp, "aten::relu", 12000, 14000),
                                             ev(Kind::kCpuOp, "aten::empty", 15000, 15000, 8)},
                                            in);
  EXPECT_NEAR(p.busy_ms_per_step, 12.0, 1e-9);  // the top-level operators
  EXPECT_NEAR(p.busy_fraction, 0.6, 1e-9);
  EXPECT_NEAR(p.kernels_per_step, 5.0, 1e-9);
  ASSERT_FALSE(p.top_kernels.empty());
  EXPECT_EQ(p.top_kernels[0].name, "aten::addmm");
  EXPECT_NEAR(p.top_kernels[0].ms_per_step, 7.0, 1e-9);  // 8 ms less its copy
  double total = 0;
  for (const auto& c : p.categories) total += c.ms_per_step;
  EXPECT_NEAR(total, 12.0, 1e-9);  // self times add up to the busy time: nothing counted twice
  EXPECT_TRUE(p.idle_gaps.empty());  // on the CPU the gaps are framework overhead, not a device waiting
}

TEST(ProfileSummaryTest, AGapAfterOverlappingKernelsIsTheOneThatEndedLast) {
  // two streams: a long GEMM on one and short kernels on the other; the device waits only once all are done
  ProfileInputs in;
  in.steps = 1;
  const ProfileRecord p = summarize_profile({ev(Kind::kStep, "gpubench::profiled_step", 0, 10000),
                                             ev(Kind::kKernel, "nvjet_long", 0, 5000, 1),
                                             ev(Kind::kKernel, "amax_kernel<float>", 1000, 2000, 2),
                                             ev(Kind::kKernel, "cast_transpose<float>", 6000, 7000, 2),
                                             ev(Kind::kKernel, "nvjet_short", 9000, 10000, 1)},
                                            in);
  ASSERT_EQ(p.idle_gaps.size(), 2u);
  EXPECT_EQ(p.idle_gaps[0].after, "cast_transpose<float>");  // 7 -> 9 ms
  EXPECT_EQ(p.idle_gaps[0].before, "nvjet_short");
  EXPECT_NEAR(p.idle_gaps[0].ms_per_step, 2.0, 1e-9);
  EXPECT_EQ(p.idle_gaps[1].after, "nvjet_long");  // 5 -> 6 ms: the GEMM reached furthest, not the amax
  EXPECT_EQ(p.idle_gaps[1].before, "cast_transpose<float>");
}

TEST(ProfileSummaryTest, NoEventsNoSummary) {
  ProfileInputs in;
  in.steps = 3;
  const ProfileRecord p = summarize_profile({}, in);
  EXPECT_EQ(p.busy_ms_per_step, 0.0);
  EXPECT_TRUE(p.categories.empty());
}

TEST(ProfileSummaryTest, TimesThatWouldOverflowNanosecondsAreSkippedAndTheWindowStaysFinite) {
  // The widest trace that is kept (a start at -1e15 us, another at 4e15 us ending 1e15 us later) spans 6e18 ns,
  // within int64; anything further out is skipped rather than overflowed.
  const nlohmann::json trace = nlohmann::json::parse(R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "early", "ts": -1e15, "dur": 10},
    {"ph": "X", "cat": "kernel", "name": "late", "ts": 4e15, "dur": 1e15},
    {"ph": "X", "cat": "kernel", "name": "too_late", "ts": 4.1e15, "dur": 10},
    {"ph": "X", "cat": "kernel", "name": "too_long", "ts": 0, "dur": 2e15},
    {"ph": "X", "cat": "kernel", "name": "too_early", "ts": -2e15, "dur": 1}]})");
  const std::vector<ProfileEvent> events = events_from_chrome_trace(trace);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].name, "early");
  EXPECT_EQ(events[1].end_ns, 5'000'000'000'000'000'000);
  ProfileInputs in;
  in.steps = 1;
  const ProfileRecord p = summarize_profile(events, in);
  EXPECT_TRUE(std::isfinite(p.busy_fraction));
  EXPECT_GE(p.busy_fraction, 0.0);
  EXPECT_LE(p.busy_fraction, 1.0);
}

// ------------------------------------------------------------------------------------------------------------
}  // namespace
}  // namespace gpubench
