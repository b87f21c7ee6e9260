// The CPU target through the same seams as the GPU one, for real: a workload's ops -> the x86
// template spaces (space/templates.h) -> code generation (generate_kernel) -> the system C++
// compiler behind the Compiler seam (x86/cxx_compiler.h) -> the CPU measurer (x86/
// cpu_measurer.h), which checks every candidate against the CPU reference with guard bands and
// times it on a pinned thread pool. No stage here knows it serves a CPU except through the
// template's target and the implementations plugged in.
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <random>

#include "codegen/generated_kernel.h"
#include "space/space.h"
#include "space/templates.h"
#include "workload/workload.h"
#include "x86/cpu_measurer.h"
#include "x86/cxx_compiler.h"

namespace dietcode {
namespace {

// Odd sizes everywhere: primes, one past a register tile, K not a multiple of any KC.
const char kWorkload[] = R"({
  "name": "cpu_pipeline",
  "shape_vars": {"T": {"min": 1, "max": 13}},
  "ops": [
    {"name": "proj", "op": "dense", "dtype": "float32", "M": "T*3", "N": 97, "K": 131,
     "epilogue": "bias_gelu"},
    {"name": "up", "op": "dense", "dtype": "float32", "weight_layout": "KN", "M": "T*2", "N": 41,
     "K": 67, "epilogue": "bias"},
    {"name": "scores", "op": "batch_matmul", "dtype": "float32", "transpose_b": true,
     "B": 3, "M": "T", "N": "T+2", "K": 19},
    {"name": "conv", "op": "conv2d", "dtype": "float32", "layout": "NHWC", "N": "T", "H": 9,
     "W": 7, "C": 5, "K": 17, "R": 3, "S": 3, "stride": 2, "pad": 1, "epilogue": "bias_relu"}
  ]
})";

bool cpu_has_avx512() { return __builtin_cpu_supports("avx512f"); }

class CpuPipeline : public ::testing::Test {
 protected:
  void SetUp() override { workload_ = parse_workload(kWorkload, "cpu_pipeline.json"); }

  // SHARE_B's tunable `name` in `space`, as the tests below say.
  void expect_shared_b_tunable(const TemplateSpace& space, const std::string& name, int seeds);
  // `space` over the first op, whose largest shape is 39 x 97 x 131 (the CPU spaces read no
  // GPU limits).
  SearchSpace first_op_space(const TemplateSpace& space) {
    return SearchSpace(space, SpaceContext{no_gpu_, workload_.ops[0], {1, 39, 97, 131}});
  }
  GpuSpec no_gpu_;

  // The template's default micro-kernel and a few valid ones drawn from its space.
  std::vector<MicroKernel> candidates(const TemplateSpace& space, const OpSpec& op) {
    std::vector<Instance> instances = expand_instances(workload_, op);
    GemmShape largest;
    for (const Instance& i : instances)
      largest = {std::max(largest.batch, i.gemm.batch), std::max(largest.M, i.gemm.M),
                 std::max(largest.N, i.gemm.N), std::max(largest.K, i.gemm.K)};
    GpuSpec unused;  // the CPU spaces read no GPU limits
    SpaceContext context{unused, op, largest};
    SearchSpace search(space, context);
    std::vector<MicroKernel> out = {space.defaults()};
    EXPECT_TRUE(search.is_valid(out[0]));
    std::mt19937_64 rng(7);
    for (int i = 0; i < 2; ++i)
      if (auto mk = search.sample(rng)) out.push_back(*mk);
    return out;
  }

  void run_template(const TemplateSpace& space) {
    const std::string level = x86_isa_level(space.tmpl);
    CxxCompiler compiler;
    CpuMeasurerOptions options;
    options.threads = 2;
    options.arch = level;
    options.measure.warmup = 1;
    options.measure.repeats = 3;
    options.measure.flush_l2 = false;
    CpuMeasurer measurer(std::make_unique<WorkerProcess>(cpu_worker_command_for_tests()), options);
    for (const OpSpec& op : workload_.ops) {
      // The BLIS form computes every op; the dot and W-broadcast forms those whose B is
      // K-contiguous: dense with W [N,K] and batch_matmul NT.
      const std::vector<const TemplateSpace*> spaces = template_spaces_for(op, Target::kCpu);
      const bool listed = std::find(spaces.begin(), spaces.end(), &space) != spaces.end();
      ASSERT_EQ(listed, space.supports(op)) << op.name;
      ASSERT_EQ(spaces.size(), op.kind != OpKind::kConv2d && op.b_k_contiguous() ? 6u : 2u)
          << op.name;
      if (!listed) continue;
      std::vector<MeasureInput> inputs;
      for (const MicroKernel& mk : candidates(space, op)) {
        MeasureInput in;
        in.op = &op;
        in.mk = mk;
        in.kernel = generate_kernel(op, mk);
        CompileRequest request{in.kernel.name + ".cc", in.kernel.source, in.kernel.options,
                               {level}, false};
        in.compiled = compiler.compile(request);
        ASSERT_TRUE(in.compiled.ok) << mk.key() << "\n" << in.compiled.log.substr(0, 2000);
        in.instances = expand_instances(workload_, op);
        inputs.push_back(std::move(in));
      }
      std::vector<MeasureResult> results = measurer.measure(inputs);
      ASSERT_EQ(results.size(), inputs.size());
      for (size_t i = 0; i < results.size(); ++i) {
        EXPECT_EQ(results[i].status, MeasureStatus::kOk)
            << op.name << " " << inputs[i].mk.key() << ": " << results[i].error;
        for (double us : results[i].latency_us) EXPECT_TRUE(std::isfinite(us) && us > 0);
      }
    }
    const DeviceIdentity id = measurer.device();
    EXPECT_EQ(id.arch, level);
    EXPECT_FALSE(id.simulated);
  }

  static std::vector<std::string> cpu_worker_command_for_tests() {
    return {DIETCODE_CLI_PATH, kCpuMeasureWorkerSubcommand};
  }

  Workload workload_;
};

TEST_F(CpuPipeline, GeneratedKernelsNameTheirInstantiationAndShareNothingElse) {
  const OpSpec& op = workload_.ops[0];
  GeneratedKernel a = generate_kernel(op, x86_avx2_f32_space().defaults());
  MicroKernel other = x86_avx2_f32_space().defaults();
  other.params["KC"] = 128;
  GeneratedKernel b = generate_kernel(op, other);
  EXPECT_NE(a.plan.entry, b.plan.entry);
  EXPECT_EQ(a.plan.entry.rfind("dietcode_cpu_", 0), 0u);
  EXPECT_NE(a.source.find("dc_x86::run<dc_x86::OpKind::kDense, dc_x86::Epilogue::kBiasGelu, "
                          "dc_x86::Params<6, 16, 256, 72, 3072, 0, 0, 1, 0, 4, "
                          "dc_x86::Isa::kAvx2, 0>, 97, 131>"),
            std::string::npos);
  // A kernel logged before WORKERS was a tunable ran on every worker, and still does.
  MicroKernel logged_before = x86_avx2_f32_space().defaults();
  logged_before.params.erase("WORKERS");
  EXPECT_EQ(generate_kernel(op, logged_before).source, a.source);
  EXPECT_EQ(a.source.find("\n#include \""), std::string::npos);  // self-contained
  EXPECT_EQ(a.plan.tile_m, 6);
  EXPECT_EQ(a.plan.tile_n, 16);
  // The constant-weights unit (tune --constant-weights compiles it): the same templates with
  // the two constant-weights entries and no per-call one.
  const ConstantWeightsEntries& cw = a.constant_weights;
  ASSERT_FALSE(cw.prepack.empty());
  EXPECT_NE(a.source.find(" " + a.plan.entry + "("), std::string::npos);
  EXPECT_EQ(cw.standalone_source.find(" " + a.plan.entry + "("), std::string::npos);
  EXPECT_NE(cw.standalone_source.find(" " + cw.prepack + "("), std::string::npos);
  EXPECT_NE(cw.standalone_source.find(" " + cw.run_prepacked + "("), std::string::npos);
  EXPECT_EQ(a.source.substr(0, a.source.find("\n// ---- the candidate")),
            cw.standalone_source.substr(0, cw.standalone_source.find("\n// ---- constant weights")));
  EXPECT_TRUE(template_spaces_for(op).size() >= 1);  // the CUDA templates stay the default
  for (const TemplateSpace* s : template_spaces_for(op)) EXPECT_EQ(s->target, Target::kCuda);
}

TEST_F(CpuPipeline, TheRegisterFileBoundsTheTile) {
  SearchSpace avx2 = first_op_space(x86_avx2_f32_space());
  MicroKernel mk = x86_avx2_f32_space().defaults();
  mk.params["MR"] = 8;  // 8 x 2 accumulators + 2 + 1 = 19 > 16 registers
  mk.params["MC"] = 48;
  std::string why;
  EXPECT_FALSE(avx2.is_valid(mk, &why));
  EXPECT_NE(why.find("fit the vector registers"), std::string::npos) << why;
  mk.params["NR"] = 8;  // 8 + 1 + 1 = 10
  EXPECT_TRUE(avx2.is_valid(mk, &why)) << why;
}

// PREFETCH_TILE (the W-broadcast form's) reaches the template as the Params' last argument,
// and only when set: a kernel logged before it existed, or with 0, compiles to the very same
// instantiation, entry and cached object as before. It needs a prefetch distance.
TEST_F(CpuPipeline, NextTilePrefetchIsWrittenOnlyWhenSet) {
  const OpSpec& op = workload_.ops[0];
  SearchSpace s = first_op_space(x86_avx2_wbcast_f32_space());
  MicroKernel mk = x86_avx2_wbcast_f32_space().defaults();
  EXPECT_EQ(mk.get("PREFETCH_TILE"), 0);
  const GeneratedKernel plain = generate_kernel(op, mk);
  EXPECT_NE(plain.source.find("dc_x86::Isa::kAvx2, 0>, 97, 131>"), std::string::npos);
  MicroKernel logged_before = mk;
  logged_before.params.erase("PREFETCH_TILE");
  EXPECT_EQ(generate_kernel(op, logged_before).plan.entry, plain.plan.entry);
  mk.params["PREFETCH_TILE"] = 1;
  std::string why;
  EXPECT_TRUE(s.is_valid(mk, &why)) << why;
  const GeneratedKernel next = generate_kernel(op, mk);
  EXPECT_NE(next.source.find("dc_x86::Isa::kAvx2, 0, 1>, 97, 131>"), std::string::npos);
  EXPECT_NE(next.plan.entry, plain.plan.entry);
  mk.params["PREFETCH"] = 0;
  EXPECT_FALSE(s.is_valid(mk, &why));
  EXPECT_NE(why.find("PREFETCH > 0"), std::string::npos) << why;
  // The first round times it: the AVX2 form's seed.
  bool seeded = false;
  for (const MicroKernel& k : x86_avx2_wbcast_f32_space().starting_kernels())
    seeded |= k.get("PREFETCH_TILE") == 1 && s.is_valid(k, &why);
  EXPECT_TRUE(seeded);
}

// SHARE_B under its space's name (SHARE_X in the W-broadcast form's, SHARE_W in the BLIS
// form's) is the Params' argument after PREFETCH_TILE, written only when set, so kernels
// logged before it keep their entries. Its default is 0, what those kernels ran, and seeds
// bring 1 into the first round (at least `seeds` of them); bands (THREADS_M) and one worker
// go without it.
void CpuPipeline::expect_shared_b_tunable(const TemplateSpace& space, const std::string& name,
                                          int seeds) {
  const OpSpec& op = workload_.ops[0];
  SearchSpace s = first_op_space(space);
  MicroKernel mk = space.defaults();
  EXPECT_EQ(mk.get(name), 0);
  std::string why;
  int seeded = 0;
  for (const MicroKernel& k : space.starting_kernels()) seeded += k.get(name) == 1 && s.is_valid(k, &why);
  EXPECT_GE(seeded, seeds) << name;
  mk.params[name] = 1;
  EXPECT_TRUE(s.is_valid(mk, &why)) << why;
  const GeneratedKernel shared = generate_kernel(op, mk);
  EXPECT_NE(shared.source.find("dc_x86::Isa::kAvx2, 0, 0, 1>, 97, 131>"), std::string::npos);
  MicroKernel logged_before = mk;
  logged_before.params.erase(name);
  const GeneratedKernel banded = generate_kernel(op, logged_before);
  EXPECT_NE(banded.source.find("dc_x86::Isa::kAvx2, 0>, 97, 131>"), std::string::npos);
  EXPECT_NE(banded.plan.entry, shared.plan.entry);
  mk.params["THREADS_M"] = 2;
  EXPECT_FALSE(s.is_valid(mk, &why));
  EXPECT_NE(why.find("no thread bands"), std::string::npos) << why;
  mk.params["THREADS_M"] = 0;
  mk.params["WORKERS"] = 1;
  EXPECT_FALSE(s.is_valid(mk, &why));
  EXPECT_NE(why.find("shares nothing"), std::string::npos) << why;
  mk.params[name] = 0;
  EXPECT_TRUE(s.is_valid(mk, &why)) << why;
}

TEST_F(CpuPipeline, SharedXIsWrittenOnlyWhenSetAndTakesNoBands) {
  expect_shared_b_tunable(x86_avx2_wbcast_f32_space(), "SHARE_X", 2);
  // With PREFETCH_TILE, which comes before it.
  MicroKernel mk = x86_avx2_wbcast_f32_space().defaults();
  mk.params["SHARE_X"] = 1;
  mk.params["PREFETCH_TILE"] = 1;
  EXPECT_NE(generate_kernel(workload_.ops[0], mk).source.find("dc_x86::Isa::kAvx2, 0, 1, 1>, 97, 131>"),
            std::string::npos);
}

TEST_F(CpuPipeline, SharedWIsWrittenOnlyWhenSetAndTakesNoBands) {
  expect_shared_b_tunable(x86_avx2_f32_space(), "SHARE_W", 1);
}

// The AVX2 form's other seed is oneDNN's AVX2 sgemm tile, 4 rows of W by 24 of X (three
// vectors), valid for BERT's dense ops and timed in the first rounds with the 6 x 16 default.
TEST_F(CpuPipeline, TheWbcastFormIsSeededWithTheVendorsAvx2Tile) {
  SearchSpace s = first_op_space(x86_avx2_wbcast_f32_space());
  const std::vector<MicroKernel> start = x86_avx2_wbcast_f32_space().starting_kernels();
  std::string why;
  bool seeded = false;
  for (const MicroKernel& k : start)
    seeded |= k.get("MR") == 4 && k.get("NR") == 24 && s.is_valid(k, &why);
  EXPECT_TRUE(seeded) << why;
  EXPECT_EQ(start.front().get("MR"), 6);  // the default stays first
}

// The AVX-512 BLIS form's seed is the register tile of oneDNN's AVX-512 matmul, 6 rows of X by
// 64 columns of W (four vectors, 24 accumulators), valid there and timed in the first round
// after the default and its shared-W twin.
TEST_F(CpuPipeline, TheAvx512BlisFormIsSeededWithTheVendorsTile) {
  SearchSpace s = first_op_space(x86_avx512_f32_space());
  const std::vector<MicroKernel> start = x86_avx512_f32_space().starting_kernels();
  std::string why;
  bool seeded = false;
  for (const MicroKernel& k : start)
    seeded |= k.get("MR") == 6 && k.get("NR") == 64 && k.get("KC") == 512 &&
              k.get("LOOP_ORDER") == 0 && k.get("SHARE_W") == 0 && s.is_valid(k, &why);
  EXPECT_TRUE(seeded) << why;
  EXPECT_EQ(start.front(), x86_avx512_f32_space().defaults());  // the default stays first
}

TEST_F(CpuPipeline, OneWorkerTakesNoThreadGrid) {
  const OpSpec& op = workload_.ops[0];
  for (const TemplateSpace* space :
       {&x86_avx2_f32_space(), &x86_avx2_dot_f32_space(), &x86_avx2_wbcast_f32_space()}) {
    SearchSpace s = first_op_space(*space);
    MicroKernel mk = space->defaults();
    EXPECT_EQ(mk.get("WORKERS"), 0) << space->tmpl;
    mk.params["WORKERS"] = 1;
    mk.params["THREADS_M"] = 2;
    std::string why;
    EXPECT_FALSE(s.is_valid(mk, &why)) << space->tmpl;
    EXPECT_NE(why.find("no thread grid"), std::string::npos) << why;
    mk.params["THREADS_M"] = 0;
    EXPECT_TRUE(s.is_valid(mk, &why)) << space->tmpl << ": " << why;
    EXPECT_NE(generate_kernel(op, mk).source.find("dc_x86::Isa::kAvx2, 1>"), std::string::npos)
        << space->tmpl;
  }
}

TEST_F(CpuPipeline, Avx2KernelsCompileCheckAndTimeForEveryOp) { run_template(x86_avx2_f32_space()); }

TEST_F(CpuPipeline, Avx512KernelsCompileCheckAndTimeForEveryOp) {
  if (!cpu_has_avx512()) GTEST_SKIP() << "this CPU has no AVX-512";
  run_template(x86_avx512_f32_space());
}

TEST_F(CpuPipeline, Avx2DotKernelsCompileCheckAndTimeForTheirOps) {
  run_template(x86_avx2_dot_f32_space());
}

TEST_F(CpuPipeline, Avx512DotKernelsCompileCheckAndTimeForTheirOps) {
  if (!cpu_has_avx512()) GTEST_SKIP() << "this CPU has no AVX-512";
  run_template(x86_avx512_dot_f32_space());
}

TEST_F(CpuPipeline, Avx2WbcastKernelsCompileCheckAndTimeForTheirOps) {
  run_template(x86_avx2_wbcast_f32_space());
}

TEST_F(CpuPipeline, Avx512WbcastKernelsCompileCheckAndTimeForTheirOps) {
  if (!cpu_has_avx512()) GTEST_SKIP() << "this CPU has no AVX-512";
  run_template(x86_avx512_wbcast_f32_space());
}

}  // namespace
}  // namespace dietcode
