#include "bench/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <nlohmann/json.hpp>

#include "bench/speedup_interval.h"

namespace dietcode {

using nlohmann::json;

double BenchRow::speedup() const {
  return has_baseline() && pack_us > 0 ? baseline_us / pack_us : -1;
}

double BenchRow::pack_tflops() const { return pack_us > 0 ? flops / (pack_us * 1e6) : -1; }

double BenchRow::baseline_tflops() const {
  return has_baseline() ? flops / (baseline_us * 1e6) : -1;
}

double BenchRow::percent_of_peak() const {
  const double tflops = pack_tflops();
  return peak_tflops > 0 && tflops >= 0 ? 100.0 * tflops / peak_tflops : -1;
}

double BenchRow::peak_ceiling() const {
  if (!has_baseline() || flops <= 0 || peak_tflops <= 0) return -1;
  return baseline_us / (flops / (peak_tflops * 1e6));
}

BenchRow row_against(const BenchRow& row, const std::string& name) {
  BenchRow out = row;
  out.baseline_us = -1;
  out.baseline.clear();
  out.baseline_detail.clear();
  out.baseline_samples.clear();
  for (const BaselineTiming& b : row.baselines)
    if (b.name == name) {
      out.baseline_us = b.us;
      out.baseline_samples = b.samples;
      out.baseline = b.label;
      out.baseline_detail = b.detail;
    }
  return out;
}

std::vector<BenchRow> rows_against(const std::vector<BenchRow>& rows, const std::string& name) {
  std::vector<BenchRow> out;
  out.reserve(rows.size());
  for (const BenchRow& r : rows) out.push_back(row_against(r, name));
  return out;
}

namespace {

// exp(sum_i w_i ln(x_i) / sum_i w_i) over the rows with a speedup, x_i = figure(row); the plain
// geometric mean when every weight is 0. -1 when no row has a speedup or a figure is missing.
template <class Figure>
double weighted_geomean(const std::vector<BenchRow>& rows, Figure figure) {
  double weighted_log = 0, total_weight = 0, plain_log = 0;
  int count = 0;
  for (const BenchRow& r : rows) {
    if (r.speedup() <= 0) continue;
    const double x = figure(r);
    if (x <= 0) return -1;
    const double w = std::max(r.weight, 0.0);
    weighted_log += w * std::log(x);
    total_weight += w;
    plain_log += std::log(x);
    ++count;
  }
  if (count == 0) return -1;
  return total_weight > 0 ? std::exp(weighted_log / total_weight) : std::exp(plain_log / count);
}

}  // namespace

double weighted_geomean_speedup(const std::vector<BenchRow>& rows) {
  return weighted_geomean(rows, [](const BenchRow& r) { return r.speedup(); });
}

std::vector<std::pair<std::string, double>> per_op_geomean_speedups(
    const std::vector<BenchRow>& rows) {
  std::vector<std::pair<std::string, double>> out;
  for (const BenchRow& r : rows) {
    if (std::any_of(out.begin(), out.end(), [&](const auto& op) { return op.first == r.op; }))
      continue;
    std::vector<BenchRow> of_op;
    std::copy_if(rows.begin(), rows.end(), std::back_inserter(of_op),
                 [&](const BenchRow& x) { return x.op == r.op; });
    const double geomean = weighted_geomean_speedup(of_op);
    if (geomean > 0) out.emplace_back(r.op, geomean);
  }
  return out;
}

double weighted_geomean_ceiling(const std::vector<BenchRow>& rows) {
  return weighted_geomean(rows, [](const BenchRow& r) { return r.peak_ceiling(); });
}

const BenchRow* worst_row(const std::vector<BenchRow>& rows) {
  const BenchRow* worst = nullptr;
  for (const BenchRow& r : rows)
    if (r.speedup() > 0 && (!worst || r.speedup() < worst->speedup())) worst = &r;
  return worst;
}

int failed_rows(const std::vector<BenchRow>& rows) {
  return int(std::count_if(rows.begin(), rows.end(), [](const BenchRow& r) { return r.failed; }));
}

namespace {

// "-" for a figure that does not exist (negative by convention).
std::string figure(double value, const char* format) {
  return value < 0 ? "-" : fmt::format(fmt::runtime(format), value);
}

std::string plural(int n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// Columns padded to their widest cell; `right` marks the numeric columns.
std::string format_table(const std::vector<std::vector<std::string>>& cells,
                         const std::vector<bool>& right) {
  std::vector<size_t> width(right.size(), 0);
  for (const auto& row : cells)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::string out;
  for (const auto& row : cells) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      if (c) line += "  ";
      const std::string pad(width[c] - row[c].size(), ' ');
      line += right[c] ? pad + row[c] : row[c] + (c + 1 < row.size() ? pad : "");
    }
    out += line + "\n";
  }
  return out;
}

// The latency column names the baseline when there is one ("cublas us"), else "baseline us".
std::string baseline_label(const BenchReport& report) {
  return report.baseline.find(", ") == std::string::npos ? report.baseline + " us"
                                                         : std::string("baseline us");
}

json text_or_null(const std::string& text) { return text.empty() ? json(nullptr) : json(text); }

}  // namespace

namespace {

// The table's cells for a GPU report: one baseline column.
std::vector<std::vector<std::string>> single_baseline_table(const BenchReport& report,
                                                            std::vector<bool>* right) {
  std::vector<std::vector<std::string>> cells = {
      {"op", "shape", "pack us", baseline_label(report), "speedup", "TFLOP/s", "% peak", "check"}};
  for (const BenchRow& r : report.rows) {
    cells.push_back({r.op, r.shape, figure(r.pack_us, "{:.2f}"), figure(r.baseline_us, "{:.2f}"),
                     figure(r.speedup(), "{:.2f}x"), figure(r.pack_tflops(), "{:.2f}"),
                     figure(r.percent_of_peak(), "{:.1f}%"), r.check});
  }
  *right = {false, false, true, true, true, true, true, false};
  return cells;
}

// With several baselines (CPU): a time and a speedup column per baseline, GFLOP/s.
std::vector<std::vector<std::string>> baseline_columns_table(const BenchReport& report,
                                                             std::vector<bool>* right) {
  std::vector<std::string> header = {"op", "shape", "pack us"};
  *right = {false, false, true};
  for (const auto& [name, label] : report.baseline_columns) {
    header.push_back(name + " us");
    header.push_back("vs " + name);
    right->insert(right->end(), {true, true});
  }
  header.insert(header.end(), {"GFLOP/s", "% peak", "check"});
  right->insert(right->end(), {true, true, false});
  std::vector<std::vector<std::string>> cells = {header};
  for (const BenchRow& r : report.rows) {
    std::vector<std::string> line = {r.op, r.shape, figure(r.pack_us, "{:.2f}")};
    for (const auto& [name, label] : report.baseline_columns) {
      const BenchRow against = row_against(r, name);
      line.push_back(figure(against.baseline_us, "{:.2f}"));
      line.push_back(figure(against.speedup(), "{:.2f}x"));
    }
    const double tflops = r.pack_tflops();
    line.insert(line.end(), {figure(tflops < 0 ? -1 : 1e3 * tflops, "{:.1f}"),
                             figure(r.percent_of_peak(), "{:.1f}%"), r.check});
    cells.push_back(std::move(line));
  }
  return cells;
}

// "; 1.02-1.05 at 95% over this run's rounds", or nothing without paired runs to resample.
std::string interval_text(const SpeedupInterval& interval, const char* format) {
  if (!interval.valid()) return "";
  return fmt::format("; {}-{} at {:.0f}% over this run's rounds",
                     fmt::format(fmt::runtime(format), interval.low),
                     fmt::format(fmt::runtime(format), interval.high), 100 * interval.level);
}

// "weighted geometric-mean speedup over X: ..." and the worst instance, for `rows` against
// the baseline `label`.
std::string geomean_lines(const std::vector<BenchRow>& rows, const std::string& label) {
  const double geomean = weighted_geomean_speedup(rows);
  if (geomean <= 0) return "";
  const int with_speedup = int(
      std::count_if(rows.begin(), rows.end(), [](const BenchRow& r) { return r.speedup() > 0; }));
  std::string out = fmt::format("weighted geometric-mean speedup over {}: {:.3f}x ({}{})\n", label,
                                geomean, plural(with_speedup, "instance", "instances"),
                                interval_text(geomean_speedup_interval(rows), "{:.3f}"));
  const std::vector<std::pair<std::string, double>> per_op = per_op_geomean_speedups(rows);
  if (per_op.size() > 1) {
    std::string ops;
    for (const auto& [op, speedup] : per_op)
      ops += fmt::format("{}{} {:.3f}x", ops.empty() ? "" : ", ", op, speedup);
    out += fmt::format("per op over {}: {}\n", label, ops);
  }
  const BenchRow* worst = worst_row(rows);
  out += fmt::format("worst instance: {} {}: {:.2f}x (pack {:.2f} us, {} {:.2f} us{})\n", worst->op,
                     worst->shape, worst->speedup(), worst->pack_us, label, worst->baseline_us,
                     interval_text(row_speedup_interval(*worst), "{:.2f}"));
  const double ceiling = weighted_geomean_ceiling(rows);
  if (ceiling > 0)
    out += fmt::format("ceiling over {}: {:.3f}x, with every instance at 100% of the peak\n", label,
                       ceiling);
  return out;
}

}  // namespace

std::string format_report(const BenchReport& report) {
  std::string out = fmt::format("dietcode bench: {} on {}\n", report.pack, report.device);
  out += fmt::format(
      "baseline {}; {}; median of {} after {} warm-up launches, {}\n", report.baseline,
      report.l2_detail, plural(report.repeats, "run", "runs"), report.warmup,
      report.method.empty() ? "pack and baseline interleaved in one stream" : report.method);

  std::vector<bool> right;
  const auto cells = report.baseline_columns.empty() ? single_baseline_table(report, &right)
                                                     : baseline_columns_table(report, &right);
  out += format_table(cells, right);

  if (!report.baseline_per_op.empty()) {
    out += "baseline per op:\n";
    size_t width = 0;
    for (const auto& [op, what] : report.baseline_per_op) width = std::max(width, op.size());
    for (const auto& [op, what] : report.baseline_per_op)
      out += fmt::format("  {:<{}}  {}\n", op, width, what);
  }
  for (const std::string& note : report.notes) out += "note: " + note + "\n";

  std::string summary;
  if (report.baseline_columns.empty()) {
    summary = geomean_lines(report.rows, report.baseline);
  } else {
    for (const auto& [name, label] : report.baseline_columns)
      summary += geomean_lines(rows_against(report.rows, name), label);
  }
  out += summary.empty() ? "no speedup to report: no instance has a baseline time\n" : summary;
  if (int failures = failed_rows(report.rows))
    out += fmt::format("FAILED: {} with the baseline\n",
                       plural(failures, "instance disagrees", "instances disagree"));
  return out;
}

namespace {

// CSV needs quotes only around a field holding a comma, a quote or a line break.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string csv_figure(double value, const char* format) {
  return value < 0 ? "" : fmt::format(fmt::runtime(format), value);
}

json json_figure(double value, int decimals) {
  if (value < 0 || !std::isfinite(value)) return nullptr;
  const double scale = std::pow(10.0, decimals);
  return std::round(value * scale) / scale;
}

}  // namespace

namespace {

std::string csv_with_baseline_columns(const BenchReport& report) {
  std::string out = "op,shape,pack_us";
  for (const auto& [name, label] : report.baseline_columns)
    out += "," + csv_field(name + "_us") + "," + csv_field(name + "_speedup");
  out += ",pack_gflops,percent_of_peak,weight,check\n";
  for (const BenchRow& r : report.rows) {
    out += csv_field(r.op) + "," + csv_field(r.shape) + "," + csv_figure(r.pack_us, "{:.3f}");
    for (const auto& [name, label] : report.baseline_columns) {
      const BenchRow against = row_against(r, name);
      out += "," + csv_figure(against.baseline_us, "{:.3f}") + "," +
             csv_figure(against.speedup(), "{:.4f}");
    }
    const double tflops = r.pack_tflops();
    out += fmt::format(",{},{},{:.6g},{}\n", csv_figure(tflops < 0 ? -1 : 1e3 * tflops, "{:.3f}"),
                       csv_figure(r.percent_of_peak(), "{:.2f}"), r.weight, csv_field(r.check));
  }
  return out;
}

}  // namespace

std::string format_csv(const BenchReport& report) {
  if (!report.baseline_columns.empty()) return csv_with_baseline_columns(report);
  std::string out =
      "op,shape,pack_us,baseline_us,speedup,pack_tflops,baseline_tflops,percent_of_peak,weight,"
      "check\n";
  for (const BenchRow& r : report.rows) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{}\n", csv_field(r.op), csv_field(r.shape),
                       csv_figure(r.pack_us, "{:.3f}"), csv_figure(r.baseline_us, "{:.3f}"),
                       csv_figure(r.speedup(), "{:.4f}"), csv_figure(r.pack_tflops(), "{:.4f}"),
                       csv_figure(r.baseline_tflops(), "{:.4f}"),
                       csv_figure(r.percent_of_peak(), "{:.2f}"), fmt::format("{:.6g}", r.weight),
                       csv_field(r.check));
  }
  return out;
}

namespace {

json interval_json(const SpeedupInterval& interval) {
  if (!interval.valid()) return nullptr;
  return {{"low", json_figure(interval.low, 4)},
          {"high", json_figure(interval.high, 4)},
          {"level", interval.level},
          {"resamples", interval.resamples}};
}

json per_op_json(const std::vector<BenchRow>& rows) {
  json out = json::object();
  for (const auto& [op, speedup] : per_op_geomean_speedups(rows)) out[op] = json_figure(speedup, 4);
  return out;
}

json worst_json(const std::vector<BenchRow>& rows) {
  const BenchRow* w = worst_row(rows);
  if (!w) return nullptr;
  return {{"op", w->op},
          {"shape", w->shape},
          {"speedup", json_figure(w->speedup(), 4)},
          {"interval", interval_json(row_speedup_interval(*w))}};
}

}  // namespace

json report_json(const BenchReport& report) {
  json rows = json::array();
  for (const BenchRow& r : report.rows) {
    rows.push_back({{"op", r.op},
                    {"shape", r.shape},
                    {"baseline", text_or_null(r.baseline)},
                    {"baseline_detail", text_or_null(r.baseline_detail)},
                    {"pack_us", json_figure(r.pack_us, 4)},
                    {"baseline_us", json_figure(r.baseline_us, 4)},
                    {"speedup", json_figure(r.speedup(), 4)},
                    {"pack_tflops", json_figure(r.pack_tflops(), 4)},
                    {"baseline_tflops", json_figure(r.baseline_tflops(), 4)},
                    {"percent_of_peak", json_figure(r.percent_of_peak(), 2)},
                    {"weight", r.weight},
                    {"flops", r.flops},
                    {"check", r.check},
                    {"pack_runs_us", r.pack_samples},
                    {"baseline_runs_us", r.baseline_samples}});
    if (!r.baselines.empty()) {
      json baselines = json::array();
      for (const BaselineTiming& b : r.baselines)
        baselines.push_back({{"name", b.name},
                             {"label", b.label},
                             {"detail", text_or_null(b.detail)},
                             {"us", json_figure(b.us, 4)},
                             {"speedup", json_figure(row_against(r, b.name).speedup(), 4)},
                             {"check", b.check},
                             {"runs_us", b.samples}});
      rows.back()["baselines"] = baselines;
    }
  }
  // With several baselines the headline figures are against the first (oneDNN on the CPU).
  const std::vector<BenchRow> headline =
      report.baseline_columns.empty() ? report.rows
                                      : rows_against(report.rows, report.baseline_columns[0].first);
  json per_op = json::object();
  for (const auto& [op, what] : report.baseline_per_op)  // several baselines: joined by "; "
    per_op[op] = per_op.contains(op) ? per_op[op].get<std::string>() + "; " + what : what;
  json out = {{"pack", report.pack},
              {"device", report.device},
              {"baseline", report.baseline},
              {"l2", report.l2},
              {"l2_detail", report.l2_detail},
              {"date", report.date},
              {"repeats", report.repeats},
              {"warmup", report.warmup},
              {"geomean_speedup", json_figure(weighted_geomean_speedup(headline), 4)},
              {"geomean_interval", interval_json(geomean_speedup_interval(headline))},
              {"geomean_speedup_per_op", per_op_json(headline)},
              {"ceiling_speedup", json_figure(weighted_geomean_ceiling(headline), 4)},
              {"worst", worst_json(headline)},
              {"failures", failed_rows(report.rows)},
              {"baseline_per_op", per_op},
              {"notes", report.notes},
              {"rows", rows}};
  out["target"] = report.target;
  out["threads"] = report.threads > 0 ? json(report.threads) : json(nullptr);
  if (!report.baseline_columns.empty()) {
    json baselines = json::array();
    for (const auto& [name, label] : report.baseline_columns) {
      const std::vector<BenchRow> against = rows_against(report.rows, name);
      baselines.push_back({{"name", name},
                           {"label", label},
                           {"geomean_speedup", json_figure(weighted_geomean_speedup(against), 4)},
                           {"geomean_interval", interval_json(geomean_speedup_interval(against))},
                           {"geomean_speedup_per_op", per_op_json(against)},
                           {"ceiling_speedup", json_figure(weighted_geomean_ceiling(against), 4)},
                           {"worst", worst_json(against)}});
    }
    out["baselines"] = baselines;
  }
  return out;
}

}  // namespace dietcode
