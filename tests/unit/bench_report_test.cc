// The bench report on synthetic rows: the weighted geometric mean, the table, CSV, JSON and
// the SVG plot, all without a GPU.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "bench/report.h"
#include "bench/speedup_interval.h"
#include "bench/svg_plot.h"

namespace dietcode {
namespace {

BenchRow row(const std::string& op, const std::string& shape, double pack_us, double baseline_us,
             double weight, double flops = 2e6) {
  BenchRow r;
  r.op = op;
  r.shape = shape;
  r.pack_us = pack_us;
  r.baseline_us = baseline_us;
  r.weight = weight;
  r.flops = flops;
  r.peak_tflops = 50;
  return r;
}

BenchReport sample_report() {
  BenchReport report;
  report.pack = "libtest.so";
  report.device = "Test GPU (sm_90, 132 SMs)";
  report.baseline = "cublas";
  report.l2 = "flush";
  report.l2_detail = "L2 flushed before every timed launch (100 MiB written, twice the 50 MiB L2)";
  report.date = "2025-01-02T03:04:05Z";
  report.repeats = 30;
  report.warmup = 3;
  report.baseline_per_op = {{"qkv", "cublasSgemm_v2, fp32 FMA, CUBLAS_DEFAULT_MATH (no TF32)"},
                            {"conv", "none: no baseline for conv2d"}};
  report.rows = {row("qkv", "T=1", 10, 12, 1), row("qkv", "T=2", 20, 15, 3),
                 row("conv", "N=1", 5, -1, 1)};
  report.rows[2].check = "unchecked (no baseline; all outputs written)";
  return report;
}

TEST(BenchReport, WeightedGeometricMean) {
  const BenchReport report = sample_report();
  // Speedups 1.2 (weight 1) and 0.75 (weight 3); the conv row has no baseline and no say.
  EXPECT_NEAR(weighted_geomean_speedup(report.rows), std::pow(1.2, 0.25) * std::pow(0.75, 0.75),
              1e-12);

  std::vector<BenchRow> zero_weights = report.rows;
  for (BenchRow& r : zero_weights) r.weight = 0;  // every weight 0: the plain geometric mean
  EXPECT_NEAR(weighted_geomean_speedup(zero_weights), std::sqrt(1.2 * 0.75), 1e-12);

  std::vector<BenchRow> doubled = report.rows;  // only the ratios of weights matter
  for (BenchRow& r : doubled) r.weight *= 2;
  EXPECT_NEAR(weighted_geomean_speedup(doubled), weighted_geomean_speedup(report.rows), 1e-12);

  EXPECT_EQ(weighted_geomean_speedup({report.rows[2]}), -1);  // no baseline anywhere
  EXPECT_EQ(weighted_geomean_speedup({}), -1);
}

// The ceiling: each instance's baseline time over its FLOPs' time at the peak, weighted as the
// speedups are. 2e6 FLOPs at 50 TFLOP/s take 0.04 us, so the rows' ceilings are 300 and 375.
TEST(BenchReport, CeilingIsTheBaselineOverThePeakTime) {
  BenchReport report = sample_report();
  EXPECT_DOUBLE_EQ(report.rows[0].peak_ceiling(), 12 / 0.04);
  EXPECT_DOUBLE_EQ(report.rows[2].peak_ceiling(), -1);  // no baseline
  EXPECT_NEAR(weighted_geomean_ceiling(report.rows), std::pow(300.0, 0.25) * std::pow(375.0, 0.75),
              1e-9);
  // The pack's own times do not enter it: a faster pack leaves the ceiling where it was.
  std::vector<BenchRow> faster = report.rows;
  for (BenchRow& r : faster) r.pack_us /= 2;
  EXPECT_DOUBLE_EQ(weighted_geomean_ceiling(faster), weighted_geomean_ceiling(report.rows));
  // One instance with a speedup but no peak: no ceiling at all, rather than one over a subset.
  report.rows[1].peak_tflops = 0;
  EXPECT_EQ(weighted_geomean_ceiling(report.rows), -1);
  EXPECT_EQ(format_report(report).find("ceiling"), std::string::npos) << format_report(report);
  EXPECT_TRUE(report_json(report)["ceiling_speedup"].is_null());
}

TEST(BenchReport, RowFiguresAndWorstInstance) {
  const BenchReport report = sample_report();
  const BenchRow& r = report.rows[0];
  EXPECT_DOUBLE_EQ(r.speedup(), 1.2);
  EXPECT_DOUBLE_EQ(r.pack_tflops(), 2e6 / 10e-6 / 1e12);  // 0.2 TFLOP/s
  EXPECT_DOUBLE_EQ(r.baseline_tflops(), 2e6 / 12e-6 / 1e12);
  EXPECT_DOUBLE_EQ(r.percent_of_peak(), 100 * 0.2 / 50);
  EXPECT_EQ(report.rows[2].speedup(), -1);
  EXPECT_EQ(report.rows[2].baseline_tflops(), -1);

  const BenchRow* worst = worst_row(report.rows);
  ASSERT_NE(worst, nullptr);
  EXPECT_EQ(worst->shape, "T=2");
  EXPECT_EQ(worst_row({report.rows[2]}), nullptr);
}

TEST(BenchReport, TableText) {
  BenchReport report = sample_report();
  report.notes = {"shapes and dimensions from w.json"};
  EXPECT_EQ(format_report(report),
            "dietcode bench: libtest.so on Test GPU (sm_90, 132 SMs)\n"
            "baseline cublas; L2 flushed before every timed launch (100 MiB written, twice the "
            "50 MiB L2); median of 30 runs after 3 warm-up launches, pack and baseline interleaved "
            "in one stream\n"
            "op    shape  pack us  cublas us  speedup  TFLOP/s  % peak  check\n"
            "qkv   T=1      10.00      12.00    1.20x     0.20    0.4%  ok\n"
            "qkv   T=2      20.00      15.00    0.75x     0.10    0.2%  ok\n"
            "conv  N=1       5.00          -        -     0.40    0.8%  unchecked (no baseline; "
            "all outputs written)\n"
            "baseline per op:\n"
            "  qkv   cublasSgemm_v2, fp32 FMA, CUBLAS_DEFAULT_MATH (no TF32)\n"
            "  conv  none: no baseline for conv2d\n"
            "note: shapes and dimensions from w.json\n"
            "weighted geometric-mean speedup over cublas: 0.844x (2 instances)\n"
            "worst instance: qkv T=2: 0.75x (pack 20.00 us, cublas 15.00 us)\n"
            "ceiling over cublas: 354.653x, with every instance at 100% of the peak\n");

  report.rows[1].failed = true;
  report.rows[1].check = "mismatch: 1 of 10 outputs differ";
  const std::string text = format_report(report);
  EXPECT_NE(text.find("qkv   T=2      20.00      15.00    0.75x     0.10    0.2%  mismatch: 1 of "
                      "10 outputs differ\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nFAILED: 1 instance disagrees with the baseline\n"), std::string::npos)
      << text;
}

TEST(BenchReport, EachOpGetsItsOwnGeometricMeanWhenThereAreSeveral) {
  BenchReport report = sample_report();
  // One op: no per-op line (TableText), and its one figure in the JSON.
  EXPECT_EQ(format_report(report).find("per op over"), std::string::npos);
  EXPECT_EQ(report_json(report)["geomean_speedup_per_op"], nlohmann::json({{"qkv", 0.8435}}));
  // proj: speedups 2 (weight 1) and 0.5 (weight 1); qkv as before; conv has no baseline.
  report.rows.push_back(row("proj", "T=1", 5, 10, 1));
  report.rows.push_back(row("proj", "T=2", 20, 10, 1));
  const auto per_op = per_op_geomean_speedups(report.rows);
  ASSERT_EQ(per_op.size(), 2u);
  EXPECT_EQ(per_op[0].first, "qkv");
  EXPECT_NEAR(per_op[0].second, std::pow(1.2, 0.25) * std::pow(0.75, 0.75), 1e-12);
  EXPECT_EQ(per_op[1].first, "proj");
  EXPECT_NEAR(per_op[1].second, 1.0, 1e-12);
  const std::string text = format_report(report);
  EXPECT_NE(text.find("\nper op over cublas: qkv 0.844x, proj 1.000x\nworst instance:"),
            std::string::npos)
      << text;
  const nlohmann::json j = report_json(report);
  EXPECT_EQ(j["geomean_speedup_per_op"], nlohmann::json({{"qkv", 0.8435}, {"proj", 1.0}}));

  // Several baselines (the CPU): a line and a JSON object for each.
  report.rows = {row("qkv", "T=1", 10, 12, 1), row("proj", "T=1", 10, 5, 1)};
  report.baseline_columns = {{"onednn", "oneDNN"}, {"openblas", "OpenBLAS"}};
  for (BenchRow& r : report.rows)
    r.baselines = {{"onednn", "oneDNN", "", r.baseline_us},
                   {"openblas", "OpenBLAS", "", 2 * r.baseline_us}};
  const std::string columns = format_report(report);
  EXPECT_NE(columns.find("per op over oneDNN: qkv 1.200x, proj 0.500x\n"), std::string::npos)
      << columns;
  EXPECT_NE(columns.find("per op over OpenBLAS: qkv 2.400x, proj 1.000x\n"), std::string::npos)
      << columns;
  const nlohmann::json both = report_json(report);
  EXPECT_EQ(both["geomean_speedup_per_op"], nlohmann::json({{"qkv", 1.2}, {"proj", 0.5}}));
  EXPECT_EQ(both["baselines"][1]["geomean_speedup_per_op"],
            nlohmann::json({{"qkv", 2.4}, {"proj", 1.0}}));
}

TEST(BenchReport, TableWithoutBaseline) {
  BenchReport report = sample_report();
  report.baseline = "none";
  for (BenchRow& r : report.rows) r.baseline_us = -1;
  const std::string text = format_report(report);
  EXPECT_NE(text.find("op    shape  pack us  none us  speedup"), std::string::npos) << text;
  EXPECT_NE(text.find("no speedup to report: no instance has a baseline time\n"), std::string::npos)
      << text;
}

// A report mixing a GEMM baseline and cuDNN: the latency column is "baseline us", the rows
// say which baseline timed them, and what it chose.
TEST(BenchReport, MixedBaselinesNameThemselvesPerRow) {
  BenchReport report = sample_report();
  report.baseline = "cublas, cudnn 9.19.0";
  report.rows[0].baseline = "cublas";
  report.rows[2].baseline_us = 4;
  report.rows[2].baseline = "cudnn 9.19.0";
  report.rows[2].baseline_detail = "IMPLICIT_PRECOMP_GEMM";
  const std::string text = format_report(report);
  EXPECT_NE(text.find("  baseline us  "), std::string::npos) << text;
  EXPECT_NE(text.find("weighted geometric-mean speedup over cublas, cudnn 9.19.0:"),
            std::string::npos)
      << text;
  const nlohmann::json j = report_json(report);
  EXPECT_EQ(j["baseline"], "cublas, cudnn 9.19.0");
  EXPECT_EQ(j["rows"][0]["baseline"], "cublas");
  EXPECT_TRUE(j["rows"][0]["baseline_detail"].is_null());
  EXPECT_TRUE(j["rows"][1]["baseline"].is_null());
  EXPECT_EQ(j["rows"][2]["baseline"], "cudnn 9.19.0");
  EXPECT_EQ(j["rows"][2]["baseline_detail"], "IMPLICIT_PRECOMP_GEMM");
  // A single baseline keeps its name on the column.
  EXPECT_NE(format_report(sample_report()).find("  cublas us  "), std::string::npos);
}

TEST(BenchReport, CsvExact) {
  BenchReport report = sample_report();
  report.rows[1].check = "mismatch: 1 of 10 outputs differ; first at [0, 1]: pack 1, baseline 2";
  EXPECT_EQ(format_csv(report),
            "op,shape,pack_us,baseline_us,speedup,pack_tflops,baseline_tflops,percent_of_peak,"
            "weight,check\n"
            "qkv,T=1,10.000,12.000,1.2000,0.2000,0.1667,0.40,1,ok\n"
            "qkv,T=2,20.000,15.000,0.7500,0.1000,0.1333,0.20,3,"
            "\"mismatch: 1 of 10 outputs differ; first at [0, 1]: pack 1, baseline 2\"\n"
            "conv,N=1,5.000,,,0.4000,,0.80,1,unchecked (no baseline; all outputs written)\n");
}

TEST(BenchReport, JsonKeys) {
  const nlohmann::json j = report_json(sample_report());
  for (const char* key : {"device", "baseline", "l2", "geomean_speedup", "rows"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["device"], "Test GPU (sm_90, 132 SMs)");
  EXPECT_EQ(j["baseline"], "cublas");
  EXPECT_EQ(j["l2"], "flush");
  EXPECT_NEAR(j["geomean_speedup"].get<double>(), 0.8435, 1e-4);
  EXPECT_NEAR(j["ceiling_speedup"].get<double>(), 354.6531, 1e-4);
  ASSERT_EQ(j["rows"].size(), 3u);
  for (const auto& r : j["rows"])
    for (const char* key : {"op", "shape", "pack_us", "baseline_us", "speedup"})
      EXPECT_TRUE(r.contains(key)) << key;
  EXPECT_EQ(j["rows"][0]["op"], "qkv");
  EXPECT_EQ(j["rows"][0]["shape"], "T=1");
  EXPECT_EQ(j["rows"][0]["pack_us"], 10.0);
  EXPECT_EQ(j["rows"][0]["baseline_us"], 12.0);
  EXPECT_EQ(j["rows"][0]["speedup"], 1.2);
  EXPECT_TRUE(j["rows"][2]["baseline_us"].is_null());
  EXPECT_TRUE(j["rows"][2]["speedup"].is_null());
  EXPECT_EQ(j["worst"]["shape"], "T=2");
  EXPECT_EQ(j["failures"], 0);
}

// Tags of an XML document balance: every <x ...> closes with </x> in order, <x/> closes itself.
// Returns "" when they do, else what is wrong.
std::string unbalanced_tags(const std::string& xml) {
  std::vector<std::string> open;
  size_t at = 0;
  while ((at = xml.find('<', at)) != std::string::npos) {
    const size_t end = xml.find('>', at);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(at);
    const std::string tag = xml.substr(at + 1, end - at - 1);
    at = end + 1;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) return "unexpected </" + name + ">";
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find_first_of(" \n\t")));
    }
  }
  return open.empty() ? "" : "<" + open.back() + "> is never closed";
}

// Rows whose rounds are drawn as the runners time them: round r's pack and baseline times side
// by side. `phase[r]` slows both contenders of round r alike; `own[r]` the pack alone.
BenchRow timed_row(double pack_us, double baseline_us, const std::vector<double>& phase,
                   const std::vector<double>& own) {
  BenchRow r = row("qkv", "T=1", 0, 0, 1);
  for (size_t i = 0; i < phase.size(); ++i) {
    r.pack_samples.push_back(pack_us * phase[i] * own[i]);
    r.baseline_samples.push_back(baseline_us * phase[i]);
  }
  std::vector<double> p = r.pack_samples, b = r.baseline_samples;
  std::sort(p.begin(), p.end());
  std::sort(b.begin(), b.end());
  r.pack_us = p[p.size() / 2];
  r.baseline_us = b[b.size() / 2];
  return r;
}

const std::vector<double> kPhases = {1.0, 1.9, 0.7, 1.4, 1.1, 0.8, 2.5, 1.0, 1.3};
const std::vector<double> kQuiet = {1, 1, 1, 1, 1, 1, 1, 1, 1};
const std::vector<double> kNoisy = {1.0, 1.2, 0.9, 1.1, 0.95, 1.3, 0.85, 1.05, 1.15};

TEST(BenchInterval, APhaseThatSlowsBothContendersCancels) {
  // Each round's two times are resampled together, so the speedup is exactly 1.5 in every
  // resample however much the rounds differ. Resampling each contender's times on its own would
  // give a wide interval here.
  const SpeedupInterval i = geomean_speedup_interval({timed_row(10, 15, kPhases, kQuiet)});
  ASSERT_TRUE(i.valid());
  EXPECT_NEAR(i.low, 1.5, 1e-12);
  EXPECT_NEAR(i.high, 1.5, 1e-12);
  EXPECT_EQ(i.level, 0.95);
  EXPECT_EQ(i.resamples, 1000);
}

TEST(BenchInterval, NoiseOnOneSideWidensItAroundTheMedian) {
  const std::vector<BenchRow> rows = {timed_row(10, 15, kPhases, kNoisy),
                                      timed_row(20, 20, kQuiet, kNoisy)};
  const double point = weighted_geomean_speedup(rows);
  const SpeedupInterval i = geomean_speedup_interval(rows);
  ASSERT_TRUE(i.valid());
  EXPECT_LT(i.low, point);
  EXPECT_GT(i.high, point);
  EXPECT_GT(i.high / i.low, 1.02);
  // A narrower level is inside it, and the same rows and seed give the same interval.
  const SpeedupInterval half = geomean_speedup_interval(rows, {0.5, 1000, 1});
  EXPECT_GE(half.low, i.low);
  EXPECT_LE(half.high, i.high);
  EXPECT_LT(half.high - half.low, i.high - i.low);
  const SpeedupInterval again = geomean_speedup_interval(rows);
  EXPECT_EQ(again.low, i.low);
  EXPECT_EQ(again.high, i.high);
  // More noise, a wider interval.
  std::vector<double> louder;
  for (double x : kNoisy) louder.push_back(x * x * x);
  const SpeedupInterval wide = geomean_speedup_interval(
      {timed_row(10, 15, kPhases, louder), timed_row(20, 20, kQuiet, louder)});
  EXPECT_GT(wide.high / wide.low, i.high / i.low);
}

TEST(BenchInterval, RowsWithoutRunsCountAsTheyAreOrNotAtAll) {
  // A row with medians only keeps its speedup in every resample.
  const SpeedupInterval mixed =
      geomean_speedup_interval({timed_row(10, 15, kPhases, kQuiet), row("proj", "T=1", 10, 20, 1)});
  ASSERT_TRUE(mixed.valid());
  EXPECT_NEAR(mixed.low, std::sqrt(1.5 * 2.0), 1e-12);
  EXPECT_NEAR(mixed.high, std::sqrt(1.5 * 2.0), 1e-12);
  // Nothing to resample: no interval, and the report's lines read as before (TableText).
  EXPECT_FALSE(geomean_speedup_interval(sample_report().rows).valid());
  BenchRow unpaired = timed_row(10, 15, kPhases, kNoisy);
  unpaired.baseline_samples.pop_back();
  EXPECT_FALSE(row_speedup_interval(unpaired).valid());
  EXPECT_FALSE(geomean_speedup_interval({}).valid());
}

TEST(BenchInterval, ReportPrintsItAndJsonCarriesTheRuns) {
  BenchReport report = sample_report();
  report.rows = {timed_row(10, 15, kPhases, kNoisy), timed_row(20, 20, kQuiet, kNoisy)};
  report.rows[1].shape = "T=2";
  const SpeedupInterval i = geomean_speedup_interval(report.rows);
  const SpeedupInterval w = row_speedup_interval(report.rows[1]);
  const std::string text = format_report(report);
  EXPECT_NE(text.find(fmt::format("(2 instances; {:.3f}-{:.3f} at 95% over this run's rounds)",
                                  i.low, i.high)),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(fmt::format("{:.2f}-{:.2f} at 95% over this run's rounds)\n", w.low, w.high)),
            std::string::npos)
      << text;
  const nlohmann::json j = report_json(report);
  EXPECT_NEAR(j["geomean_interval"]["low"].get<double>(), i.low, 1e-4);
  EXPECT_NEAR(j["geomean_interval"]["high"].get<double>(), i.high, 1e-4);
  EXPECT_EQ(j["worst"]["shape"], "T=2");
  EXPECT_NEAR(j["worst"]["interval"]["low"].get<double>(), w.low, 1e-4);
  EXPECT_EQ(j["rows"][0]["pack_runs_us"].size(), kPhases.size());
  EXPECT_EQ(j["rows"][0]["baseline_runs_us"][6].get<double>(), 15 * 2.5);
  EXPECT_TRUE(report_json(sample_report())["geomean_interval"].is_null());
}

TEST(BenchSvg, WellFormedWithBothSeriesAndTitle) {
  BenchReport report = sample_report();
  report.rows.push_back(row("qkv", "T=3", 30, 33, 1));
  const std::string svg = render_svg(report);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(unbalanced_tags(svg), "");
  // Title: device, date, baseline and L2 mode.
  EXPECT_NE(svg.find("dietcode pack vs cublas on Test GPU (sm_90, 132 SMs)"), std::string::npos);
  EXPECT_NE(svg.find("2025-01-02T03:04:05Z | L2 flush"), std::string::npos);
  // Both series as lines (qkv has three instances), the speedup and its 1.0x line.
  EXPECT_NE(svg.find("stroke=\"#0072B2\" stroke-width=\"1.8\""), std::string::npos);  // pack
  EXPECT_NE(svg.find("stroke=\"#E69F00\" stroke-width=\"1.8\""), std::string::npos);  // cublas
  EXPECT_NE(svg.find("stroke=\"#009E73\" stroke-width=\"1.8\" stroke-dasharray"),
            std::string::npos);
  EXPECT_NE(svg.find("class=\"one\""), std::string::npos);
  EXPECT_NE(svg.find(">pack (dietcode)</text>"), std::string::npos);
  // One panel per op.
  EXPECT_NE(svg.find("class=\"panel\">qkv</text>"), std::string::npos);
  EXPECT_NE(svg.find("class=\"panel\">conv</text>"), std::string::npos);
}

TEST(BenchSvg, TheSpeedupsIntervalIsABandWhereTheRowsHaveRuns) {
  BenchReport report = sample_report();
  EXPECT_EQ(render_svg(report).find("class=\"interval\""), std::string::npos);  // medians only
  report.rows = {timed_row(10, 15, kPhases, kNoisy), timed_row(20, 20, kQuiet, kNoisy)};
  report.rows[1].shape = "T=2";
  const std::string svg = render_svg(report);
  EXPECT_EQ(unbalanced_tags(svg), "");
  const size_t band = svg.find("class=\"interval\"");
  ASSERT_NE(band, std::string::npos) << svg;
  // Upper edge out and lower edge back: four corners for two instances.
  const size_t from = svg.rfind("points=\"", band) + 8;
  const std::string points = svg.substr(from, svg.find('"', from) - from);
  EXPECT_EQ(std::count(points.begin(), points.end(), ','), 4) << points;
  EXPECT_NE(svg.find(">95% interval over the rounds</text>"), std::string::npos);
  EXPECT_EQ(render_svg(sample_report()).find("95% interval"), std::string::npos);
}

TEST(BenchSvg, OneOpAgainstLongNamesIsWideEnoughForItsLegend) {
  BenchReport report = sample_report();
  report.rows = {row("proj", "T=1", 10, 12, 1), row("proj", "T=2", 20, 15, 1)};
  report.baseline_columns = {{"onednn", "oneDNN 2.6.3"},
                             {"openblas", "OpenBLAS 0.3.21 (openmp), sgemm + separate epilogue"}};
  for (BenchRow& r : report.rows)
    r.baselines = {{"onednn", "oneDNN 2.6.3", "", r.baseline_us},
                   {"openblas", report.baseline_columns[1].second, "", 2 * r.baseline_us}};
  const std::string svg = render_svg(report);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, std::regex(R"re(<svg [^>]*width="([0-9.]+)")re")));
  const double width = std::stod(m[1]);
  // The last legend item's text ends inside the picture (7 px a character, as laid out).
  const std::regex text(R"re(<text x="([0-9.]+)" y="[0-9.]+" class="legend">([^<]*)</text>)re");
  double end = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text); it != std::sregex_iterator();
       ++it)
    end = std::max(end, std::stod((*it)[1]) + 7.0 * (*it)[2].length());
  EXPECT_GT(end, 0);
  EXPECT_GE(width, end) << svg;
}

TEST(BenchSvg, EscapesTextAndMarksFailures) {
  BenchReport report = sample_report();
  report.device = "GPU <A&B>";
  report.rows[0].failed = true;
  const std::string svg = render_svg(report);
  EXPECT_EQ(unbalanced_tags(svg), "");
  EXPECT_NE(svg.find("GPU &lt;A&amp;B&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("<A&B>"), std::string::npos);
  EXPECT_NE(svg.find(">results disagree</text>"), std::string::npos);
  EXPECT_EQ(xml_escape("a\"b'c"), "a&quot;b&apos;c");
}

TEST(BenchSvg, EmptyReportIsStillADocument) {
  BenchReport report = sample_report();
  report.rows.clear();
  EXPECT_EQ(unbalanced_tags(render_svg(report)), "");
}

TEST(BenchSvg, NiceTickSteps) {
  EXPECT_DOUBLE_EQ(nice_tick_step(100, 5), 20);
  EXPECT_DOUBLE_EQ(nice_tick_step(7, 5), 2);
  EXPECT_DOUBLE_EQ(nice_tick_step(0.9, 5), 0.2);
  EXPECT_DOUBLE_EQ(nice_tick_step(4.5, 5), 1);
  EXPECT_DOUBLE_EQ(nice_tick_step(0, 5), 1);
}

}  // namespace
}  // namespace dietcode
