#include "pack/pack_source.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "common/error.h"
#include "pack/c_names.h"
#include "pack/manifest.h"
#include "pack/pack_writer.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;

Workload workload(const std::string& ops,
                  const std::string& vars = R"("T": {"min": 1, "max": 8})") {
  return parse_workload(R"({"name": "w", "shape_vars": {)" + vars + R"(}, "ops": [)" + ops + "]}",
                        "w.json");
}

TEST(PackSource, StringLiteralsEscapeEverythingOdd) {
  EXPECT_EQ(c_string_literal("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(c_string_literal(std::string("x\n\0?", 4)), R"("x\012\000\077")");
}

TEST(PackSource, WrapperPrototypes) {
  Workload w = workload(
      R"({"name": "fc1", "op": "dense", "dtype": "float32", "M": "16*T", "N": 64, "K": 32,
          "epilogue": "bias_gelu"},
         {"name": "att", "op": "batch_matmul", "dtype": "bfloat16", "B": "values", "M": "T",
          "N": "T", "K": 64})",
      R"("values": {"values": [1, 2]}, "T": {"min": 1, "max": 8})");
  EXPECT_EQ(wrapper_prototype(w, w.ops[0]),
            "int w_fc1(const float* X, const float* W, const float* bias, float* Y, int64_t T, "
            "void* stream)");
  // A shape variable called "values" would clash with the wrapper's local array.
  EXPECT_EQ(wrapper_prototype(w, w.ops[1]),
            "int w_att(const uint16_t* A, const uint16_t* B, uint16_t* Y, int64_t values_value, "
            "int64_t T, void* stream)");
}

TEST(PackSource, WrapperNamesMayNotClashWithTheAbi) {
  Workload w = parse_workload(R"({"name": "dietcode", "shape_vars": {"T": {"min": 1, "max": 2}},
      "ops": [{"name": "select", "op": "dense", "dtype": "float32", "M": "T", "N": 8, "K": 8}]})",
                              "w.json");
  try {
    wrapper_name(w, w.ops[0]);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(),
                 "w.json: ops[0].name: the pack function dietcode_select would clash "
                 "with the pack ABI (dietcode_*); rename the workload or op");
  }
}

TEST(PackSource, HeaderPathSitsBesideTheLibrary) {
  EXPECT_EQ(header_path_for("out/libbert_dense.so"), fs::path("out/bert_dense.h"));
  EXPECT_EQ(header_path_for("pack.so"), fs::path("pack.h"));
}

// `build -o w` once stopped with an internal error: the header's -l line took "lib" and ".so"
// off a name that had neither.
TEST(PackSource, LinkAdviceForAnyLibraryName) {
  EXPECT_EQ(link_advice("libbert_dense.so"), "Link with -lbert_dense or dlopen it.");
  EXPECT_EQ(link_advice("w"), "Link with its path (w) or dlopen it.");
  EXPECT_EQ(link_advice("lib.so"), "Link with its path (lib.so) or dlopen it.");
  EXPECT_EQ(link_advice("kernels.so"), "Link with its path (kernels.so) or dlopen it.");
}

// The generated shape -> GEMM function, compiled by the host C compiler, agrees with the
// workload's own gemm_shape() on every instance (and past the tuned range).
TEST(PackSource, ShapeFunctionsAgreeWithTheWorkload) {
  Workload w = workload(
      R"({"name": "d", "op": "dense", "dtype": "float32", "M": "16*T + 3", "N": 64, "K": "2*T"},
         {"name": "bmm", "op": "batch_matmul", "dtype": "float32", "B": "Bs", "M": "Bs*T",
          "N": 32, "K": "T + 1", "transpose_b": true},
         {"name": "conv", "op": "conv2d", "dtype": "float32", "layout": "NHWC", "N": "Bs",
          "H": "T + 6", "W": 9, "C": 3, "K": 8, "R": 3, "S": 2, "stride": [2, 1],
          "pad": [1, 0], "dilation": [1, 2]})",
      R"("Bs": {"values": [1, 3]}, "T": {"min": 1, "max": 5})");
  fs::path dir = fs::temp_directory_path() / ("dietcode_shape_c_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream c(dir / "shape.c");
  c << "#include <stdint.h>\n#include <stdio.h>\n#include \"dietcode_args.h\"\n";
  for (size_t i = 0; i < w.ops.size(); ++i)
    c << shape_function_c(w.ops[i], "shape_" + std::to_string(i));
  c << "int main(void) {\n  DietcodeArgs a;\n  int64_t v[2];\n";
  std::vector<std::pair<size_t, std::vector<int64_t>>> cases;
  for (size_t i = 0; i < w.ops.size(); ++i)
    for (int64_t b : {1, 3, 4})
      for (int64_t t = 1; t <= 7; ++t) {
        std::vector<int64_t> values =
            w.ops[i].vars.size() == 1 ? std::vector<int64_t>{t} : std::vector<int64_t>{b, t};
        cases.push_back({i, values});
        c << "  v[0] = " << values[0] << "; v[1] = " << (values.size() > 1 ? values[1] : 0)
          << "; shape_" << i << "(v, &a);\n"
          << "  printf(\"%lld %lld %lld %lld %lld %lld %lld %d %d %d\\n\", a.batch, a.m, a.n, "
             "a.k, a.stride_a, a.stride_b, a.stride_c, a.conv_p, a.conv_q, a.conv_h);\n";
      }
  // Past the cap of each value the arithmetic would wrap in 64 bits; the functions say so.
  c << "  v[0] = 2147483647; v[1] = 2147483647;\n"
       "  printf(\"fits %d %d %d\\n\", shape_0(v, &a), shape_1(v, &a), shape_2(v, &a));\n"
       "  v[0] = 3; v[1] = 5;\n"
       "  printf(\"fits %d %d %d\\n\", shape_0(v, &a), shape_1(v, &a), shape_2(v, &a));\n";
  c << "  return 0;\n}\n";
  c.close();
  std::string cmd = "cc -std=c99 -Wall -Werror -I" DIETCODE_SOURCE_DIR "/templates -o " +
                    (dir / "shape").string() + " " + (dir / "shape.c").string() + " && " +
                    (dir / "shape").string() + " > " + (dir / "out.txt").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream out(dir / "out.txt");
  for (const auto& [i, values] : cases) {
    long long batch, m, n, k, sa, sb, sc;
    int p, q, h;
    ASSERT_TRUE(out >> batch >> m >> n >> k >> sa >> sb >> sc >> p >> q >> h);
    GemmShape g = gemm_shape(w.ops[i], values);
    EXPECT_EQ(batch, g.batch) << w.ops[i].name;
    EXPECT_EQ(m, g.M) << w.ops[i].name;
    EXPECT_EQ(n, g.N) << w.ops[i].name;
    EXPECT_EQ(k, g.K) << w.ops[i].name;
    if (w.ops[i].kind != OpKind::kConv2d) {
      EXPECT_EQ(sa, g.M * g.K);
      EXPECT_EQ(sb, g.N * g.K);
    } else {
      auto dims = evaluate_dims(w.ops[i], values);
      EXPECT_EQ(h, dims.at("H"));
      EXPECT_EQ(int64_t(p) * q * dims.at("N"), g.M);
    }
    EXPECT_EQ(sc, g.M * g.N);
  }
  std::string rest((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
  // dense: M*K ~ 2^67; bmm: stride_a ~ 2^93; conv: H ~ 2^31 does not fit its 32-bit field.
  EXPECT_EQ(rest, "\nfits 0 0 0\nfits 1 1 1\n");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dietcode
