// float16 / bfloat16 batch_matmul on the tensor-core templates, through generate_kernel as the
// tuner makes them: A[b] = [M,K] and B[b] stored [N,K] (attention scores Q.K^T) compile with
// NVRTC and no register spills for dense_tc on sm_80 and sm_90 and for dense_wgmma (both
// producers) on sm_90a; B[b] stored [K,N] (probs.V) for dense_tc; the 16-bit reference kernel
// compiles for every batch_matmul layout. (What code generation passes for them:
// tests/unit/tensor_core_bmm_codegen_test.cc.) Prints registers and compile time per
// kernel and arch.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "codegen/generated_kernel.h"
#include "nvrtc/dense_f32_nvrtc.h"

namespace dietcode {
namespace {

using ::testing::Contains;
using ::testing::Not;

Expr dim(int64_t value, const char* var) {
  return value > 0 ? Expr::constant(value) : Expr::parse(var);
}

// BERT attention's shapes by default: 192 heads x batch, sequence T, head size 64.
OpSpec bmm_op(int64_t n, int64_t k, DType dtype, bool transpose_a = false,
              bool transpose_b = true) {
  OpSpec op;
  op.name = "qk";
  op.kind = OpKind::kBatchMatmul;
  op.dtype = dtype;
  op.transpose_a = transpose_a, op.transpose_b = transpose_b;
  op.dims = {
      {"B", Expr::constant(192)}, {"M", Expr::parse("T")}, {"N", dim(n, "T")}, {"K", dim(k, "T")}};
  op.vars = {"T"};
  return op;
}

struct Case {
  std::string label;
  std::string tmpl;
  std::map<std::string, int> params;
  int64_t n = 0, k = 64;  // 0: dynamic (T)
  DType dtype = DType::kBFloat16;
  bool transpose_b = true;  // false: B stored [K,N] (probs.V), dense_tc only
};

std::map<std::string, int> tc(int warps_m, int warps_n, int wm, int wn, int bk, int stages,
                              int split = 1) {
  return {{"WARPS_M", warps_m}, {"WARPS_N", warps_n}, {"WM", wm},       {"WN", wn},
          {"BK", bk},           {"STAGES", stages},   {"SPLITK", split}};
}

std::map<std::string, int> wg(int wg_m, int bn, int stages, int split, int producer) {
  return {
      {"WG_M", wg_m}, {"BN", bn}, {"STAGES", stages}, {"SPLITK", split}, {"PRODUCER", producer}};
}

struct Job {
  const Case* c;
  GeneratedKernel kernel;
  std::string arch;
  testing::NvrtcBuild build;
};

void compile_cases(const std::vector<Case>& cases) {
  std::vector<Job> jobs;
  for (const Case& c : cases) {
    const GeneratedKernel kernel = generate_kernel(bmm_op(c.n, c.k, c.dtype, false, c.transpose_b),
                                                   MicroKernel{c.tmpl, c.params});
    const std::vector<std::string> archs = c.tmpl == "dense_wgmma"
                                               ? std::vector<std::string>{"sm_90a"}
                                               : std::vector<std::string>{"sm_80", "sm_90"};
    for (const auto& arch : archs) jobs.push_back({&c, kernel, arch, {}});
  }
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next++) < jobs.size();)
      jobs[i].build = testing::nvrtc_build(jobs[i].kernel.name + ".cu", jobs[i].kernel.source,
                                           jobs[i].kernel.options, jobs[i].arch);
  };
  std::thread helper(worker);
  worker();
  helper.join();
  for (const Job& job : jobs) {
    SCOPED_TRACE(job.c->label + " " + job.arch);
    ASSERT_TRUE(job.build.ok) << job.build.log;
    std::vector<std::string> entries{job.kernel.plan.entry};
    if (!job.kernel.plan.reduce_entry.empty()) entries.push_back(job.kernel.plan.reduce_entry);
    for (const auto& entry : entries) {
      const KernelResources* r = job.build.entry(entry);
      ASSERT_NE(r, nullptr) << "no ptxas report for " << entry << "\n" << job.build.log;
      EXPECT_EQ(r->spill_stores, 0) << entry;
      EXPECT_EQ(r->spill_loads, 0) << entry;
      EXPECT_LE(r->registers, 255);
    }
    std::printf("%-52s %-6s %3d registers  %6.3f s\n", job.c->label.c_str(), job.arch.c_str(),
                job.build.entry(job.kernel.plan.entry)->registers, job.build.seconds);
  }
}

TEST(BatchMatmulTcTemplate, DenseTcVariantsCompileWithoutSpills) {
  compile_cases({
      {"QK^T defaults bf16 K=64", "dense_tc", {}},
      {"QK^T f16 16x8 warp, dynamic N", "dense_tc", tc(1, 1, 16, 8, 32, 2), 0, 64, DType::kFloat16},
      {"QK^T 2x2 warps 32x32 BK64 SPLITK=2", "dense_tc", tc(2, 2, 32, 32, 64, 3, 2)},
      {"dynamic K (scalar fallback) N=128", "dense_tc", tc(2, 2, 64, 32, 32, 3), 128, 0},
      {"static K=72 N=45 f16 SPLITK=3", "dense_tc", tc(1, 2, 48, 16, 32, 4, 3), 45, 72,
       DType::kFloat16},
  });
}

// probs.V: B stored [K,N], read with ldmatrix .trans; N = 64 (the head size) or runtime, and
// block tiles whose B rows have 1, 2, 4, 8 and 16 chunks (every swizzle width).
TEST(BatchMatmulTcTemplate, DenseTcWithBStoredKNCompilesWithoutSpills) {
  const bool kn = false;
  compile_cases({
      {"PV defaults bf16 N=64", "dense_tc", {}, 64, 0, DType::kBFloat16, kn},
      {"PV f16 16x8 warp (1 chunk), dynamic N", "dense_tc", tc(1, 1, 16, 8, 32, 2), 0, 0,
       DType::kFloat16, kn},
      {"PV 2x2 warps 32x24 (6 chunks) SPLITK=3", "dense_tc", tc(2, 2, 32, 24, 64, 3, 3), 64, 0,
       DType::kBFloat16, kn},
      {"PV 1x2 warps 48x16 (4 chunks) static K=72", "dense_tc", tc(1, 2, 48, 16, 32, 4), 64, 72,
       DType::kFloat16, kn},
      {"PV 2x2 warps 64x64 (16 chunks) BK64 4 stages", "dense_tc", tc(2, 2, 64, 64, 64, 4), 0, 0,
       DType::kBFloat16, kn},
      {"PV largest: 4x2 warps of 64x64 BK64 4 stages", "dense_tc", tc(4, 2, 64, 64, 64, 4), 0, 0,
       DType::kBFloat16, kn},
      {"PV one warp 128x32", "dense_tc", tc(1, 1, 128, 32, 32, 3), 64, 0, DType::kBFloat16, kn},
      {"PV one warp 16x128 BK64 4 stages", "dense_tc", tc(1, 1, 16, 128, 64, 4), 0, 0,
       DType::kFloat16, kn},
      {"PV 32 warps 8x4 of 16x16, 1024 threads", "dense_tc", tc(8, 4, 16, 16, 32, 2), 64, 0,
       DType::kBFloat16, kn},
      {"PV static N=45 (2-byte B loads)", "dense_tc", tc(2, 2, 32, 32, 32, 3), 45, 0,
       DType::kFloat16, kn},
  });
}

TEST(BatchMatmulTcTemplate, DenseWgmmaVariantsCompileWithoutSpillsForBothProducers) {
  std::vector<Case> cases;
  for (int producer : {0, 1}) {
    const std::string p = producer ? "TMA " : "cp.async ";
    cases.push_back({p + "QK^T WG_M=1 BN=64", "dense_wgmma", wg(1, 64, 4, 1, producer)});
    cases.push_back({p + "QK^T WG_M=2 BN=128 SPLITK=2 f16", "dense_wgmma",
                     wg(2, 128, 3, 2, producer), 0, 64, DType::kFloat16});
    cases.push_back(
        {p + "static N=512 K=64 BN=256", "dense_wgmma", wg(2, 256, 4, 1, producer), 512, 64});
  }
  cases.push_back({"cp.async dynamic K", "dense_wgmma", wg(2, 128, 4, 1, 0), 0, 0});
  compile_cases(cases);
}

TEST(BatchMatmulTcTemplate, ReferenceKernelCompilesForEveryLayout) {
  for (const DType dtype : {DType::kFloat16, DType::kBFloat16})
    for (const bool ta : {false, true})
      for (const bool tb : {false, true}) {
        const auto k = generate_reference_kernel(bmm_op(0, 0, dtype, ta, tb));
        EXPECT_THAT(k.options, Not(Contains("-DCONV_NHWC=1")));
        for (const std::string arch : {"sm_80", "sm_90"}) {
          const auto build = testing::nvrtc_build("reference_gemm.cu", k.source, k.options, arch);
          ASSERT_TRUE(build.ok) << to_string(dtype) << " " << ta << tb << " " << arch << "\n"
                                << build.log;
          ASSERT_NE(build.entry("dietcode_reference_gemm"), nullptr);
        }
      }
}

}  // namespace
}  // namespace dietcode
