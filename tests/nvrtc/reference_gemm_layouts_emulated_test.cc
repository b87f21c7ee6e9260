// templates/reference_gemm.cu (float32) run on the CPU through a TEST DOUBLE of the device
// dialect (dense_f32_emulation.h), in every layout it reads (dense, each batch_matmul transpose,
// conv2d NHWC with stride, padding and dilation) against the CPU reference. The GPU measurer
// trusts this kernel to judge candidates, so its index arithmetic is checked without a GPU too.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "nvrtc/dense_f32_emulation.h"
// clang-format off
#include "../../templates/dietcode_args.h"

#define EPILOGUE 5
#define dietcode_reference_gemm dense_ref
namespace dense_layout {
#include "../../templates/reference_gemm.cu"
}
#undef EPILOGUE
#undef dietcode_reference_gemm
#undef A_K_CONTIGUOUS
#undef B_K_CONTIGUOUS
#undef CONV_NHWC
#undef DTYPE

#define EPILOGUE 4
#define A_K_CONTIGUOUS 1
#define B_K_CONTIGUOUS 0
#define dietcode_reference_gemm nn_ref
namespace nn_layout {
#include "../../templates/reference_gemm.cu"
}
#undef EPILOGUE
#undef dietcode_reference_gemm
#undef A_K_CONTIGUOUS
#undef B_K_CONTIGUOUS
#undef CONV_NHWC
#undef DTYPE

#define EPILOGUE 2
#define A_K_CONTIGUOUS 0
#define B_K_CONTIGUOUS 1
#define dietcode_reference_gemm tt_ref
namespace tt_layout {
#include "../../templates/reference_gemm.cu"
}
#undef EPILOGUE
#undef dietcode_reference_gemm
#undef A_K_CONTIGUOUS
#undef B_K_CONTIGUOUS
#undef CONV_NHWC
#undef DTYPE

#define EPILOGUE 0
#define A_K_CONTIGUOUS 0
#define B_K_CONTIGUOUS 0
#define dietcode_reference_gemm tn_ref
namespace tn_layout {
#include "../../templates/reference_gemm.cu"
}
#undef EPILOGUE
#undef dietcode_reference_gemm
#undef A_K_CONTIGUOUS
#undef B_K_CONTIGUOUS
#undef CONV_NHWC
#undef DTYPE

#define EPILOGUE 3
#define CONV_NHWC 1
#define dietcode_reference_gemm conv_ref
namespace conv_layout {
#include "../../templates/reference_gemm.cu"
}
// clang-format on

#include "measure/cpu_reference.h"
#include "measure/gpu_operands.h"
#include "nvrtc/gemm_f32_emulation_run.h"

namespace dietcode {
namespace {

// The reference's launch: 256 threads, grid (ceil(N/16), ceil(M/16), batch).
testing::EmuKernel reference(const char* name, void (*entry)(DietcodeArgs)) {
  return {name, entry, nullptr, 256, 16, 16, 1, 0};
}

TEST(ReferenceGemmLayoutsEmulated, DenseWithBiasGelu) {
  const GemmShape s{1, 19, 21, 13};
  std::mt19937 rng(2);
  const auto x = testing::random_floats(size_t(s.M * s.K), rng);
  const auto w = testing::random_floats(size_t(s.N * s.K), rng);
  const auto bias = testing::random_floats(size_t(s.N), rng);
  DietcodeArgs args;
  std::memset(&args, 0, sizeof(args));
  args.a = x.data(), args.b = w.data(), args.bias = bias.data();
  set_shape_args(OpKind::kDense, s, nullptr, &args);
  const auto got = testing::emu_run(reference("dense", dense_layout::dense_ref), args, s);
  const auto acc = dense_accumulate(x.data(), w.data(), s.M, s.N, s.K, 1);
  const auto cmp =
      compare_dense(got.data(), dense_apply_epilogue(acc, bias.data(), Epilogue::kBiasGelu, s.M),
                    acc, bias.data(), s.M);
  EXPECT_TRUE(cmp.ok) << cmp.message;
}

TEST(ReferenceGemmLayoutsEmulated, BatchMatmulEveryTranspose) {
  struct Layout {
    const char* name;
    void (*entry)(DietcodeArgs);
    bool ta, tb;
    Epilogue epilogue;
  };
  const Layout layouts[] = {{"A B", nn_layout::nn_ref, false, false, Epilogue::kGelu},
                            {"A^T B^T", tt_layout::tt_ref, true, true, Epilogue::kRelu},
                            {"A^T B", tn_layout::tn_ref, true, false, Epilogue::kNone}};
  const GemmShape s{3, 17, 18, 5};
  std::mt19937 rng(3);
  const auto a = testing::random_floats(size_t(s.batch * s.M * s.K), rng);
  const auto b = testing::random_floats(size_t(s.batch * s.K * s.N), rng);
  for (const Layout& l : layouts) {
    SCOPED_TRACE(l.name);
    DietcodeArgs args;
    std::memset(&args, 0, sizeof(args));
    args.a = a.data(), args.b = b.data();
    set_shape_args(OpKind::kBatchMatmul, s, nullptr, &args);
    const auto got = testing::emu_run(reference(l.name, l.entry), args, s);
    const auto acc =
        batch_matmul_accumulate(a.data(), b.data(), s.batch, s.M, s.N, s.K, l.ta, l.tb, 1);
    const auto want = dense_apply_epilogue(acc, nullptr, l.epilogue, s.batch * s.M);
    const auto cmp = compare_dense(got.data(), want, acc, nullptr, s.batch * s.M);
    EXPECT_TRUE(cmp.ok) << cmp.message;
  }
}

TEST(ReferenceGemmLayoutsEmulated, ConvWithStridePaddingAndDilation) {
  for (const Conv2dShape g : {make_conv2d_shape(2, 9, 7, 3, 5, 3, 3, 2, 1, 2),
                              make_conv2d_shape(1, 11, 12, 2, 4, 7, 7, 2, 3, 1)}) {
    std::mt19937 rng(unsigned(g.h));
    const auto x = testing::random_floats(size_t(g.n * g.h * g.w * g.c), rng);
    const auto w = testing::random_floats(size_t(g.k * g.r * g.s * g.c), rng);
    const auto bias = testing::random_floats(size_t(g.k), rng);
    const GemmShape s = g.gemm();
    DietcodeArgs args;
    std::memset(&args, 0, sizeof(args));
    args.a = x.data(), args.b = w.data(), args.bias = bias.data();
    set_shape_args(OpKind::kConv2d, s, &g, &args);
    const auto got = testing::emu_run(reference("conv", conv_layout::conv_ref), args, s);
    const auto acc = conv2d_accumulate(x.data(), w.data(), g, 1);
    const auto want = dense_apply_epilogue(acc, bias.data(), Epilogue::kBiasRelu, s.M);
    const auto cmp = compare_dense(got.data(), want, acc, bias.data(), s.M);
    EXPECT_TRUE(cmp.ok) << cmp.message;
  }
}

}  // namespace
}  // namespace dietcode
