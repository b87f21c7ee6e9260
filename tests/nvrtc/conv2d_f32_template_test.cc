// Every branch of templates/conv2d_f32.cu compiles with NVRTC for sm_80 and sm_90 with no
// register spills: ResNet-50's layers (7x7 stride 2 with C = 3, 1x1, 3x3, 3x3 stride 2) with a
// dynamic batch, each pipeline mode, split-K with its reduction, every epilogue, dilation,
// and a fully dynamic geometry read from the arguments. Kernels go through generate_kernel, so
// the plan's compile-time checks run too. Prints registers and compile time per kernel.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "codegen/generated_kernel.h"
#include "codegen/template_source.h"
#include "nvrtc/gemm_f32_compile_check.h"
#include "nvrtc/simt_tile_params.h"

namespace dietcode {
namespace {

using testing::simt_tile;

struct Layer {
  int64_t h, w, c, k, r, s;
  int stride, pad, dilation = 1;
};

OpSpec conv_op(const Layer& l, Epilogue epilogue = Epilogue::kBiasRelu, bool dynamic = false) {
  OpSpec op;
  op.name = "conv";
  op.kind = OpKind::kConv2d;
  op.epilogue = epilogue;
  auto dim = [dynamic](const char* var, int64_t value) {
    return dynamic ? Expr::parse(var) : Expr::constant(value);
  };
  op.dims = {{"N", Expr::parse("N")}, {"H", dim("H", l.h)}, {"W", dim("W", l.w)},
             {"C", dim("C", l.c)},    {"K", dim("K", l.k)}, {"R", dim("R", l.r)},
             {"S", dim("S", l.s)}};
  op.stride[0] = op.stride[1] = l.stride;
  op.pad[0] = op.pad[1] = l.pad;
  op.dilation[0] = op.dilation[1] = l.dilation;
  op.vars = {"N"};
  return op;
}

void compile(const std::string& label, const OpSpec& op, const std::map<std::string, int>& p) {
  testing::compile_and_check(label, generate_kernel(op, MicroKernel{"conv2d_f32", p}));
}

const Layer kStem{224, 224, 3, 64, 7, 7, 2, 3};
const Layer k1x1{56, 56, 64, 256, 1, 1, 1, 0};
const Layer k3x3{56, 56, 64, 64, 3, 3, 1, 1};
const Layer k3x3s2{56, 56, 128, 128, 3, 3, 2, 1};
const Layer kShortcut{28, 28, 512, 1024, 1, 1, 2, 0};

TEST(Conv2dF32Template, CompilesAloneAtItsDefaults) {
  const std::string source = load_template_source("conv2d_f32.cu");
  for (const std::string arch : {"sm_80", "sm_90"}) {
    const auto build = testing::nvrtc_build("conv2d_f32.cu", source, {}, arch);
    ASSERT_TRUE(build.ok) << build.log;
    ASSERT_NE(build.entry("dietcode_conv2d_f32"), nullptr);
    EXPECT_EQ(build.entry("dietcode_conv2d_f32")->spill_stores, 0);
    ASSERT_NE(build.entry("dietcode_conv2d_f32_reduce"), nullptr);
  }
}

TEST(Conv2dF32Template, ResNetLayersAtTheDefaults) {
  compile("stem 7x7 s2 C=3 (VEC falls back to 1)", conv_op(kStem), {});
  compile("1x1 C=64 K=256", conv_op(k1x1, Epilogue::kBias), {});
  compile("3x3 C=64", conv_op(k3x3), {});
  compile("3x3 s2 C=128", conv_op(k3x3s2), {});
  compile("1x1 s2 shortcut C=512 K=1024", conv_op(kShortcut, Epilogue::kBias), {});
}

TEST(Conv2dF32Template, EveryPipelineMode) {
  for (int stages = 1; stages <= 4; ++stages)
    compile("3x3 STAGES=" + std::to_string(stages), conv_op(k3x3),
            simt_tile(4, 2, 4, 8, 8, 8, stages >= 3 ? 1 : 4, stages));
  compile("stem cp.async4 BK=16", conv_op(kStem), simt_tile(2, 2, 4, 8, 8, 16, 1, 4));
}

TEST(Conv2dF32Template, SplitKAndEveryEpilogue) {
  compile("3x3 s2 SPLITK=4 cp.async3", conv_op(k3x3s2), simt_tile(2, 2, 4, 4, 8, 16, 1, 3, 4));
  compile("1x1 SPLITK=2 vec4", conv_op(kShortcut, Epilogue::kBias),
          simt_tile(2, 2, 8, 4, 4, 8, 4, 2, 2));
  for (int e = 0; e <= 5; ++e)
    compile("3x3 EPILOGUE=" + std::to_string(e), conv_op(k3x3, static_cast<Epilogue>(e)),
            simt_tile(2, 2, 4, 4, 8, 8, 4, 2));
}

TEST(Conv2dF32Template, DilationDynamicGeometryAndExtremes) {
  compile("3x3 dilation 2 pad 2", conv_op({28, 28, 64, 64, 3, 3, 1, 2, 2}),
          simt_tile(2, 2, 4, 8, 4, 8, 4, 2));
  compile("dynamic H W C K R S, vec4", conv_op(k3x3, Epilogue::kBiasRelu, true),
          simt_tile(2, 2, 4, 8, 4, 8, 4, 2));
  compile("dynamic geometry, cp.async3", conv_op(k3x3, Epilogue::kNone, true),
          simt_tile(2, 2, 4, 8, 4, 16, 1, 3));
  compile("smallest: 1x1 warps, 1x32 lanes, 1x4", conv_op(k3x3), simt_tile(1, 1, 1, 1, 4, 4, 1, 1));
  // 512 threads of 8 x 8 tiles exceed the space's register budget (ptxas spills them too).
  compile("tall: 256x64 BK 16 cp.async3, 16 A rows per thread", conv_op(k3x3),
          simt_tile(4, 2, 8, 8, 8, 16, 1, 3));
  compile("512 threads of 4 x 8: 128x256 cp.async3", conv_op(k3x3),
          simt_tile(4, 4, 8, 4, 8, 8, 1, 3));
  compile("128x256 BK 32 4 stages", conv_op(k1x1), simt_tile(2, 4, 8, 8, 8, 32, 1, 4));
}

}  // namespace
}  // namespace dietcode
