// The pure pieces of `dietcode bench` on a CPU pack: thread-state and load parsing, the
// eviction size, --baseline for a CPU pack, the report with several baseline columns, the
// manifest's target, and the OpenBLAS baseline's helpers (epilogue pass, im2col) against
// plain reference code.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <vector>

#include "bench/bench_pack.h"
#include "bench/cpu_bench_runner.h"
#include "bench/cpu_cache_evictor.h"
#include "bench/cpu_epilogue.h"
#include "bench/cpu_peak_probe.h"
#include "bench/cpu_im2col.h"
#include "bench/dl_library.h"
#include "bench/im2col_index.h"
#include "bench/process_threads.h"
#include "bench/report.h"
#include "common/error.h"
#include "measure/conv2d_shape.h"

namespace dietcode {
namespace {

TEST(ProcessThreads, StateIsReadAfterTheLastParenthesis) {
  EXPECT_EQ(stat_thread_state("4242 (gomp) S 1 2 3"), 'S');
  EXPECT_EQ(stat_thread_state("4242 (a) b) R 1 2 3"), 'R');  // a name with ") " in it
  EXPECT_EQ(stat_thread_state("4242 (x)"), 0);
  EXPECT_EQ(stat_thread_state("garbage"), 0);
}

TEST(ProcessThreads, OtherThreadsThatSleepAreQuiet) {
  std::thread sleeper([] { std::this_thread::sleep_for(std::chrono::milliseconds(300)); });
  EXPECT_TRUE(wait_for_other_threads_to_sleep(2e5));
  sleeper.join();
}

TEST(ProcessThreads, ASpinningThreadIsNotQuiet) {
  std::atomic<bool> stop{false};
  std::thread spinner([&] {
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  EXPECT_FALSE(wait_for_other_threads_to_sleep(2e4));
  stop = true;
  spinner.join();
}

TEST(ProcessThreads, LoadavgRunningThreads) {
  EXPECT_EQ(loadavg_running_threads("0.52 0.58 0.59 2/107 4242"), 2);
  EXPECT_EQ(loadavg_running_threads("0.52 0.58 0.59 x/107 4242"), -1);
  EXPECT_EQ(loadavg_running_threads("0.52"), -1);
  EXPECT_GE(machine_running_threads(), 1);  // this thread
}

TEST(CpuCacheEvictor, TwiceTheLastLevelCacheCapped) {
  const int64_t mib = int64_t(1) << 20;
  EXPECT_EQ(eviction_bytes(16 * mib, 64 * mib), 32 * mib);
  EXPECT_EQ(eviction_bytes(256 * mib, 64 * mib), 64 * mib);
  EXPECT_EQ(eviction_bytes(0, 64 * mib), 64 * mib);  // unknown: the cap
  EXPECT_EQ(eviction_bytes(1000, 64 * mib), 2048);   // whole lines
  CpuCacheEvictor evictor(1 << 20, 3);
  evictor.evict();
  evictor.evict();
  EXPECT_EQ(evictor.bytes(), 1 << 20);
  CpuCacheEvictor none(0, 2);
  none.evict();
}

TEST(CpuBaselineOption, NamesForACpuPack) {
  EXPECT_EQ(cpu_baselines_for_option("auto"), (std::vector<std::string>{"onednn", "openblas"}));
  EXPECT_EQ(cpu_baselines_for_option("openblas"), (std::vector<std::string>{"openblas"}));
  EXPECT_TRUE(cpu_baselines_for_option("none").empty());
  try {
    cpu_baselines_for_option("cublas");
    FAIL() << "cublas accepted for a CPU pack";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(),
                 "--baseline cublas: not a baseline for a CPU pack (expected auto, onednn, "
                 "openblas or none)");
  }
}

TEST(DlLibrary, NamesTheFirstErrorAndTheOthersTried) {
  std::string path, why;
  EXPECT_EQ(dlopen_first({"/nonexistent/a.so", "/nonexistent/b.so"}, &path, &why), nullptr);
  EXPECT_NE(why.find("/nonexistent/a.so"), std::string::npos) << why;
  EXPECT_NE(why.find("(also tried /nonexistent/b.so)"), std::string::npos) << why;
  EXPECT_EQ(dlopen_first({}, &path, &why), nullptr);
  EXPECT_EQ(why, "no library named");
}

// Two CPU rows: oneDNN and OpenBLAS on the first, OpenBLAS alone on the second.
BenchReport cpu_report() {
  BenchReport report;
  report.pack = "libx.so";
  report.target = "cpu";
  report.threads = 2;
  report.device = "Test CPU (x86-64-v3), 2 threads";
  report.baseline = "oneDNN 2.6.3, OpenBLAS 0.3.21 (openmp)";
  report.baseline_columns = {{"onednn", "oneDNN 2.6.3"}, {"openblas", "OpenBLAS 0.3.21 (openmp)"}};
  report.method = "interleaved";
  BenchRow a;
  a.op = "fc1", a.shape = "T=1", a.weight = 1, a.flops = 2e6, a.pack_us = 10;
  a.baselines = {{"onednn", "oneDNN 2.6.3", "brg", 20, "ok", false},
                 {"openblas", "OpenBLAS 0.3.21 (openmp)", "", 40, "ok", false}};
  a.baseline_us = 20, a.baseline = "oneDNN 2.6.3";
  BenchRow b = a;
  b.shape = "T=2", b.weight = 3, b.pack_us = 10;
  b.baselines = {{"openblas", "OpenBLAS 0.3.21 (openmp)", "", 5, "ok", false}};
  b.baseline_us = 5, b.baseline = "OpenBLAS 0.3.21 (openmp)";
  report.rows = {a, b};
  return report;
}

TEST(CpuReport, RowAgainstPicksOneBaseline) {
  const BenchReport report = cpu_report();
  EXPECT_DOUBLE_EQ(row_against(report.rows[0], "openblas").speedup(), 4.0);
  EXPECT_DOUBLE_EQ(row_against(report.rows[1], "onednn").speedup(), -1);
  // Per baseline: oneDNN has one instance (2x); OpenBLAS 4x at weight 1, 0.5x at weight 3.
  EXPECT_NEAR(weighted_geomean_speedup(rows_against(report.rows, "onednn")), 2.0, 1e-12);
  EXPECT_NEAR(weighted_geomean_speedup(rows_against(report.rows, "openblas")),
              std::exp((std::log(4.0) + 3 * std::log(0.5)) / 4), 1e-12);
}

TEST(CpuReport, TableHasAColumnPairPerBaselineAndAGeomeanEach) {
  const std::string text = format_report(cpu_report());
  EXPECT_NE(text.find("onednn us  vs onednn  openblas us  vs openblas  GFLOP/s"), std::string::npos)
      << text;
  EXPECT_NE(text.find("weighted geometric-mean speedup over oneDNN 2.6.3: 2.000x (1 instance)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("weighted geometric-mean speedup over OpenBLAS 0.3.21 (openmp): 0.841x"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Test CPU (x86-64-v3), 2 threads"), std::string::npos);
}

TEST(CpuReport, CsvAndJsonCarryEveryBaseline) {
  const BenchReport report = cpu_report();
  const std::string csv = format_csv(report);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "op,shape,pack_us,onednn_us,onednn_speedup,openblas_us,openblas_speedup,pack_gflops,"
            "percent_of_peak,weight,check");
  EXPECT_NE(csv.find("fc1,T=2,10.000,,,5.000,0.5000,200.000,,3,ok"), std::string::npos) << csv;
  const nlohmann::json j = report_json(report);
  EXPECT_EQ(j["target"], "cpu");
  EXPECT_EQ(j["threads"], 2);
  ASSERT_EQ(j["baselines"].size(), 2u);
  EXPECT_EQ(j["baselines"][0]["name"], "onednn");
  EXPECT_DOUBLE_EQ(j["baselines"][0]["geomean_speedup"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(j["geomean_speedup"].get<double>(), 2.0);  // against the first column
  EXPECT_EQ(j["rows"][0]["baselines"][1]["name"], "openblas");
  EXPECT_DOUBLE_EQ(j["rows"][0]["baselines"][1]["speedup"].get<double>(), 4.0);
  EXPECT_TRUE(j["rows"][1]["baselines"][0]["detail"].is_null());
}

// With the probed peak the report bounds every baseline's speedup: at 400 GFLOP/s the rows'
// 2e6 FLOPs take 5 us, so oneDNN's ceiling is 20 / 5 and OpenBLAS's 40 / 5 (weight 1) and
// 5 / 5 (weight 3).
TEST(CpuReport, EachBaselineHasItsCeilingAtThePeak) {
  BenchReport report = cpu_report();
  for (BenchRow& r : report.rows) r.peak_tflops = 0.4;
  const std::string text = format_report(report);
  EXPECT_NE(text.find("ceiling over oneDNN 2.6.3: 4.000x, with every instance at 100% of the peak"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ceiling over OpenBLAS 0.3.21 (openmp): 1.682x"), std::string::npos) << text;
  const nlohmann::json j = report_json(report);
  EXPECT_NEAR(j["baselines"][0]["ceiling_speedup"].get<double>(), 4.0, 1e-9);
  EXPECT_NEAR(j["baselines"][1]["ceiling_speedup"].get<double>(), std::pow(8.0, 0.25), 1e-4);
  EXPECT_NEAR(j["ceiling_speedup"].get<double>(), 4.0, 1e-9);  // against the first column
}

bool has_note(const BenchReport& report, const std::string& text) {
  for (const std::string& note : report.notes)
    if (note.find(text) != std::string::npos) return true;
  return false;
}

// A probe that met a slow phase reads low; the other one holds the rows. cpu_report()'s rows
// run at 200 GFLOP/s (the pack, T=1) and 400 (OpenBLAS, T=2).
TEST(CpuPeakProbe, TheRowsAreHeldAgainstTheHigherProbe) {
  BenchReport report = cpu_report();
  hold_rows_against_peak(report, {150, 300, 2});
  for (const BenchRow& r : report.rows) EXPECT_DOUBLE_EQ(r.peak_tflops, 0.3);
  EXPECT_NEAR(report.rows[0].percent_of_peak(), 200.0 / 3, 1e-9);
  EXPECT_TRUE(has_note(report, "fp32 FMA peak 300 GFLOP/s on 2 threads, the higher of two probes "
                               "(150 before the first timing, 300 after the last)"))
      << report.notes.front();
  EXPECT_TRUE(has_note(report, "the two peak probes differ by 100%"));
  EXPECT_TRUE(has_note(report, "1 instance ran faster than the probed peak (first: fc1 T=2)"));
}

TEST(CpuPeakProbe, ProbesThatAgreeAndRowsBelowThePeakSayNoMore) {
  BenchReport report = cpu_report();
  hold_rows_against_peak(report, {500, 480, 2});
  for (const BenchRow& r : report.rows) EXPECT_DOUBLE_EQ(r.peak_tflops, 0.5);
  ASSERT_EQ(report.notes.size(), 1u);
  EXPECT_TRUE(has_note(report, "fp32 FMA peak 500 GFLOP/s on 2 threads, the higher of two"));

  BenchReport once = cpu_report();
  hold_rows_against_peak(once, {500, 0, 1});
  EXPECT_TRUE(has_note(once, "fp32 FMA peak 500 GFLOP/s on 1 thread, probed before the first"));

  BenchReport unknown = cpu_report();
  hold_rows_against_peak(unknown, {0, 0, 2});
  EXPECT_TRUE(unknown.notes.empty());
  EXPECT_DOUBLE_EQ(unknown.rows[0].peak_tflops, 0);
}

TEST(CpuReport, GpuReportsKeepTheirFormat) {
  BenchReport report;
  report.baseline = "cublas";
  BenchRow r;
  r.op = "qkv", r.shape = "T=1", r.pack_us = 2, r.baseline_us = 3, r.baseline = "cublas";
  report.rows = {r};
  EXPECT_EQ(format_csv(report).substr(0, 16), "op,shape,pack_us");
  EXPECT_NE(format_csv(report).find("baseline_us"), std::string::npos);
  const nlohmann::json j = report_json(report);
  EXPECT_EQ(j["target"], "cuda");
  EXPECT_TRUE(j["threads"].is_null());
  EXPECT_FALSE(j.contains("baselines"));
  EXPECT_NE(format_report(report).find("pack and baseline interleaved in one stream"),
            std::string::npos);
}

std::string manifest_with(const std::string& target_field) {
  return "{\"name\": \"p\", " + target_field +
         "\"archs\": [\"x86-64-v3\"], \"shape_vars\": [{\"name\": \"T\", \"min\": 1, \"max\": 2}], "
         "\"ops\": [{\"name\": \"fc\", \"op\": \"dense\", \"dtype\": \"float32\", "
         "\"epilogue\": \"none\", \"vars\": [\"T\"], \"args\": [\"X\", \"W\", \"Y\"], "
         "\"dims\": {\"M\": \"T\", \"N\": 8, \"K\": 8}}]}";
}

TEST(BenchPackTarget, FromTheManifest) {
  EXPECT_EQ(parse_bench_pack(manifest_with("\"target\": \"cpu\", "), "p.so", nullptr).target,
            "cpu");
  EXPECT_EQ(parse_bench_pack(manifest_with(""), "p.so", nullptr).target, "cuda");
  try {
    parse_bench_pack(manifest_with("\"target\": \"tpu\", "), "p.so", nullptr);
    FAIL() << "tpu accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("target"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tpu"), std::string::npos) << e.what();
  }
}

float gelu_tanh(float x) {
  return 0.5f * x * (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
}

TEST(CpuEpilogue, MatchesPlainCodeOnEveryEpilogueAndTail) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-6.0f, 6.0f);
  const int64_t rows = 5, n = 21;  // two full vectors and a tail of 5 per row
  std::vector<float> y0(static_cast<size_t>(rows * n)), bias(static_cast<size_t>(n));
  for (float& v : y0) v = dist(rng);
  for (float& v : bias) v = dist(rng);
  for (Epilogue e : {Epilogue::kNone, Epilogue::kBias, Epilogue::kRelu, Epilogue::kBiasRelu,
                     Epilogue::kGelu, Epilogue::kBiasGelu}) {
    SCOPED_TRACE(to_string(e));
    std::vector<float> y = y0;
    cpu_epilogue_rows(y.data(), bias.data(), 1, rows, n, e);  // row 0 left alone
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n; ++j) {
        float want = y0[size_t(r * n + j)];
        if (r > 0) {
          if (epilogue_has_bias(e)) want += bias[size_t(j)];
          if (e == Epilogue::kRelu || e == Epilogue::kBiasRelu) want = std::max(want, 0.0f);
          if (e == Epilogue::kGelu || e == Epilogue::kBiasGelu) want = gelu_tanh(want);
        }
        ASSERT_NEAR(y[size_t(r * n + j)], want, 1e-5f * (1 + std::fabs(want)))
            << "row " << r << " column " << j;
      }
  }
}

TEST(CpuIm2col, MatchesTheGpuKernelsIndexMath) {
  for (const Conv2dShape& c :
       {make_conv2d_shape(2, 5, 6, 3, 4, 3, 3, 1, 1), make_conv2d_shape(1, 7, 7, 2, 3, 3, 2, 2, 0),
        make_conv2d_shape(1, 9, 9, 2, 2, 3, 3, 1, 2, 2), make_conv2d_shape(1, 4, 4, 8, 4, 1, 1)}) {
    const GemmShape g = c.gemm();
    std::vector<float> x(size_t(c.n * c.h * c.w * c.c));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i + 1);
    std::vector<float> columns(size_t(g.M * g.K), -1.0f);
    im2col_rows(c, x.data(), columns.data(), 0, g.M);
    for (int64_t i = 0; i < g.M * g.K; ++i) {
      const long long from =
          dietcode_im2col_source(i, g.K, c.c, c.s, c.p, c.q, c.h, c.w, c.stride_h, c.stride_w,
                                 c.pad_h, c.pad_w, c.dilation_h, c.dilation_w);
      ASSERT_EQ(columns[size_t(i)], from < 0 ? 0.0f : x[size_t(from)]) << "element " << i;
    }
  }
  EXPECT_TRUE(conv_is_pointwise(make_conv2d_shape(1, 4, 4, 8, 4, 1, 1)));
  EXPECT_FALSE(conv_is_pointwise(make_conv2d_shape(1, 4, 4, 8, 4, 1, 1, 2)));
}

}  // namespace
}  // namespace dietcode
