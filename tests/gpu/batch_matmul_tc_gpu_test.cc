// 16-bit batch_matmul on tensor cores on a real GPU against the 16-bit CPU reference: sampled
// dense_tc micro-kernels (sm_80+) for both B layouts they read (B stored [N,K]: attention
// scores Q.K^T; B stored [K,N]: probs.V) and dense_wgmma micro-kernels with either producer
// (compute capability 9.0) for B stored [N,K], in float16 and bfloat16, on BERT's
// attention for T = 1..17, 31, 64, 127..129 and on shapes with tails in M, N and K (N and K
// not multiples of 8 included). Also the 16-bit reference kernel agrees with the CPU in every
// layout. Skipped without a GPU. The TMA producer needs a static K that is a multiple of 8:
// it runs on the scores (K = 64), not on the tails with a runtime K.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "gpu/gemm_gpu_util.h"
#include "measure/cpu_reference_half.h"
#include "measure/gpu_operands.h"

namespace dietcode {
namespace {

using testing::CompiledKernel;
using testing::test_gpu;

Expr dim(const std::string& text) {
  return std::isdigit(static_cast<unsigned char>(text[0])) ? Expr::constant(std::stoll(text))
                                                           : Expr::parse(text);
}

OpSpec bmm_op(bool ta, bool tb, const std::string& n, const std::string& k, DType dtype,
              Epilogue epilogue = Epilogue::kNone) {
  OpSpec op;
  op.name = "bmm";
  op.kind = OpKind::kBatchMatmul;
  op.dtype = dtype;
  op.epilogue = epilogue;
  op.transpose_a = ta, op.transpose_b = tb;
  op.dims = {{"B", Expr::parse("B")}, {"M", Expr::parse("M")}, {"N", dim(n)}, {"K", dim(k)}};
  op.vars = {"B", "M", "N", "K", "T"};
  return op;
}

struct Sample {
  std::string label;
  std::string tmpl;
  std::map<std::string, int> params;
};

std::map<std::string, int> tc(int warps_m, int warps_n, int wm, int wn, int bk, int stages,
                              int split) {
  return {{"WARPS_M", warps_m}, {"WARPS_N", warps_n}, {"WM", wm},       {"WN", wn},
          {"BK", bk},           {"STAGES", stages},   {"SPLITK", split}};
}

// dense_tc everywhere; dense_wgmma on compute capability 9.0 and only for B stored [N,K], with
// the TMA producer too when K is static and a multiple of 8.
std::vector<Sample> samples(bool b_k_contiguous, bool static_k8 = false) {
  std::vector<Sample> s = {
      {"tc defaults 128x64", "dense_tc", {}},
      {"tc 16x8 one warp", "dense_tc", tc(1, 1, 16, 8, 32, 2, 1)},
      {"tc 64x48 odd n8 bk64 splitk3", "dense_tc", tc(2, 2, 32, 24, 64, 3, 3)},
      {"tc 32x128 bk64 4 stages", "dense_tc", tc(1, 2, 32, 64, 64, 4, 1)},
  };
  if (b_k_contiguous && test_gpu().spec.cc_major == 9 && test_gpu().spec.cc_minor == 0) {
    s.push_back({"wgmma 128x128", "dense_wgmma", {}});
    s.push_back({"wgmma 64x64 splitk2",
                 "dense_wgmma",
                 {{"WG_M", 1}, {"BN", 64}, {"STAGES", 3}, {"SPLITK", 2}, {"PRODUCER", 0}}});
    if (static_k8) {
      s.push_back({"wgmma tma 128x128", "dense_wgmma", {{"PRODUCER", 1}}});
      s.push_back({"wgmma tma 64x64 splitk2",
                   "dense_wgmma",
                   {{"WG_M", 1}, {"BN", 64}, {"STAGES", 3}, {"SPLITK", 2}, {"PRODUCER", 1}}});
    }
  }
  return s;
}

// One problem's 16-bit operands (stored as the layout reads them) and its CPU reference.
struct Problem {
  GemmShape shape;
  bool ta = false, tb = true;
  DType dtype = DType::kBFloat16;
  std::vector<uint16_t> a, b;
  DenseAccumulation acc;
  testing::GpuBuffer da, db;
};

std::string make_problem(Problem& p, const GemmShape& s, bool ta, bool tb, DType dtype) {
  p.shape = s, p.ta = ta, p.tb = tb, p.dtype = dtype;
  p.a = floats_to_elements(testing::random_floats(size_t(s.batch * s.M * s.K), uint32_t(s.M + s.K)),
                           dtype);
  p.b = floats_to_elements(
      testing::random_floats(size_t(s.batch * s.N * s.K), uint32_t(s.N * 7 + s.K)), dtype);
  p.acc =
      batch_matmul_accumulate_16bit(p.a.data(), p.b.data(), s.batch, s.M, s.N, s.K, ta, tb, dtype);
  if (auto e = p.da.upload(p.a); !e.empty()) return e;
  return p.db.upload(p.b);
}

// Runs kernel k on problem p and compares; returns "" or what went wrong.
std::string run(const CompiledKernel& k, Problem& p, Epilogue epilogue) {
  const GemmShape& s = p.shape;
  static testing::GpuBuffer c;
  const size_t outputs = size_t(s.batch * s.M * s.N);
  if (auto e = c.fill_bytes(0xFF, outputs * 2); !e.empty()) return e;  // NaN: unwritten fails
  DietcodeArgs args;
  std::memset(&args, 0, sizeof(args));
  args.a = p.da.as_arg();
  args.b = p.db.as_arg();
  args.c = c.as_arg();
  set_shape_args(OpKind::kBatchMatmul, s, nullptr, &args);
  if (auto e = testing::launch_and_wait(k, args, s); !e.empty()) return e;
  std::vector<uint16_t> got;
  if (auto e = c.download(got, outputs); !e.empty()) return e;
  const auto want = dense_apply_epilogue_16bit(p.acc, nullptr, epilogue, s.batch * s.M, p.dtype);
  const auto cmp = compare_dense_16bit(got.data(), want, p.acc, nullptr, s.batch * s.M, p.dtype);
  return cmp.ok ? "" : cmp.message;
}

class BatchMatmulTcGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test_gpu().error.empty()) GTEST_SKIP() << "no GPU: " << test_gpu().error;
    if (test_gpu().spec.cc_major < 8)
      GTEST_SKIP() << "tensor-core templates need sm_80 or newer, GPU is " << test_gpu().arch;
  }
};

std::string shape_text(const GemmShape& s) {
  return "batch=" + std::to_string(s.batch) + " M=" + std::to_string(s.M) +
         " N=" + std::to_string(s.N) + " K=" + std::to_string(s.K);
}

const Epilogue kEpilogues[] = {Epilogue::kNone, Epilogue::kRelu, Epilogue::kGelu};

TEST_F(BatchMatmulTcGpu, BertAttentionOverTBothLayouts) {
  const int64_t ts[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,   10,  11,
                        12, 13, 14, 15, 16, 17, 31, 64, 127, 128, 129};
  for (const DType dtype : {DType::kBFloat16, DType::kFloat16})
    for (const bool scores : {true, false}) {
      std::vector<CompiledKernel> kernels;
      const auto s = samples(scores, /*static_k8=*/scores);  // scores: K = 64
      for (size_t i = 0; i < s.size(); ++i) {
        const OpSpec op = scores ? bmm_op(false, true, "T", "64", dtype, kEpilogues[i % 3])
                                 : bmm_op(false, false, "64", "T", dtype, kEpilogues[i % 3]);
        kernels.push_back(
            {s[i].label, generate_kernel(op, MicroKernel{s[i].tmpl, s[i].params}), {}});
      }
      testing::compile_all(kernels);
      for (const int64_t t : ts) {
        const GemmShape shape = scores ? GemmShape{24, t, t, 64} : GemmShape{24, t, 64, t};
        Problem p;
        ASSERT_EQ(make_problem(p, shape, false, scores, dtype), "");
        for (size_t i = 0; i < kernels.size(); ++i)
          EXPECT_EQ(run(kernels[i], p, kEpilogues[i % 3]), "")
              << to_string(dtype) << (scores ? " scores " : " values ") << kernels[i].label
              << " T=" << t;
      }
    }
}

TEST_F(BatchMatmulTcGpu, TailsInEveryDimensionWithDynamicDims) {
  const GemmShape shapes[] = {{3, 1, 1, 1},       {2, 13, 17, 19}, {2, 31, 37, 40},
                              {1, 129, 130, 136}, {3, 65, 72, 13}, {2, 200, 45, 72}};
  for (const bool tb : {true, false}) {
    std::vector<CompiledKernel> kernels;
    const auto s = samples(tb);
    for (const auto& sample : s)
      kernels.push_back({sample.label,
                         generate_kernel(bmm_op(false, tb, "N", "K", DType::kBFloat16),
                                         MicroKernel{sample.tmpl, sample.params}),
                         {}});
    testing::compile_all(kernels);
    for (const GemmShape& shape : shapes) {
      Problem p;
      ASSERT_EQ(make_problem(p, shape, false, tb, DType::kBFloat16), "");
      for (const auto& k : kernels)
        EXPECT_EQ(run(k, p, Epilogue::kNone), "")
            << "tb=" << tb << " " << k.label << " " << shape_text(shape);
    }
  }
}

TEST_F(BatchMatmulTcGpu, SixteenBitReferenceKernelMatchesTheCpuInEveryLayout) {
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      std::vector<CompiledKernel> kernels = {
          {"reference",
           generate_reference_kernel(bmm_op(ta, tb, "N", "K", DType::kFloat16, Epilogue::kGelu)),
           {}}};
      testing::compile_all(kernels);
      Problem p;
      ASSERT_EQ(make_problem(p, {3, 37, 29, 41}, ta, tb, DType::kFloat16), "");
      EXPECT_EQ(run(kernels[0], p, Epilogue::kGelu), "") << "ta=" << ta << " tb=" << tb;
    }
}

}  // namespace
}  // namespace dietcode
