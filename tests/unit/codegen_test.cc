// Code generation for dense_f32: NVRTC options, static dimensions, the VEC fallback for a K
// that vectors cannot tile, a self-contained source, and the launch plan's grid and workspace.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "codegen/generated_kernel.h"
#include "codegen/template_source.h"
#include "common/error.h"
#include "space/templates.h"

namespace dietcode {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

OpSpec dense_op(const std::string& n, const std::string& k, Epilogue epilogue = Epilogue::kNone) {
  OpSpec op;
  op.name = "fc";
  op.kind = OpKind::kDense;
  op.dtype = DType::kFloat32;
  op.epilogue = epilogue;
  auto dim = [](const std::string& text) {
    return std::isdigit(static_cast<unsigned char>(text[0])) ? Expr::constant(std::stoll(text))
                                                             : Expr::parse(text);
  };
  op.dims = {{"M", Expr::parse("16*T")}, {"N", dim(n)}, {"K", dim(k)}};
  op.vars = {"T"};
  return op;
}

MicroKernel mk(std::map<std::string, int> params) { return MicroKernel{"dense_f32", params}; }

TEST(Codegen, PassesEveryTunableStaticDimsAndEpilogue) {
  const auto k =
      generate_kernel(dense_op("3072", "768", Epilogue::kBiasGelu), mk({{"TM", 4}, {"SPLITK", 2}}));
  EXPECT_EQ(k.name, "dense_f32");
  for (const auto& t : dense_f32_space().tunables) {
    const int expected = t.name == "TM" ? 4 : t.name == "SPLITK" ? 2 : t.default_value;
    EXPECT_THAT(k.options, Contains("-D" + t.name + "=" + std::to_string(expected)));
  }
  EXPECT_THAT(k.options, Contains("-DSTATIC_N=3072"));
  EXPECT_THAT(k.options, Contains("-DSTATIC_K=768"));
  EXPECT_THAT(k.options, Contains("-DEPILOGUE=5"));
  EXPECT_THAT(k.options, Contains("-DDIETCODE_EXPECT_THREADS=256"));
}

TEST(Codegen, DynamicDimsStayRuntime) {
  const auto k = generate_kernel(dense_op("N", "K", Epilogue::kRelu), mk({}));
  for (const auto& o : k.options) {
    EXPECT_THAT(o, Not(HasSubstr("STATIC_")));
  }
  EXPECT_THAT(k.options, Contains("-DEPILOGUE=2"));
  EXPECT_THAT(k.options, Contains("-DVEC=4"));
  EXPECT_EQ(k.plan.min_alignment_bytes, 16);
}

TEST(Codegen, FallsBackToScalarLoadsWhenStaticKIsNotAMultipleOfVec) {
  const auto odd = generate_kernel(dense_op("1000", "771"), mk({{"VEC", 4}}));
  EXPECT_THAT(odd.options, Contains("-DVEC=1"));
  EXPECT_THAT(odd.options, Contains("-DSTATIC_K=771"));
  EXPECT_EQ(odd.plan.min_alignment_bytes, 4);
  const auto even = generate_kernel(dense_op("1000", "770"), mk({{"VEC", 4}}));
  EXPECT_THAT(even.options, Contains("-DVEC=1"));  // 770 % 4 != 0 either
  const auto two = generate_kernel(dense_op("1000", "770"), mk({{"VEC", 2}}));
  EXPECT_THAT(two.options, Contains("-DVEC=2"));
  EXPECT_EQ(two.plan.min_alignment_bytes, 8);
  const auto cp_async = generate_kernel(dense_op("768", "768"), mk({{"VEC", 1}, {"STAGES", 3}}));
  EXPECT_EQ(cp_async.plan.min_alignment_bytes, 4);
}

TEST(Codegen, SourceIsSelfContained) {
  const auto k = generate_kernel(dense_op("768", "768"), mk({}));
  EXPECT_THAT(k.source, HasSubstr("typedef struct DietcodeArgs"));
  EXPECT_THAT(k.source, HasSubstr("dietcode_dense_f32("));
  EXPECT_THAT(k.source, Not(HasSubstr("#include \"")));
}

TEST(Codegen, PlanFollowsTheMicroKernel) {
  const auto params = std::map<std::string, int>{
      {"WARPS_M", 1}, {"WARPS_N", 2}, {"THREADS_M", 2}, {"THREADS_N", 16}, {"TM", 6},
      {"TN", 4},      {"BK", 16},     {"VEC", 1},       {"STAGES", 3},     {"SPLITK", 4}};
  const auto k = generate_kernel(dense_op("768", "3072"), mk(params));
  const LaunchPlan& p = k.plan;
  EXPECT_EQ(p.entry, "dietcode_dense_f32");
  EXPECT_EQ(p.reduce_entry, "dietcode_dense_f32_reduce");
  EXPECT_EQ(p.threads, 64);
  EXPECT_EQ(p.tile_m, 12);
  EXPECT_EQ(p.tile_n, 128);
  EXPECT_EQ(p.split_k, 4);
  EXPECT_EQ(p.dynamic_smem_bytes, 3 * 16 * (12 + 132) * 4);
  EXPECT_THAT(k.options,
              Contains("-DDIETCODE_EXPECT_SMEM=" + std::to_string(p.dynamic_smem_bytes)));

  const GemmShape shape{1, 100, 768, 3072};
  EXPECT_EQ(p.workspace_bytes(shape), 4LL * 100 * 768 * 4);
  unsigned g[3];
  p.grid(shape, g);
  EXPECT_EQ(g[0], 6u);  // 768 / 128
  EXPECT_EQ(g[1], 9u);  // ceil(100 / 12)
  EXPECT_EQ(g[2], 4u);  // split_k
  p.reduce_grid(shape, g);
  EXPECT_EQ(g[0], unsigned((100 * 768 + 1023) / 1024));
  EXPECT_EQ(g[1], 1u);
  EXPECT_EQ(g[2], 1u);
}

TEST(Codegen, NoSplitMeansNoReductionAndNoWorkspace) {
  const auto k = generate_kernel(dense_op("2304", "768"), mk({}));
  EXPECT_EQ(k.plan.split_k, 1);
  EXPECT_EQ(k.plan.reduce_entry, "");
  EXPECT_EQ(k.plan.workspace_bytes(GemmShape{1, 2048, 2304, 768}), 0);
  unsigned g[3];
  k.plan.grid(GemmShape{1, 2048, 2304, 768}, g);
  EXPECT_EQ(g[0], 18u);
  EXPECT_EQ(g[1], 16u);
  EXPECT_EQ(g[2], 1u);
  k.plan.grid(GemmShape{1, 1, 1, 1}, g);
  EXPECT_EQ(g[0], 1u);
  EXPECT_EQ(g[1], 1u);
  // A grid's y is clamped; the kernel loops over the M tiles past it.
  k.plan.grid(GemmShape{1, 128LL * 70000, 2304, 768}, g);
  EXPECT_EQ(g[1], 65535u);
  try {
    k.plan.grid(GemmShape{1, 0, 2304, 768}, g);
    FAIL() << "no exception";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "shape batch=1 M=0 N=2304 K=768: every extent must be >= 1");
  }
}

TEST(Codegen, ThreadsNFollowsThreadsMWhenLeftOut) {
  const auto k = generate_kernel(dense_op("768", "768"), mk({{"THREADS_M", 8}}));
  EXPECT_THAT(k.options, Contains("-DTHREADS_N=4"));
  EXPECT_EQ(k.plan.tile_n, 2 * 4 * 8);
}

TEST(Codegen, RejectsWhatItCannotGenerate) {
  try {
    generate_kernel(dense_op("768", "768"), MicroKernel{"dense_f64", {}});
    FAIL() << "no exception";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "unknown template \"dense_f64\"");
  }
  try {
    generate_kernel(dense_op("768", "768"), mk({{"BM", 64}}));
    FAIL() << "no exception";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "dense_f32: unknown tunable \"BM\"");
  }
  OpSpec half = dense_op("768", "768");
  half.dtype = DType::kFloat16;
  try {
    generate_kernel(half, mk({}));
    FAIL() << "no exception";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "template \"dense_f32\" cannot compute op \"fc\" (dense, float16)");
  }
}

TEST(Codegen, ReferenceKernel) {
  const auto k = generate_reference_kernel(dense_op("1000", "771", Epilogue::kBiasRelu));
  EXPECT_EQ(k.name, "reference_gemm");
  EXPECT_EQ(k.plan.entry, "dietcode_reference_gemm");
  EXPECT_EQ(k.plan.threads, 256);
  EXPECT_EQ(k.options, std::vector<std::string>{"-DEPILOGUE=3"});
  EXPECT_THAT(k.source, HasSubstr("typedef struct DietcodeArgs"));
  unsigned g[3];
  k.plan.grid(GemmShape{1, 33, 1000, 771}, g);
  EXPECT_EQ(g[0], 63u);
  EXPECT_EQ(g[1], 3u);
  EXPECT_EQ(g[2], 1u);
}

TEST(TemplateSource, InlinesLocalHeadersOnceAndKeepsSystemIncludes) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("dietcode_tmpl_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "k.cu") << "#include \"a.h\"\n#include <x>\n  #include \"b.h\"\nbody\n";
  std::ofstream(dir / "a.h") << "#include \"b.h\"\nA\n";
  std::ofstream(dir / "b.h") << "B\n";
  const std::string text = load_template_source(dir, "k.cu");
  EXPECT_EQ(text,
            "// ---- begin a.h\n// ---- begin b.h\nB\n// ---- end b.h\nA\n// ---- end a.h\n"
            "#include <x>\nbody\n");
  try {
    load_template_source(dir, "missing.cu");
    FAIL() << "no exception";
  } catch (const EnvironmentError& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "missing.cu").string() + ": cannot read template");
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dietcode
