#include "bench/svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "bench/speedup_interval.h"

namespace dietcode {

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

double nice_tick_step(double top, int max_ticks) {
  if (!(top > 0) || max_ticks < 1) return 1;
  const double raw = top / max_ticks;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) return m * power;
  return 10 * power;
}

namespace {

// Colours that stay apart for colour-blind readers (Okabe-Ito blue, orange, green).
const char kPackColour[] = "#0072B2";
const char kBaselineColour[] = "#E69F00";
const char kSpeedupColour[] = "#009E73";
const char kFailColour[] = "#D55E00";
// Further baselines' latency lines (Okabe-Ito reddish purple, sky blue, yellow).
const char* const kMoreBaselineColours[] = {"#CC79A7", "#56B4E9", "#F0E442"};

constexpr double kPanelW = 560, kPanelH = 300;
constexpr double kLeft = 64, kRight = 60, kTop = 34, kBottom = 52;  // margins inside a panel
constexpr int kColumns = 2;

std::string num(double v) { return fmt::format("{:.1f}", v); }

// Tick labels without trailing zeros: 0.5, 1, 2.5, 100.
std::string tick_label(double v) {
  std::string s = fmt::format("{:.3f}", v);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

struct Panel {
  std::string op;
  std::vector<const BenchRow*> rows;
};

// The baselines drawn as latency lines beyond the rows' own one: the report's further baseline
// columns (CPU), each with its colour.
struct ExtraBaseline {
  std::string name, label;
  const char* colour;
};

std::vector<ExtraBaseline> extra_baselines(const BenchReport& report) {
  std::vector<ExtraBaseline> out;
  for (size_t i = 1; i < report.baseline_columns.size(); ++i)
    out.push_back({report.baseline_columns[i].first, report.baseline_columns[i].second,
                   kMoreBaselineColours[(i - 1) % 3]});
  return out;
}

std::string polyline(const std::vector<std::pair<double, double>>& points, const char* colour,
                     const char* extra = "") {
  if (points.empty()) return "";
  std::string pts;
  for (const auto& [x, y] : points) pts += (pts.empty() ? "" : " ") + num(x) + "," + num(y);
  if (points.size() == 1) {  // a lone instance still shows
    return fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{}\"/>\n", num(points[0].first),
                       num(points[0].second), colour);
  }
  return fmt::format(
      "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\"{}/>\n", pts, colour,
      extra);
}

// The speedup's 95% interval over the run's rounds (speedup_interval.h) as a shaded band: the
// upper edge left to right, the lower edge back. Only where every instance of the panel has one,
// so a band never jumps across an instance without runs.
std::string interval_band(const std::vector<std::pair<double, double>>& high,
                          const std::vector<std::pair<double, double>>& low) {
  if (high.size() < 2) return "";
  std::string pts;
  for (const auto& [x, y] : high) pts += (pts.empty() ? "" : " ") + num(x) + "," + num(y);
  for (auto it = low.rbegin(); it != low.rend(); ++it)
    pts += " " + num(it->first) + "," + num(it->second);
  return fmt::format(
      "<polygon points=\"{}\" fill=\"{}\" fill-opacity=\"0.18\" stroke=\"none\" "
      "class=\"interval\"/>\n",
      pts, kSpeedupColour);
}

std::string render_panel(const Panel& panel, const std::string& baseline,
                         const std::vector<ExtraBaseline>& extras, double ox, double oy) {
  const double x0 = ox + kLeft, x1 = ox + kPanelW - kRight;
  const double y0 = oy + kPanelH - kBottom, y1 = oy + kTop;
  const size_t n = panel.rows.size();
  auto x_of = [&](size_t i) { return n <= 1 ? (x0 + x1) / 2 : x0 + (x1 - x0) * i / double(n - 1); };

  double max_us = 0, max_speedup = 0;
  bool any_speedup = false;
  for (const BenchRow* r : panel.rows) {
    max_us = std::max({max_us, r->pack_us, r->baseline_us});
    for (const ExtraBaseline& e : extras)
      max_us = std::max(max_us, row_against(*r, e.name).baseline_us);
    if (r->speedup() > 0) any_speedup = true, max_speedup = std::max(max_speedup, r->speedup());
  }
  const double us_step = nice_tick_step(max_us * 1.05, 5);
  const double us_top = std::max(us_step, std::ceil(max_us * 1.05 / us_step) * us_step);
  // The speedup axis always shows 1.0x and a little above the best instance.
  const double sp_step = nice_tick_step(std::max(1.2, max_speedup * 1.1), 5);
  const double sp_top = std::ceil(std::max(1.2, max_speedup * 1.1) / sp_step) * sp_step;
  auto y_us = [&](double us) { return y0 - (y0 - y1) * us / us_top; };
  auto y_sp = [&](double s) { return y0 - (y0 - y1) * s / sp_top; };

  std::string out = fmt::format("<g>\n<text x=\"{}\" y=\"{}\" class=\"panel\">{}</text>\n", num(x0),
                                num(oy + kTop - 12), xml_escape(panel.op));
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"frame\"/>\n",
                     num(x0), num(y1), num(x1 - x0), num(y0 - y1));
  for (double t = 0; t <= us_top + 1e-9; t += us_step) {
    out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" class=\"grid\"/>\n", num(x0),
                       num(y_us(t)), num(x1), num(y_us(t)));
    out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"tick\" text-anchor=\"end\">{}</text>\n",
                       num(x0 - 5), num(y_us(t) + 4), tick_label(t));
  }
  out += fmt::format(
      "<text x=\"{}\" y=\"{}\" class=\"axis\" text-anchor=\"middle\" transform=\"rotate(-90 {} "
      "{})\">latency (us)</text>\n",
      num(ox + 16), num((y0 + y1) / 2), num(ox + 16), num((y0 + y1) / 2));

  // Shape ticks: at most seven, spread evenly, always the first and the last instance.
  const size_t ticks = std::min<size_t>(n, 7);
  size_t last_tick = n;  // none yet
  for (size_t t = 0; t < ticks; ++t) {
    const size_t i = ticks == 1 ? 0 : size_t(std::lround(double(t) * double(n - 1) / (ticks - 1)));
    if (i == last_tick) continue;
    last_tick = i;
    out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"tick\" text-anchor=\"middle\">{}</text>\n",
                       num(x_of(i)), num(y0 + 16), xml_escape(panel.rows[i]->shape));
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"axis\" text-anchor=\"middle\">shape</text>\n",
                     num((x0 + x1) / 2), num(y0 + 36));

  std::vector<std::pair<double, double>> pack, base, speed, band_high, band_low;
  for (size_t i = 0; i < n; ++i) {
    const BenchRow& r = *panel.rows[i];
    if (r.pack_us > 0) pack.emplace_back(x_of(i), y_us(r.pack_us));
    if (r.has_baseline()) base.emplace_back(x_of(i), y_us(r.baseline_us));
    if (r.speedup() > 0) speed.emplace_back(x_of(i), y_sp(r.speedup()));
    const SpeedupInterval interval = row_speedup_interval(r);
    if (interval.valid()) {
      band_high.emplace_back(x_of(i), y_sp(std::min(interval.high, sp_top)));
      band_low.emplace_back(x_of(i), y_sp(interval.low));
    }
  }
  if (any_speedup) {
    for (double t = 0; t <= sp_top + 1e-9; t += sp_step)
      out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"tick sp\">{}x</text>\n", num(x1 + 5),
                         num(y_sp(t) + 4), tick_label(t));
    // The break-even line: above it the pack is faster.
    out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" class=\"one\"/>\n", num(x0),
                       num(y_sp(1)), num(x1), num(y_sp(1)));
    out += fmt::format(
        "<text x=\"{}\" y=\"{}\" class=\"axis\" text-anchor=\"middle\" transform=\"rotate(90 {} "
        "{})\">speedup over {}</text>\n",
        num(ox + kPanelW - 12), num((y0 + y1) / 2), num(ox + kPanelW - 12), num((y0 + y1) / 2),
        xml_escape(baseline));
  }
  if (band_high.size() == speed.size()) out += interval_band(band_high, band_low);
  out += polyline(base, kBaselineColour);
  for (const ExtraBaseline& e : extras) {
    std::vector<std::pair<double, double>> points;
    for (size_t i = 0; i < n; ++i) {
      const BenchRow against = row_against(*panel.rows[i], e.name);
      if (against.has_baseline()) points.emplace_back(x_of(i), y_us(against.baseline_us));
    }
    out += polyline(points, e.colour);
  }
  out += polyline(pack, kPackColour);
  out += polyline(speed, kSpeedupColour, " stroke-dasharray=\"5,3\"");
  for (size_t i = 0; i < n; ++i) {
    if (!panel.rows[i]->failed) continue;
    out += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"none\" stroke=\"{}\"/>\n",
                       num(x_of(i)), num(y_us(panel.rows[i]->pack_us)), kFailColour);
  }
  return out + "</g>\n";
}

// The legend in one line from (x, y); *end_x: where its last item ends, so the picture can be
// made wide enough for it.
std::string legend(const BenchReport& report, double x, double y, double* end_x) {
  struct Item {
    const char* colour;
    std::string label;
    const char* dash;    // a dash pattern, "" for a solid line
    bool band = false;   // a shaded swatch (the interval) instead of a line
  };
  std::vector<Item> items = {{kPackColour, "pack (dietcode)", ""}};
  if (!report.baseline_columns.empty()) {
    items.push_back({kBaselineColour, report.baseline_columns[0].second, ""});
    for (const ExtraBaseline& e : extra_baselines(report)) items.push_back({e.colour, e.label, ""});
    items.push_back({kSpeedupColour, "speedup over " + report.baseline_columns[0].first, "5,3"});
    items.push_back({kSpeedupColour, "1.0x: break-even", "2,2"});
  } else if (report.baseline != "none") {
    items.push_back({kBaselineColour, report.baseline, ""});
    items.push_back({kSpeedupColour, "speedup (right axis)", "5,3"});
    items.push_back({kSpeedupColour, "1.0x: break-even", "2,2"});
  }
  if (std::any_of(report.rows.begin(), report.rows.end(),
                  [](const BenchRow& r) { return row_speedup_interval(r).valid(); }))
    items.push_back({kSpeedupColour, "95% interval over the rounds", "", true});
  if (failed_rows(report.rows)) items.push_back({kFailColour, "results disagree", ""});
  std::string out;
  for (const Item& item : items) {
    if (item.band)
      out += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"24\" height=\"10\" fill=\"{}\" "
          "fill-opacity=\"0.18\"/>\n",
          num(x), num(y - 9), item.colour);
    else
      out += fmt::format(
          "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2.5\"{}/>\n",
          num(x), num(y - 4), num(x + 24), num(y - 4), item.colour,
          *item.dash ? fmt::format(" stroke-dasharray=\"{}\"", item.dash) : "");
    out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"legend\">{}</text>\n", num(x + 30), num(y),
                       xml_escape(item.label));
    x += 44 + 7.0 * item.label.size();
  }
  *end_x = x;
  return out;
}

}  // namespace

std::string render_svg(const BenchReport& report) {
  // With several baselines, the rows' own baseline (line and speedup) is the first column's.
  const std::vector<BenchRow> rows =
      report.baseline_columns.empty() ? report.rows
                                      : rows_against(report.rows, report.baseline_columns[0].first);
  const std::vector<ExtraBaseline> extras = extra_baselines(report);
  std::vector<Panel> panels;
  std::map<std::string, size_t> index;
  for (const BenchRow& r : rows) {
    auto [it, added] = index.emplace(r.op, panels.size());
    if (added) panels.push_back({r.op, {}});
    panels[it->second].rows.push_back(&r);
  }
  const int columns = panels.size() <= 1 ? 1 : kColumns;
  const int grid_rows = std::max<int>(1, int((panels.size() + columns - 1) / columns));
  const double header = 84;
  std::string title = fmt::format("dietcode pack vs {} on {}", report.baseline, report.device);
  std::string subtitle =
      fmt::format("{} | {} {} | median of {} runs", report.date,
                  report.target == "cpu" ? "caches" : "L2", report.l2, report.repeats);
  const double geomean = weighted_geomean_speedup(rows);
  if (geomean > 0) {
    const BenchRow* worst = worst_row(rows);
    subtitle += fmt::format(" | weighted geomean speedup {:.2f}x, worst {} {} {:.2f}x", geomean,
                            worst->op, worst->shape, worst->speedup());
  }

  // As wide as the panels, or as the title and the legend where those are longer (one op
  // against two baselines with long names): 11 px a character of the bold title.
  double legend_end = 0;
  const std::string legend_svg = legend(report, 16, 70, &legend_end);
  const double width = std::max({columns * kPanelW, legend_end + 16, 32 + 11.0 * title.size()});
  const double height = header + grid_rows * kPanelH + 10;

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"Helvetica, Arial, sans-serif\">\n",
      num(width), num(height));
  out += fmt::format("<title>{}</title>\n", xml_escape(title));
  out +=
      "<style>\n"
      ".title{font-size:17px;font-weight:bold} .subtitle{font-size:12px;fill:#444}\n"
      ".panel{font-size:14px;font-weight:bold} .tick{font-size:10px;fill:#333}\n"
      ".sp{fill:#009E73} .axis{font-size:11px;fill:#333} .legend{font-size:12px}\n"
      ".frame{fill:none;stroke:#999} .grid{stroke:#e4e4e4}\n"
      ".one{stroke:#009E73;stroke-dasharray:2,2;stroke-width:1}\n"
      "</style>\n";
  out +=
      fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"white\"/>\n", num(width), num(height));
  out += fmt::format("<text x=\"16\" y=\"26\" class=\"title\">{}</text>\n", xml_escape(title));
  out +=
      fmt::format("<text x=\"16\" y=\"46\" class=\"subtitle\">{}</text>\n", xml_escape(subtitle));
  out += legend_svg;
  for (size_t p = 0; p < panels.size(); ++p) {
    const double ox = double(p % columns) * kPanelW;
    const double oy = header + double(p / columns) * kPanelH;
    // A panel names the baseline its op ran against (cuDNN for conv2d, cuBLAS for a GEMM).
    std::string baseline = report.baseline;
    for (const BenchRow* r : panels[p].rows)
      if (!r->baseline.empty()) {
        baseline = r->baseline;
        break;
      }
    out += render_panel(panels[p], baseline, extras, ox, oy);
  }
  return out + "</svg>\n";
}

}  // namespace dietcode
