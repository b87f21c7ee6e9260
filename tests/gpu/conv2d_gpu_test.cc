// conv2d_f32 micro-kernels on a real GPU against the CPU reference: ResNet-50's kinds of layer
// (the 7x7 stride-2 stem with C = 3, 1x1, 3x3, 3x3 stride 2, the 1x1 stride-2 shortcut) at
// their real sizes for batches N = 1 and 3, and small odd layers (dilation 2, non-square
// inputs, prime channel and filter counts, C that vector loads cannot use at run time) for
// N = 1, 2, 3, 5; sampled micro-kernels (each pipeline mode, vector widths, split-K, odd
// thread tiles), static and runtime geometry, every epilogue. Also the reference kernel agrees
// with the CPU. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "gpu/gemm_gpu_util.h"
#include "measure/cpu_reference.h"
#include "measure/gpu_operands.h"
#include "nvrtc/simt_tile_params.h"

namespace dietcode {
namespace {

using testing::CompiledKernel;
using testing::simt_tile;

struct Layer {
  const char* name;
  int64_t h, w, c, k, r, s;
  int stride, pad, dilation;
  std::vector<int64_t> batches;
};

const Layer kLayers[] = {
    {"stem 7x7 s2 p3 C=3", 224, 224, 3, 64, 7, 7, 2, 3, 1, {1, 3}},
    {"1x1 C=64 K=256", 56, 56, 64, 256, 1, 1, 1, 0, 1, {1, 3}},
    {"3x3 p1 C=64", 56, 56, 64, 64, 3, 3, 1, 1, 1, {1, 3}},
    {"3x3 s2 p1 C=128", 56, 56, 128, 128, 3, 3, 2, 1, 1, {1, 3}},
    {"1x1 s2 shortcut C=512 K=1024", 28, 28, 512, 1024, 1, 1, 2, 0, 1, {1, 3}},
    {"3x3 dilation 2 pad 2, 13x11, C=8 K=37", 13, 11, 8, 37, 3, 3, 1, 2, 2, {1, 2, 3, 5}},
    {"5x3 s2 p1 dilation 2, C=5 K=19", 17, 9, 5, 19, 5, 3, 2, 1, 2, {1, 2, 3, 5}},
    {"1x1 C=4 K=7 on 7x7", 7, 7, 4, 7, 1, 1, 1, 0, 1, {1, 2, 3, 5}},
};

OpSpec conv_op(const Layer& l, Epilogue epilogue, bool runtime_geometry) {
  OpSpec op;
  op.name = "conv";
  op.kind = OpKind::kConv2d;
  op.epilogue = epilogue;
  auto dim = [runtime_geometry](const char* var, int64_t value) {
    return runtime_geometry ? Expr::parse(var) : Expr::constant(value);
  };
  op.dims = {{"N", Expr::parse("N")}, {"H", dim("H", l.h)}, {"W", dim("W", l.w)},
             {"C", dim("C", l.c)},    {"K", dim("K", l.k)}, {"R", dim("R", l.r)},
             {"S", dim("S", l.s)}};
  op.stride[0] = op.stride[1] = l.stride;
  op.pad[0] = op.pad[1] = l.pad;
  op.dilation[0] = op.dilation[1] = l.dilation;
  op.vars = {"N", "H", "W", "C", "K", "R", "S"};
  return op;
}

const std::vector<std::pair<std::string, std::map<std::string, int>>>& samples() {
  static const std::vector<std::pair<std::string, std::map<std::string, int>>> s = {
      {"defaults 128x128 stages2 vec4", {}},
      {"64x64 bk16 cp.async3", simt_tile(2, 2, 4, 8, 4, 16, 1, 3)},
      {"32x32 bk8 single-buffer vec2", simt_tile(1, 1, 4, 8, 4, 8, 2, 1)},
      {"16x64 bk16 vec4 splitk4", simt_tile(1, 2, 4, 4, 4, 16, 4, 2, 4)},
      {"12x96 tm6 tn3 cp.async4 splitk3", simt_tile(1, 2, 2, 6, 3, 16, 1, 4, 3)},
      {"256x64 bk16 cp.async3", simt_tile(4, 2, 8, 8, 8, 16, 1, 3)},
  };
  return s;
}

struct Problem {
  Conv2dShape g;
  std::vector<float> x, w, bias;
  DenseAccumulation acc;
  testing::GpuBuffer dx, dw, dbias;
};

std::string make_problem(Problem& p, const Layer& l, int64_t n) {
  p.g = make_conv2d_shape(n, l.h, l.w, l.c, l.k, l.r, l.s, l.stride, l.pad, l.dilation);
  p.x = testing::random_floats(size_t(n * l.h * l.w * l.c), uint32_t(n * 7 + l.h));
  p.w = testing::random_floats(size_t(l.k * l.r * l.s * l.c), uint32_t(l.k * 3 + l.c));
  p.bias = testing::random_floats(size_t(l.k), uint32_t(l.k));
  p.acc = conv2d_accumulate(p.x.data(), p.w.data(), p.g);
  if (auto e = p.dx.upload(p.x); !e.empty()) return e;
  if (auto e = p.dw.upload(p.w); !e.empty()) return e;
  return p.dbias.upload(p.bias);
}

std::string run(const CompiledKernel& k, Problem& p, Epilogue epilogue) {
  const GemmShape s = p.g.gemm();
  static testing::GpuBuffer y;
  const size_t outputs = size_t(s.M * s.N);
  if (auto e = y.fill_nan(outputs); !e.empty()) return e;
  DietcodeArgs args;
  std::memset(&args, 0, sizeof(args));
  args.a = p.dx.as_arg();
  args.b = p.dw.as_arg();
  args.bias = epilogue_has_bias(epilogue) ? p.dbias.as_arg() : nullptr;
  args.c = y.as_arg();
  set_shape_args(OpKind::kConv2d, s, &p.g, &args);
  if (auto e = testing::launch_and_wait(k, args, s); !e.empty()) return e;
  std::vector<float> got;
  if (auto e = y.download(got, outputs); !e.empty()) return e;
  const bool with_bias = epilogue_has_bias(epilogue);
  const auto want = dense_apply_epilogue(p.acc, p.bias.data(), epilogue, s.M);
  const auto cmp = compare_dense(got.data(), want, p.acc, with_bias ? p.bias.data() : nullptr, s.M);
  return cmp.ok ? "" : cmp.message;
}

class Conv2dGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::test_gpu().error.empty()) GTEST_SKIP() << "no GPU: " << testing::test_gpu().error;
  }
};

// Sample i on layer j uses epilogue (i + j) % 6; the defaults and the split-K sample also run
// with the geometry read from the arguments.
TEST_F(Conv2dGpu, SampledMicroKernelsMatchTheReference) {
  for (size_t j = 0; j < std::size(kLayers); ++j) {
    const Layer& layer = kLayers[j];
    std::vector<CompiledKernel> kernels;
    std::vector<Epilogue> epilogues;
    for (size_t i = 0; i < samples().size(); ++i)
      for (const bool runtime : {false, true}) {
        if (runtime && i != 0 && i != 3) continue;
        const auto e = static_cast<Epilogue>((i + j) % 6);
        kernels.push_back({samples()[i].first + (runtime ? " runtime geometry" : " static"),
                           generate_kernel(conv_op(layer, e, runtime),
                                           MicroKernel{"conv2d_f32", samples()[i].second}),
                           {}});
        epilogues.push_back(e);
      }
    testing::compile_all(kernels);
    for (const int64_t n : layer.batches) {
      Problem p;
      ASSERT_EQ(make_problem(p, layer, n), "");
      for (size_t i = 0; i < kernels.size(); ++i)
        EXPECT_EQ(run(kernels[i], p, epilogues[i]), "")
            << layer.name << " N=" << n << ": " << kernels[i].label << " epilogue "
            << int(epilogues[i]);
    }
  }
}

TEST_F(Conv2dGpu, ReferenceKernelMatchesTheCpu) {
  for (const size_t j : {size_t(0), size_t(5), size_t(6)}) {
    std::vector<CompiledKernel> kernels = {
        {"reference",
         generate_reference_kernel(conv_op(kLayers[j], Epilogue::kBiasGelu, false)),
         {}}};
    testing::compile_all(kernels);
    Problem p;
    ASSERT_EQ(make_problem(p, kLayers[j], 2), "");
    EXPECT_EQ(run(kernels[0], p, Epilogue::kBiasGelu), "") << kLayers[j].name;
  }
}

}  // namespace
}  // namespace dietcode
