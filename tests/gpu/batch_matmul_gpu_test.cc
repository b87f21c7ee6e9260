// batch_matmul_f32 micro-kernels on a real GPU against the CPU reference: every transpose
// combination with dynamic M, N and K on shapes with 1s, primes and tails of every tile, BERT's
// attention (scores with a static K = 64 and values with a static N = 64) for T = 1..17, 31,
// 37, 64, 127..129, sampled micro-kernels (each pipeline mode, vector widths that do and do
// not divide tile or pitch, split-K, odd thread tiles) and every batch_matmul epilogue. Also
// the reference kernel in every layout agrees with the CPU. Skipped without a GPU.
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

Expr dim(const std::string& text) {
  return std::isdigit(static_cast<unsigned char>(text[0])) ? Expr::constant(std::stoll(text))
                                                           : Expr::parse(text);
}

OpSpec bmm_op(bool ta, bool tb, const std::string& m, const std::string& n, const std::string& k,
              Epilogue epilogue) {
  OpSpec op;
  op.name = "bmm";
  op.kind = OpKind::kBatchMatmul;
  op.epilogue = epilogue;
  op.transpose_a = ta, op.transpose_b = tb;
  op.dims = {{"B", Expr::parse("B")}, {"M", dim(m)}, {"N", dim(n)}, {"K", dim(k)}};
  op.vars = {"B", "M", "N", "K", "T"};
  return op;
}

const std::vector<std::pair<std::string, std::map<std::string, int>>>& samples() {
  static const std::vector<std::pair<std::string, std::map<std::string, int>>> s = {
      {"defaults 128x128 stages2 vec4", {}},
      {"64x64 bk16 cp.async3", simt_tile(2, 2, 4, 8, 4, 16, 1, 3)},
      {"32x32 bk8 single-buffer vec2", simt_tile(1, 1, 4, 8, 4, 8, 2, 1)},
      {"16x64 bk16 vec4 splitk4", simt_tile(1, 2, 4, 4, 4, 16, 4, 2, 4)},
      {"12x96 tm6 tn3 cp.async4 splitk3", simt_tile(1, 2, 2, 6, 3, 16, 1, 4, 3)},
      {"6x48 vec4 (float2 chunks along M)", simt_tile(1, 1, 2, 3, 3, 8, 4, 2)},
      {"64x3 vec4 single-buffer splitk2", simt_tile(1, 1, 32, 2, 3, 4, 4, 1, 2)},
  };
  return s;
}

const Epilogue kEpilogues[] = {Epilogue::kNone, Epilogue::kRelu, Epilogue::kGelu};

// One layout's inputs, stored as that layout reads them, with its CPU reference.
struct Problem {
  GemmShape shape;
  bool ta, tb;
  std::vector<float> a, b;
  DenseAccumulation acc;
  testing::GpuBuffer da, db;
};

// Fills p for a shape and layout and uploads its operands; returns "" or what went wrong.
std::string make_problem(Problem& p, const GemmShape& s, bool ta, bool tb) {
  p.shape = s;
  p.ta = ta, p.tb = tb;
  p.a = testing::random_floats(size_t(s.batch * s.M * s.K), uint32_t(s.M * 31 + s.K));
  p.b = testing::random_floats(size_t(s.batch * s.K * s.N), uint32_t(s.N * 17 + s.K));
  p.acc = batch_matmul_accumulate(p.a.data(), p.b.data(), s.batch, s.M, s.N, s.K, ta, tb);
  if (auto e = p.da.upload(p.a); !e.empty()) return e;
  return p.db.upload(p.b);
}

// Runs kernel k on problem p and compares; returns "" or what went wrong.
std::string run(const CompiledKernel& k, Problem& p, Epilogue epilogue) {
  const GemmShape& s = p.shape;
  static testing::GpuBuffer c;
  const size_t outputs = size_t(s.batch * s.M * s.N);
  if (auto e = c.fill_nan(outputs); !e.empty()) return e;  // unwritten outputs fail
  DietcodeArgs args;
  std::memset(&args, 0, sizeof(args));
  args.a = p.da.as_arg();
  args.b = p.db.as_arg();
  args.c = c.as_arg();
  set_shape_args(OpKind::kBatchMatmul, s, nullptr, &args);
  if (auto e = testing::launch_and_wait(k, args, s); !e.empty()) return e;
  std::vector<float> got;
  if (auto e = c.download(got, outputs); !e.empty()) return e;
  const auto want = dense_apply_epilogue(p.acc, nullptr, epilogue, s.batch * s.M);
  const auto cmp = compare_dense(got.data(), want, p.acc, nullptr, s.batch * s.M);
  return cmp.ok ? "" : cmp.message;
}

class BatchMatmulGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::test_gpu().error.empty()) GTEST_SKIP() << "no GPU: " << testing::test_gpu().error;
  }
};

std::string shape_text(const GemmShape& s) {
  return "batch=" + std::to_string(s.batch) + " M=" + std::to_string(s.M) +
         " N=" + std::to_string(s.N) + " K=" + std::to_string(s.K);
}

TEST_F(BatchMatmulGpu, EveryTransposeWithDynamicDims) {
  const GemmShape shapes[] = {{3, 1, 1, 1},    {2, 1, 64, 64},     {3, 13, 17, 19},
                              {2, 31, 37, 41}, {1, 128, 129, 127}, {2, 255, 33, 67},
                              {4, 64, 64, 64}, {1, 7, 200, 3}};
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      std::vector<CompiledKernel> kernels;
      for (size_t i = 0; i < samples().size(); ++i) {
        const Epilogue e = kEpilogues[(i + ta + 2 * tb) % 3];
        kernels.push_back({samples()[i].first + " epilogue " + std::to_string(int(e)),
                           generate_kernel(bmm_op(ta, tb, "M", "N", "K", e),
                                           MicroKernel{"batch_matmul_f32", samples()[i].second}),
                           {}});
      }
      testing::compile_all(kernels);
      for (const GemmShape& s : shapes) {
        Problem p;
        ASSERT_EQ(make_problem(p, s, ta, tb), "");
        for (size_t i = 0; i < kernels.size(); ++i) {
          const Epilogue e = kEpilogues[(i + ta + 2 * tb) % 3];
          const std::string error = run(kernels[i], p, e);
          EXPECT_EQ(error, "") << "ta=" << ta << " tb=" << tb << " " << kernels[i].label << " "
                               << shape_text(s);
        }
      }
    }
}

TEST_F(BatchMatmulGpu, BertAttentionOverT) {
  const int64_t ts[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,   10,  11, 12,
                        13, 14, 15, 16, 17, 31, 37, 64, 127, 128, 129};
  // Scores: Q[T,64] . K[T,64]^T per head; values: P[T,T] . V[T,64].
  for (const bool scores : {true, false}) {
    std::vector<CompiledKernel> kernels;
    for (size_t i = 0; i < samples().size(); ++i) {
      const OpSpec op = scores ? bmm_op(false, true, "T", "T", "64", kEpilogues[i % 3])
                               : bmm_op(false, false, "T", "64", "T", kEpilogues[i % 3]);
      kernels.push_back({samples()[i].first,
                         generate_kernel(op, MicroKernel{"batch_matmul_f32", samples()[i].second}),
                         {}});
    }
    testing::compile_all(kernels);
    for (const int64_t t : ts) {
      const GemmShape s = scores ? GemmShape{12, t, t, 64} : GemmShape{12, t, 64, t};
      Problem p;
      ASSERT_EQ(make_problem(p, s, false, scores), "");
      for (size_t i = 0; i < kernels.size(); ++i)
        EXPECT_EQ(run(kernels[i], p, kEpilogues[i % 3]), "")
            << (scores ? "scores " : "values ") << kernels[i].label << " T=" << t;
    }
  }
}

TEST_F(BatchMatmulGpu, ReferenceKernelMatchesTheCpuInEveryLayout) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      std::vector<CompiledKernel> kernels = {
          {"reference",
           generate_reference_kernel(bmm_op(ta, tb, "M", "N", "K", Epilogue::kGelu)),
           {}}};
      testing::compile_all(kernels);
      Problem p;
      ASSERT_EQ(make_problem(p, {3, 37, 29, 41}, ta, tb), "");
      EXPECT_EQ(run(kernels[0], p, Epilogue::kGelu), "") << "ta=" << ta << " tb=" << tb;
    }
}

}  // namespace
}  // namespace dietcode
