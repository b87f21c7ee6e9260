// The CPU baselines (oneDNN, OpenBLAS) against the double-precision CPU reference, for real:
// libdnnl2 and libopenblas0-openmp are installed on the CPU machines (scripts/setup.sh). Each
// test skips itself when its library does not load.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench/cpu_baseline.h"
#include "bench/onednn_loader.h"
#include "bench/openblas_loader.h"
#include "common/error.h"
#include "measure/conv2d_shape.h"
#include "measure/cpu_reference.h"

namespace dietcode {
namespace {

std::vector<float> random_floats(int64_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = dist(rng);
  return v;
}

// Skips the calling test when the library is missing (with the loader's line).
#define SKIP_WITHOUT(name)                                                      \
  do {                                                                          \
    std::string why_missing;                                                    \
    if (!library_loads(name, &why_missing)) GTEST_SKIP() << why_missing;        \
  } while (0)

bool library_loads(const std::string& name, std::string* why) {
  try {
    if (name == "onednn") onednn_api();
    if (name == "openblas") openblas_api();
    return true;
  } catch (const EnvironmentError& e) {
    *why = e.what();
    return false;
  }
}

OpSpec op_of(OpKind kind, Epilogue epilogue, bool ta = false, bool tb = false) {
  OpSpec op;
  op.name = "op";
  op.kind = kind;
  op.epilogue = epilogue;
  op.transpose_a = ta;
  op.transpose_b = tb;
  return op;
}

const Epilogue kAllEpilogues[] = {Epilogue::kNone, Epilogue::kBias,     Epilogue::kRelu,
                                  Epilogue::kBiasRelu, Epilogue::kGelu, Epilogue::kBiasGelu};

// Runs `baseline` on a dense instance and checks it against the reference.
void check_dense(CpuBaseline& baseline, int64_t M, int64_t N, int64_t K, Epilogue epilogue,
                 uint64_t seed) {
  SCOPED_TRACE(baseline.name() + " dense " + std::to_string(M) + "x" + std::to_string(N) + "x" +
               std::to_string(K) + " " + to_string(epilogue));
  const std::vector<float> x = random_floats(M * K, seed), w = random_floats(N * K, seed + 1),
                           bias = random_floats(N, seed + 2);
  std::vector<float> y(size_t(M * N), -7.0f);
  const OpSpec op = op_of(OpKind::kDense, epilogue);
  std::string what;
  ASSERT_TRUE(baseline.supports(op, &what)) << what;
  baseline.prepare(op, GemmShape{1, M, N, K}, nullptr,
                   {x.data(), w.data(), epilogue_has_bias(epilogue) ? bias.data() : nullptr,
                    y.data()});
  baseline.run();
  baseline.run();  // twice: a run leaves nothing behind that changes the next
  const DenseAccumulation acc = dense_accumulate(x.data(), w.data(), M, N, K, 1);
  const std::vector<float> want = dense_apply_epilogue(acc, bias.data(), epilogue, M);
  const DenseComparison c = compare_dense(y.data(), want, acc, bias.data(), M);
  EXPECT_TRUE(c.ok) << c.message;
}

void check_batch_matmul(CpuBaseline& baseline, int64_t B, int64_t M, int64_t N, int64_t K,
                        bool ta, bool tb, Epilogue epilogue, uint64_t seed) {
  SCOPED_TRACE(baseline.name() + " batch_matmul ta=" + std::to_string(ta) +
               " tb=" + std::to_string(tb) + " " + to_string(epilogue));
  const std::vector<float> a = random_floats(B * M * K, seed), b = random_floats(B * K * N, seed + 1);
  std::vector<float> y(size_t(B * M * N), -7.0f);
  const OpSpec op = op_of(OpKind::kBatchMatmul, epilogue, ta, tb);
  std::string what;
  ASSERT_TRUE(baseline.supports(op, &what)) << what;
  baseline.prepare(op, GemmShape{B, M, N, K}, nullptr, {a.data(), b.data(), nullptr, y.data()});
  baseline.run();
  const DenseAccumulation acc = batch_matmul_accumulate(a.data(), b.data(), B, M, N, K, ta, tb, 1);
  const std::vector<float> want = dense_apply_epilogue(acc, nullptr, epilogue, B * M);
  const DenseComparison c = compare_dense(y.data(), want, acc, nullptr, B * M);
  EXPECT_TRUE(c.ok) << c.message;
}

void check_conv2d(CpuBaseline& baseline, const Conv2dShape& s, Epilogue epilogue, uint64_t seed) {
  SCOPED_TRACE(baseline.name() + " conv2d " + std::to_string(s.r) + "x" + std::to_string(s.s) +
               " stride " + std::to_string(s.stride_h) + " pad " + std::to_string(s.pad_h) +
               " dilation " + std::to_string(s.dilation_h) + " " + to_string(epilogue));
  const std::vector<float> x = random_floats(s.n * s.h * s.w * s.c, seed),
                           wt = random_floats(s.k * s.r * s.s * s.c, seed + 1),
                           bias = random_floats(s.k, seed + 2);
  const GemmShape g = s.gemm();
  std::vector<float> y(size_t(g.M * g.N), -7.0f);
  OpSpec op = op_of(OpKind::kConv2d, epilogue);
  op.stride[0] = s.stride_h;
  op.stride[1] = s.stride_w;
  op.pad[0] = s.pad_h;
  op.pad[1] = s.pad_w;
  op.dilation[0] = s.dilation_h;
  op.dilation[1] = s.dilation_w;
  std::string what;
  ASSERT_TRUE(baseline.supports(op, &what)) << what;
  baseline.prepare(op, g, &s,
                   {x.data(), wt.data(), epilogue_has_bias(epilogue) ? bias.data() : nullptr,
                    y.data()});
  baseline.run();
  baseline.run();
  const DenseAccumulation acc = conv2d_accumulate(x.data(), wt.data(), s, 1);
  const std::vector<float> want = dense_apply_epilogue(acc, bias.data(), epilogue, g.M);
  const DenseComparison c = compare_dense(y.data(), want, acc, bias.data(), g.M);
  EXPECT_TRUE(c.ok) << c.message << " (" << baseline.instance_detail() << ")";
}

class CpuBaselines : public ::testing::TestWithParam<std::string> {};

TEST_P(CpuBaselines, LabelAndSupports) {
  SKIP_WITHOUT(GetParam());
  auto baseline = make_cpu_baseline(GetParam(), 2);
  EXPECT_EQ(baseline->name(), GetParam());
  EXPECT_EQ(baseline->threads(), 2);
  if (GetParam() == "onednn") {
    EXPECT_EQ(baseline->label().rfind("oneDNN 2.", 0), 0u) << baseline->label();
  } else {
    EXPECT_EQ(baseline->label().rfind("OpenBLAS 0.", 0), 0u) << baseline->label();
    EXPECT_NE(baseline->label().find("(openmp)"), std::string::npos) << baseline->label();
    EXPECT_NE(baseline->label().find("sgemm + separate epilogue"), std::string::npos);
  }
  std::printf("%s: %s\n", GetParam().c_str(), baseline->label().c_str());

  std::string what;
  for (OpKind kind : {OpKind::kDense, OpKind::kBatchMatmul, OpKind::kConv2d}) {
    const Epilogue e = kind == OpKind::kBatchMatmul ? Epilogue::kGelu : Epilogue::kBiasGelu;
    EXPECT_TRUE(baseline->supports(op_of(kind, e), &what));
    EXPECT_EQ(what.find('\n'), std::string::npos);
    std::printf("  %s: %s\n", to_string(kind), what.c_str());
  }
  if (GetParam() == "onednn") {
    baseline->supports(op_of(OpKind::kDense, Epilogue::kBiasRelu), &what);
    EXPECT_NE(what.find("fused bias + relu"), std::string::npos) << what;
  } else {
    baseline->supports(op_of(OpKind::kDense, Epilogue::kBiasRelu), &what);
    EXPECT_NE(what.find("separate pass"), std::string::npos) << what;
  }
  OpSpec half = op_of(OpKind::kDense, Epilogue::kNone);
  half.dtype = DType::kFloat16;
  EXPECT_FALSE(baseline->supports(half, &what));
  EXPECT_NE(what.find("fp32 only"), std::string::npos) << what;
  EXPECT_FALSE(baseline->supports(op_of(OpKind::kBatchMatmul, Epilogue::kBias), &what));
  EXPECT_THROW(baseline->prepare(half, GemmShape{1, 4, 4, 4}, nullptr, {}), std::invalid_argument);
  EXPECT_THROW(baseline->run(), std::logic_error);
}

TEST_P(CpuBaselines, DenseEveryEpilogue) {
  SKIP_WITHOUT(GetParam());
  auto baseline = make_cpu_baseline(GetParam(), 2);
  uint64_t seed = 10;
  for (Epilogue e : kAllEpilogues) check_dense(*baseline, 37, 29, 53, e, seed += 3);
  // A single row, a wide odd one, and a larger one that takes the multi-threaded paths.
  check_dense(*baseline, 1, 67, 19, Epilogue::kBiasGelu, 100);
  check_dense(*baseline, 129, 97, 131, Epilogue::kBiasRelu, 200);
  check_dense(*baseline, 256, 200, 300, Epilogue::kBias, 300);
}

TEST_P(CpuBaselines, BatchMatmulEveryTranspose) {
  SKIP_WITHOUT(GetParam());
  auto baseline = make_cpu_baseline(GetParam(), 2);
  uint64_t seed = 20;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      check_batch_matmul(*baseline, 3, 17, 23, 31, ta, tb, Epilogue::kNone, seed += 3);
      check_batch_matmul(*baseline, 1, 9, 5, 13, ta, tb, Epilogue::kRelu, seed += 3);
    }
  check_batch_matmul(*baseline, 5, 33, 21, 11, true, false, Epilogue::kGelu, 400);
}

TEST_P(CpuBaselines, Conv2d) {
  SKIP_WITHOUT(GetParam());
  auto baseline = make_cpu_baseline(GetParam(), 2);
  // 3x3, stride 2, pad 1 on odd extents, every epilogue.
  const Conv2dShape s = make_conv2d_shape(2, 11, 9, 5, 7, 3, 3, /*stride=*/2, /*pad=*/1);
  uint64_t seed = 30;
  for (Epilogue e : kAllEpilogues) check_conv2d(*baseline, s, e, seed += 3);
  // 1x1 (OpenBLAS's no-im2col path), dilation 2, and a non-square filter on more channels.
  check_conv2d(*baseline, make_conv2d_shape(1, 7, 5, 16, 24, 1, 1), Epilogue::kBiasRelu, 500);
  check_conv2d(*baseline, make_conv2d_shape(1, 13, 12, 3, 8, 3, 3, 1, 2, 2), Epilogue::kBias, 600);
  check_conv2d(*baseline, make_conv2d_shape(1, 9, 10, 32, 16, 1, 3, 1, 0), Epilogue::kGelu, 700);
  check_conv2d(*baseline, make_conv2d_shape(2, 14, 14, 64, 64, 3, 3, 1, 1), Epilogue::kBiasGelu,
               800);
}

// Constant weights: oneDNN's matmul takes W in the layout it chooses, reordered in prepare();
// the results stay right, and OpenBLAS computes as before.
TEST_P(CpuBaselines, ConstantWeights) {
  SKIP_WITHOUT(GetParam());
  auto baseline = make_cpu_baseline(GetParam(), 2, /*constant_weights=*/true);
  std::string what;
  ASSERT_TRUE(baseline->supports(op_of(OpKind::kDense, Epilogue::kBias), &what));
  if (GetParam() == "onednn")
    EXPECT_NE(what.find("weights constant: in the layout it chooses"), std::string::npos) << what;
  check_dense(*baseline, 1, 67, 19, Epilogue::kBiasGelu, 900);
  check_dense(*baseline, 37, 96, 128, Epilogue::kBias, 901);
  check_dense(*baseline, 128, 200, 300, Epilogue::kBiasRelu, 902);
  check_conv2d(*baseline, make_conv2d_shape(2, 14, 14, 64, 64, 3, 3, 1, 1), Epilogue::kBiasRelu,
               903);
}

INSTANTIATE_TEST_SUITE_P(Libraries, CpuBaselines, ::testing::Values("onednn", "openblas"),
                         [](const auto& info) { return info.param; });

// Both libraries in one process, on the one libgomp, each with its own thread count, taking
// turns on the same thread: every result stays right and each keeps to its count.
TEST(CpuBaselinesTogether, ShareLibgompInOneProcess) {
  SKIP_WITHOUT("onednn");
  SKIP_WITHOUT("openblas");
  auto onednn = make_cpu_baseline("onednn", 2);
  auto openblas = make_cpu_baseline("openblas", 2);
  auto openblas1 = make_cpu_baseline("openblas", 1);
  for (int round = 0; round < 3; ++round) {
    check_dense(*onednn, 131, 96, 160, Epilogue::kBiasGelu, 40 + round);
    check_dense(*openblas, 131, 96, 160, Epilogue::kBiasGelu, 50 + round);
    check_conv2d(*onednn, make_conv2d_shape(1, 15, 15, 8, 16, 3, 3, 2, 1), Epilogue::kBiasRelu,
                 60 + round);
    check_batch_matmul(*openblas1, 4, 33, 17, 29, false, true, Epilogue::kRelu, 70 + round);
    check_conv2d(*openblas, make_conv2d_shape(1, 15, 15, 8, 16, 3, 3, 2, 1), Epilogue::kBiasRelu,
                 80 + round);
  }
  // Each run sets its own count on the shared ICV (the check_* helpers' buffers are gone, so
  // prepare again on live ones).
  const std::vector<float> x = random_floats(64 * 64, 90), w = random_floats(64 * 64, 91);
  std::vector<float> y(64 * 64);
  const OpSpec op = op_of(OpKind::kDense, Epilogue::kNone);
  openblas1->prepare(op, GemmShape{1, 64, 64, 64}, nullptr, {x.data(), w.data(), nullptr, y.data()});
  onednn->prepare(op, GemmShape{1, 64, 64, 64}, nullptr, {x.data(), w.data(), nullptr, y.data()});
  const OnednnApi& api = onednn_api();
  ASSERT_NE(api.omp_get_max_threads, nullptr);
  EXPECT_EQ(api.omp_get_max_threads(), 2);
  openblas1->run();
  EXPECT_EQ(api.omp_get_max_threads(), 1);
  EXPECT_EQ(openblas_api().openblas_get_num_threads(), 1);
  onednn->run();
  EXPECT_EQ(api.omp_get_max_threads(), 2);
}

// Throughput of both on one BERT-base-like GEMM, 1 and 2 threads, interleaved: printed for the
// record: no assertion on speed, since the machines are shared and noisy (another process on
// one of the two cores makes a 2-thread run several times slower than a 1-thread one).
TEST(CpuBaselinesTogether, ThroughputOnADenseLayer) {
  SKIP_WITHOUT("onednn");
  SKIP_WITHOUT("openblas");
  const int64_t M = 256, N = 768, K = 768;
  const std::vector<float> x = random_floats(M * K, 1), w = random_floats(N * K, 2),
                           bias = random_floats(N, 3);
  std::vector<float> y(size_t(M * N));
  const OpSpec op = op_of(OpKind::kDense, Epilogue::kBiasGelu);
  double best[2][2] = {};  // [library][threads - 1], GFLOP/s
  std::vector<std::unique_ptr<CpuBaseline>> baselines;
  for (const char* name : {"onednn", "openblas"})
    for (int threads : {1, 2}) baselines.push_back(make_cpu_baseline(name, threads));
  for (int round = 0; round < 5; ++round) {
    for (size_t i = 0; i < baselines.size(); ++i) {
      CpuBaseline& b = *baselines[i];
      b.prepare(op, GemmShape{1, M, N, K}, nullptr, {x.data(), w.data(), bias.data(), y.data()});
      b.run();  // warm up
      const auto t0 = std::chrono::steady_clock::now();
      constexpr int kReps = 5;
      for (int r = 0; r < kReps; ++r) b.run();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      double& slot = best[i / 2][i % 2];
      slot = std::max(slot, 2.0 * M * N * K * kReps / s * 1e-9);
    }
  }
  std::printf("dense %lldx%lldx%lld bias+gelu, best GFLOP/s: oneDNN %.1f (1 thread) %.1f (2); "
              "OpenBLAS %.1f (1) %.1f (2)\n",
              (long long)M, (long long)N, (long long)K, best[0][0], best[0][1], best[1][0],
              best[1][1]);
  for (int lib = 0; lib < 2; ++lib)
    for (int t = 0; t < 2; ++t) EXPECT_GT(best[lib][t], 1.0);
}

TEST(CpuBaselineLoaders, MissingLibraryIsOneLine) {
  OnednnApi dnnl;
  std::string why;
  EXPECT_FALSE(load_onednn({"/nonexistent/libdnnl.so.2", "libdnnl_nope.so.2"}, &dnnl, &why));
  EXPECT_EQ(why,
            "no oneDNN: /nonexistent/libdnnl.so.2: cannot open shared object file: No such file "
            "or directory (also tried libdnnl_nope.so.2); install the Debian package libdnnl2 "
            "(or set DIETCODE_ONEDNN_LIBRARY)");
  OpenblasApi blas;
  EXPECT_FALSE(load_openblas({"/nonexistent/libopenblas.so.0"}, &blas, &why));
  EXPECT_EQ(why,
            "no OpenBLAS: /nonexistent/libopenblas.so.0: cannot open shared object file: No such "
            "file or directory; install the Debian package libopenblas0-openmp (or set "
            "DIETCODE_OPENBLAS_LIBRARY)");
  // A library that loads but is not the one asked for.
  EXPECT_FALSE(load_onednn({"libm.so.6"}, &dnnl, &why));
  EXPECT_EQ(why.rfind("no oneDNN: libm.so.6 has no dnnl_version (dietcode needs the oneDNN 2.x C "
                      "API, libdnnl.so.2;",
                      0),
            0u)
      << why;
  EXPECT_FALSE(load_openblas({"libm.so.6"}, &blas, &why));
  EXPECT_EQ(why.rfind("no OpenBLAS: libm.so.6 has no cblas_sgemm", 0), 0u) << why;
}

TEST(CpuBaselineLoaders, EnvironmentOverridesThePath) {
  const char* saved_dnnl = std::getenv("DIETCODE_ONEDNN_LIBRARY");
  const char* saved_blas = std::getenv("DIETCODE_OPENBLAS_LIBRARY");
  const std::string keep_dnnl = saved_dnnl ? saved_dnnl : "", keep_blas = saved_blas ? saved_blas : "";
  unsetenv("DIETCODE_ONEDNN_LIBRARY");
  unsetenv("DIETCODE_OPENBLAS_LIBRARY");
  EXPECT_EQ(onednn_candidates(), std::vector<std::string>{"libdnnl.so.2"});
  EXPECT_EQ(openblas_candidates(),
            std::vector<std::string>{"/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0"});
  setenv("DIETCODE_ONEDNN_LIBRARY", "/opt/x/libdnnl.so.2", 1);
  setenv("DIETCODE_OPENBLAS_LIBRARY", "/opt/y/libopenblas.so.0", 1);
  EXPECT_EQ(onednn_candidates(), std::vector<std::string>{"/opt/x/libdnnl.so.2"});
  EXPECT_EQ(openblas_candidates(), std::vector<std::string>{"/opt/y/libopenblas.so.0"});
  if (saved_dnnl) setenv("DIETCODE_ONEDNN_LIBRARY", keep_dnnl.c_str(), 1);
  else unsetenv("DIETCODE_ONEDNN_LIBRARY");
  if (saved_blas) setenv("DIETCODE_OPENBLAS_LIBRARY", keep_blas.c_str(), 1);
  else unsetenv("DIETCODE_OPENBLAS_LIBRARY");
}

// make_cpu_baseline with the library missing: an EnvironmentError (exit 2 in the CLI) with the
// loader's line. The loaders load once per process, so this runs in a fresh one.
void make_with_missing_library(const char* variable, const char* name) {
  setenv(variable, "/nonexistent/lib.so", 1);
  try {
    make_cpu_baseline(name, 1);
  } catch (const EnvironmentError& e) {
    std::fprintf(stderr, "EnvironmentError: %s\n", e.what());
    std::exit(2);
  }
  std::exit(0);
}

TEST(CpuBaselineLoaders, MissingLibraryIsAnEnvironmentError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(make_with_missing_library("DIETCODE_ONEDNN_LIBRARY", "onednn"),
              ::testing::ExitedWithCode(2),
              "EnvironmentError: no oneDNN: /nonexistent/lib.so: cannot open shared object file: "
              "No such file or directory; install the Debian package libdnnl2 \\(or set "
              "DIETCODE_ONEDNN_LIBRARY\\)");
  EXPECT_EXIT(make_with_missing_library("DIETCODE_OPENBLAS_LIBRARY", "openblas"),
              ::testing::ExitedWithCode(2),
              "EnvironmentError: no OpenBLAS: /nonexistent/lib.so: .*libopenblas0-openmp");
  EXPECT_THROW(make_cpu_baseline("mkl", 1), std::invalid_argument);
}

}  // namespace
}  // namespace dietcode
