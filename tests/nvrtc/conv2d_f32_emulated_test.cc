// The conv2d_f32 template's own code run on the CPU through a TEST DOUBLE of the device dialect
// (dense_f32_emulation.h): 1x1, 3x3 and 7x7 filters, stride 2, padding 1 and 3, dilation 2,
// channel counts that vector loads do and do not divide, runtime and compile-time geometry,
// each pipeline mode, split-K and the epilogues, over batches N = 1, 2, 3 and 5 and odd
// spatial sizes (tails in M = N*P*Q, in K filters and in R*S*C), against the double-precision
// CPU reference. The GPU tests repeat this on hardware.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "nvrtc/dense_f32_emulation.h"
// Each configuration includes the template in its own namespace with its entry points renamed.
// clang-format off
#include "../../templates/dietcode_args.h"

// 1: runtime geometry (every extent and attribute from the arguments), double buffer, float4
// loads along C (scalar fallback when C % 4 != 0), bias + relu.
#define WARPS_M 2
#define WARPS_N 1
#define THREADS_M 8
#define THREADS_N 4
#define TM 2
#define TN 4
#define BK 8
#define VEC 4
#define STAGES 2
#define EPILOGUE 3
#define dietcode_conv2d_f32 dyn_main
#define dietcode_conv2d_f32_reduce dyn_reduce
namespace dyn {
#include "../../templates/conv2d_f32.cu"
}
#include "nvrtc/gemm_f32_emulation_undef.h"

// 2: ResNet's stem shape in small: 7x7, stride 2, pad 3, C = 3, 10 filters, all static;
// cp.async 3 stages, split-K 2, bias.
#define WARPS_M 1
#define WARPS_N 1
#define THREADS_M 4
#define THREADS_N 8
#define TM 4
#define TN 2
#define BK 16
#define VEC 1
#define STAGES 3
#define SPLITK 2
#define EPILOGUE 1
#define STATIC_N 10
#define STATIC_K 147
#define STATIC_H 13
#define STATIC_W 11
#define STATIC_C 3
#define STATIC_S 7
#define STATIC_P 7
#define STATIC_Q 6
#define CONV_STRIDE_H 2
#define CONV_STRIDE_W 2
#define CONV_PAD_H 3
#define CONV_PAD_W 3
#define CONV_DILATION_H 1
#define CONV_DILATION_W 1
#define dietcode_conv2d_f32 stem_main
#define dietcode_conv2d_f32_reduce stem_reduce
namespace stem {
#include "../../templates/conv2d_f32.cu"
}
#include "nvrtc/gemm_f32_emulation_undef.h"

// 3: 1x1, stride 2, no padding (a ResNet shortcut), C = 16, float2 loads, single buffer, relu.
#define WARPS_M 1
#define WARPS_N 2
#define THREADS_M 8
#define THREADS_N 4
#define TM 2
#define TN 2
#define BK 8
#define VEC 2
#define STAGES 1
#define EPILOGUE 2
#define STATIC_N 20
#define STATIC_K 16
#define STATIC_H 9
#define STATIC_W 9
#define STATIC_C 16
#define STATIC_S 1
#define STATIC_P 5
#define STATIC_Q 5
#define CONV_STRIDE_H 2
#define CONV_STRIDE_W 2
#define CONV_PAD_H 0
#define CONV_PAD_W 0
#define CONV_DILATION_H 1
#define CONV_DILATION_W 1
#define dietcode_conv2d_f32 shortcut_main
#define dietcode_conv2d_f32_reduce shortcut_reduce
namespace shortcut {
#include "../../templates/conv2d_f32.cu"
}
#include "nvrtc/gemm_f32_emulation_undef.h"

// 4: 3x3, stride 2, pad 1, dilation 2 on a non-square input, C = 8, static; cp.async 4 stages,
// split-K 3, bias + gelu.
#define WARPS_M 1
#define WARPS_N 1
#define THREADS_M 8
#define THREADS_N 4
#define TM 3
#define TN 3
#define BK 8
#define VEC 1
#define STAGES 4
#define SPLITK 3
#define EPILOGUE 5
#define STATIC_N 12
#define STATIC_K 72
#define STATIC_H 11
#define STATIC_W 8
#define STATIC_C 8
#define STATIC_S 3
#define STATIC_P 5
#define STATIC_Q 3
#define CONV_STRIDE_H 2
#define CONV_STRIDE_W 2
#define CONV_PAD_H 1
#define CONV_PAD_W 1
#define CONV_DILATION_H 2
#define CONV_DILATION_W 2
#define dietcode_conv2d_f32 dilated_main
#define dietcode_conv2d_f32_reduce dilated_reduce
namespace dilated {
#include "../../templates/conv2d_f32.cu"
}
#include "nvrtc/gemm_f32_emulation_undef.h"
// clang-format on

#include "measure/cpu_reference.h"
#include "measure/gpu_operands.h"
#include "nvrtc/gemm_f32_emulation_run.h"

namespace dietcode {
namespace {

using testing::EmuKernel;

void run_case(const EmuKernel& k, const Conv2dShape& g, Epilogue epilogue,
              unsigned grid_y_cap = 65535) {
  SCOPED_TRACE(k.name + " N=" + std::to_string(g.n) + " H=" + std::to_string(g.h) +
               " W=" + std::to_string(g.w) + " C=" + std::to_string(g.c) +
               " K=" + std::to_string(g.k) + " R=" + std::to_string(g.r) +
               " S=" + std::to_string(g.s) + " stride=" + std::to_string(g.stride_h) +
               " pad=" + std::to_string(g.pad_h) + " dilation=" + std::to_string(g.dilation_h));
  std::mt19937 rng(unsigned(g.n * 7919 + g.h * 131 + g.c * 7 + g.k));
  const auto x = testing::random_floats(size_t(g.n * g.h * g.w * g.c), rng);
  const auto wt = testing::random_floats(size_t(g.k * g.r * g.s * g.c), rng);
  const auto bias = testing::random_floats(size_t(g.k), rng);
  const GemmShape s = g.gemm();
  DietcodeArgs args;
  std::memset(&args, 0, sizeof(args));
  args.a = x.data();
  args.b = wt.data();
  args.bias = bias.data();
  set_shape_args(OpKind::kConv2d, s, &g, &args);
  const auto got = testing::emu_run(k, args, s, grid_y_cap);

  const auto acc = conv2d_accumulate(x.data(), wt.data(), g, 1);
  const bool with_bias = epilogue_has_bias(epilogue);
  const auto want = dense_apply_epilogue(acc, bias.data(), epilogue, s.M);
  const auto cmp = compare_dense(got.data(), want, acc, with_bias ? bias.data() : nullptr, s.M);
  EXPECT_TRUE(cmp.ok) << cmp.message;
}

TEST(Conv2dF32Emulated, RuntimeGeometryEveryFilterSize) {
  const auto k = EMU_KERNEL(dyn);
  EXPECT_EQ(k.bm, 32);
  EXPECT_EQ(k.bn, 16);
  // (H, W, C, K, R, S, stride, pad, dilation): C = 8 takes float4 loads, C = 3 and 5 scalars.
  run_case(k, make_conv2d_shape(1, 5, 5, 8, 16, 3, 3, 1, 1, 1), Epilogue::kBiasRelu);
  run_case(k, make_conv2d_shape(2, 7, 6, 8, 17, 3, 3, 1, 1, 1), Epilogue::kBiasRelu);
  run_case(k, make_conv2d_shape(3, 6, 7, 5, 9, 3, 3, 2, 1, 1), Epilogue::kBiasRelu);
  run_case(k, make_conv2d_shape(2, 9, 9, 3, 16, 7, 7, 2, 3, 1), Epilogue::kBiasRelu);
  run_case(k, make_conv2d_shape(5, 4, 4, 4, 3, 1, 1, 1, 0, 1), Epilogue::kBiasRelu);
  run_case(k, make_conv2d_shape(2, 10, 9, 5, 7, 3, 3, 1, 2, 2), Epilogue::kBiasRelu);
  run_case(k, make_conv2d_shape(3, 8, 8, 8, 16, 3, 3, 1, 1, 1), Epilogue::kBiasRelu, 2);
}

TEST(Conv2dF32Emulated, StaticSevenBySevenStride2Pad3CpAsyncSplitK2) {
  const auto k = EMU_KERNEL(stem);
  EXPECT_EQ(k.bm, 16);
  EXPECT_EQ(k.bn, 16);
  for (int64_t n : {1, 2, 3}) run_case(k, make_conv2d_shape(n, 13, 11, 3, 10, 7, 7, 2, 3, 1),
                                       Epilogue::kBias);
}

TEST(Conv2dF32Emulated, StaticOneByOneStride2SingleBuffer) {
  const auto k = EMU_KERNEL(shortcut);
  EXPECT_EQ(k.bm, 16);
  EXPECT_EQ(k.bn, 16);
  for (int64_t n : {1, 2, 5}) run_case(k, make_conv2d_shape(n, 9, 9, 16, 20, 1, 1, 2, 0, 1),
                                       Epilogue::kRelu);
}

TEST(Conv2dF32Emulated, StaticDilated3x3Stride2Pad1CpAsync4SplitK3) {
  const auto k = EMU_KERNEL(dilated);
  EXPECT_EQ(k.bm, 24);
  EXPECT_EQ(k.bn, 12);
  for (int64_t n : {1, 2, 3}) run_case(k, make_conv2d_shape(n, 11, 8, 8, 12, 3, 3, 2, 1, 2),
                                       Epilogue::kBiasGelu);
}

}  // namespace
}  // namespace dietcode
