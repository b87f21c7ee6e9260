#include "cli/tune_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "cli/table.h"
#include "search/budget.h"

namespace dietcode::cli {

namespace {

constexpr int kBarCells = 24;

// Seconds left: this run's rate so far over the trials left, capped by the time budget.
double eta_seconds(const SearchProgress& p) {
  double eta = std::numeric_limits<double>::infinity();
  const int done_here = p.trials_done - p.trials_at_start;
  if (done_here > 0)
    eta = p.elapsed_seconds * double(p.trials_total - p.trials_done) / double(done_here);
  if (p.time_limit_seconds > 0)
    eta = std::min(eta, std::max(0.0, p.time_limit_seconds - p.elapsed_seconds));
  return eta;
}

std::string percent(double fraction) {
  return std::isfinite(fraction) ? fmt::format("{:.0f}%", 100 * fraction) : "-";
}

std::string number_or_dash(double value, int decimals) {
  return std::isfinite(value) ? fmt::format("{:.{}f}", value, decimals) : "-";
}

}  // namespace

std::string format_latency_us(double us) {
  return std::isfinite(us) && us > 0 ? fmt::format("{:.2f} us", us) : "-";
}

void TuneProgress::line(const std::string& text) {
  if (mode_ == Mode::kQuiet) return;
  if (bar_width_ > 0) std::fprintf(out_, "\r%*s\r", int(bar_width_), "");
  bar_width_ = 0;
  std::fprintf(out_, "%s\n", text.c_str());
  std::fflush(out_);
}

void TuneProgress::draw(const SearchProgress& p) {
  const double fraction = p.trials_total > 0 ? double(p.trials_done) / p.trials_total : 0;
  const int filled = std::clamp(int(fraction * kBarCells + 0.5), 0, kBarCells);
  const std::string bar =
      std::string(size_t(filled), '#') + std::string(size_t(kBarCells - filled), '-');
  const double eta = eta_seconds(p);
  std::string text = fmt::format(
      "{:<6} [{}] {}/{} trials  {} weighted mean  {} elapsed  ETA {}", p.op->op().name, bar,
      p.trials_done, p.trials_total, format_latency_us(p.op->weighted_mean_us()),
      format_duration(p.elapsed_seconds), std::isfinite(eta) ? format_duration(eta) : "?");
  const size_t width = text.size();
  if (width < bar_width_) text += std::string(bar_width_ - width, ' ');
  std::fprintf(out_, "\r%s", text.c_str());
  std::fflush(out_);
  bar_width_ = std::max(width, bar_width_);
}

void TuneProgress::update(const SearchProgress& p) {
  if (mode_ == Mode::kQuiet) return;
  const OpSearch& op = *p.op;
  switch (p.kind) {
    case SearchProgress::Kind::kBatch:
      if (mode_ == Mode::kBar) draw(p);
      return;
    case SearchProgress::Kind::kRound: {
      const RoundReport& r = p.round;
      if (r.runoff > 0 && (mode_ == Mode::kLines || verbose_)) {
        // The change in the op's figure is the size of the rounds' luck: the winner's curse
        // of keeping the best of noisy timings, plus any drift of the machine since.
        line(fmt::format("{}: runoff {}: the {} kernel(s) closest to each instance's best timed "
                         "again together on {} (kernel, instance) pairs ({} measured, {} failed); "
                         "weighted mean {} -> {} ({:+.1f}%); {}",
                         op.op().name, r.runoff, r.runoff_kernels, r.runoff_pairs, r.measured,
                         r.failed, format_latency_us(r.weighted_mean_before_us),
                         format_latency_us(r.weighted_mean_us),
                         100.0 * (r.weighted_mean_us / r.weighted_mean_before_us - 1.0),
                         format_duration(p.elapsed_seconds)));
      } else if (r.final_completion && (mode_ == Mode::kLines || verbose_)) {
        line(fmt::format("{}: the {} kernel(s) serving most of its time timed on every instance "
                         "they lacked ({} measured, {} failed); weighted mean {}; {}",
                         op.op().name, r.completed, r.measured, r.failed,
                         format_latency_us(r.weighted_mean_us), format_duration(p.elapsed_seconds)));
      } else if (mode_ == Mode::kLines || verbose_) {
        std::string what = fmt::format("{} new", r.selected);
        if (r.completed) what += fmt::format(", {} from the log completed", r.completed);
        if (r.cut_for_time)
          what += fmt::format(", {} more left out to end within the time budget", r.cut_for_time);
        line(
            fmt::format("{}: round {}: {} kernels ({}), {} measured, {} rejected, {} failed, {} "
                        "duplicate; weighted mean {}; trials {}/{}; {}",
                        op.op().name, r.round, r.selected + r.completed, what, r.measured,
                        r.rejected, r.failed, r.duplicates, format_latency_us(r.weighted_mean_us),
                        std::min(op.trials(), op.trial_budget()), op.trial_budget(),
                        format_duration(p.elapsed_seconds)));
        if (r.restarting)
          line(fmt::format("{}: rounds stalled with budget left: starting afresh, the next "
                           "round explores as the first did",
                           op.op().name));
      }
      if (mode_ == Mode::kBar) draw(p);
      return;
    }
    case SearchProgress::Kind::kOpDone: {
      const CostModelQuality& q = op.quality();
      // Every kernel ranked by a model that never saw it (model_quality.h: k-fold).
      std::string quality =
          q.evaluated
              ? fmt::format("cost model on kernels it never saw ({}-fold over {}{}): Spearman {}, "
                            "top-1 within 5% on {} of instances",
                            q.folds, q.held_out_kernels,
                            q.peer_kernels ? fmt::format(", with {} kernels of the other ops",
                                                         q.peer_kernels)
                                           : std::string(),
                            number_or_dash(q.summary.mean_spearman, 3),
                            percent(q.summary.fraction_within))
              : std::string("too few kernels to judge the cost model");
      if (q.shapes_evaluated)
        quality += fmt::format("; on shapes it never saw ({}), Spearman {}", q.held_out_instances,
                               number_or_dash(q.shapes.mean_spearman, 3));
      line(fmt::format("{}: done ({}): weighted mean {}; {}", op.op().name,
                       to_string(op.stop_reason()), format_latency_us(op.weighted_mean_us()),
                       quality));
      return;
    }
  }
}

void TuneProgress::finish() {
  if (mode_ == Mode::kBar && bar_width_ > 0) {
    std::fprintf(out_, "\r%*s\r", int(bar_width_), "");
    std::fflush(out_);
    bar_width_ = 0;
  }
}

std::string summary_text(const JointSearchResult& result, const DeviceIdentity& device) {
  TextTable table;
  table.add_column("op");
  table.add_column("instances", TextTable::Align::kRight);
  table.add_column("trials", TextTable::Align::kRight);
  table.add_column("weighted mean", TextTable::Align::kRight);
  table.add_column("TFLOP/s", TextTable::Align::kRight);
  table.add_column("kernels used", TextTable::Align::kRight);
  table.add_column("compile", TextTable::Align::kRight);
  table.add_column("measure", TextTable::Align::kRight);
  table.add_column("Spearman", TextTable::Align::kRight);
  table.add_column("top-1 within 5%", TextTable::Align::kRight);
  table.add_column("Spearman, new shapes", TextTable::Align::kRight);
  table.add_column("stopped");
  int trials = 0, compiled = 0;
  double compile = 0, measure = 0, model = 0;
  for (const OpOutcome& o : result.ops) {
    const QualitySummary& q = o.quality.summary;
    table.add_row({o.op, std::to_string(o.instances), std::to_string(o.trials),
                   format_latency_us(o.weighted_mean_us), number_or_dash(o.tflops, 2),
                   std::to_string(o.kernels_used), format_duration(o.stats.compile_seconds),
                   format_duration(o.stats.measure_seconds),
                   o.quality.evaluated ? number_or_dash(q.mean_spearman, 3) : "-",
                   o.quality.evaluated ? percent(q.fraction_within) : "-",
                   o.quality.shapes_evaluated ? number_or_dash(o.quality.shapes.mean_spearman, 3)
                                              : "-",
                   to_string(o.stop)});
    trials += o.trials;
    compiled += o.stats.compiled;
    compile += o.stats.compile_seconds;
    measure += o.stats.measure_seconds;
    model += o.stats.model_seconds;
  }
  std::string out = "\n" + table.render("  ");
  out += fmt::format(
      "\n  {} trials in the log; this run compiled {} kernels in {}: compiling {}, measuring {}, "
      "cost model {}{}\n",
      trials, compiled, format_duration(result.wall_seconds), format_duration(compile),
      format_duration(measure), format_duration(model),
      compile > 0 ? fmt::format(" ({:.1f} kernels/s compiled)", compiled / compile) : "");
  if (device.simulated)
    out += "  SIMULATED: these latencies come from a model (" + device.name +
           "), not from measurements on a GPU\n";
  return out;
}

nlohmann::ordered_json summary_json(const JointSearchResult& result, const Workload& workload,
                                    const DeviceIdentity& device, const std::string& log_path,
                                    uint64_t seed) {
  using nlohmann::ordered_json;
  auto number = [](double x) { return std::isfinite(x) ? ordered_json(x) : ordered_json(); };
  ordered_json out;
  out["workload"] = workload.name;
  out["log"] = log_path;
  out["device"] = {{"name", device.name}, {"arch", device.arch}, {"simulated", device.simulated}};
  out["seed"] = seed;
  out["wall_seconds"] = result.wall_seconds;
  out["out_of_time"] = result.out_of_time;
  out["ops"] = ordered_json::array();
  for (const OpOutcome& o : result.ops) {
    const QualitySummary& q = o.quality.summary;
    ordered_json j;
    j["op"] = o.op;
    j["instances"] = o.instances;
    j["trials"] = o.trials;
    j["stopped"] = to_string(o.stop);
    j["restarts"] = o.stats.restarts;
    j["weighted_mean_latency_us"] = number(o.weighted_mean_us);
    j["tflops"] = number(o.tflops);
    j["kernels_used"] = o.kernels_used;
    j["compiled"] = o.stats.compiled;
    j["compile_errors"] = o.stats.compile_errors;
    j["over_limits"] = o.stats.over_limits;
    j["duplicates"] = o.stats.duplicates;
    j["measured_kernels"] = o.stats.measured_kernels;
    j["failed_kernels"] = o.stats.failed_kernels;
    j["measurements"] = o.stats.measurements;
    j["resumed_kernels"] = o.stats.resumed_kernels;
    j["compile_seconds"] = o.stats.compile_seconds;
    j["measure_seconds"] = o.stats.measure_seconds;
    j["model_seconds"] = o.stats.model_seconds;
    j["cost_model"] = {{"evaluated", o.quality.evaluated},
                       {"folds", o.quality.folds},
                       {"train_kernels", o.quality.train_kernels},
                       {"held_out_kernels", o.quality.held_out_kernels},
                       {"mean_spearman", number(q.mean_spearman)},
                       {"top1_within_5pct", number(q.fraction_within)},
                       {"weighted_mean_regret", number(q.weighted_mean_regret)},
                       {"peer_kernels", o.quality.peer_kernels}};
    if (o.quality.shapes_evaluated)
      j["cost_model"]["held_out_shapes"] = {
          {"instances", o.quality.held_out_instances},
          {"mean_spearman", number(o.quality.shapes.mean_spearman)},
          {"top1_within_5pct", number(o.quality.shapes.fraction_within)},
          {"weighted_mean_regret", number(o.quality.shapes.weighted_mean_regret)}};
    if (o.runoff.runoff > 0)
      j["runoff"] = {{"number", o.runoff.runoff},
                     {"kernels", o.runoff.runoff_kernels},
                     {"pairs", o.runoff.runoff_pairs},
                     {"failed_kernels", o.runoff.failed},
                     {"weighted_mean_before_us", number(o.runoff.weighted_mean_before_us)}};
    ordered_json assignment = ordered_json::array();
    for (size_t i = 0; i < o.assignment.size(); ++i) {
      const InstanceChoice& c = o.assignment[i];
      ordered_json a;
      a["shape"] = o.shapes[i];
      a["weight"] = o.weights[i];
      if (c.kernel >= 0) {
        a["mk"] = o.kernels[size_t(c.kernel)].key();
        a["latency_us"] = number(c.latency_us);
        a["measured"] = c.measured;
      } else {
        a["mk"] = nullptr;
      }
      assignment.push_back(a);
    }
    j["assignment"] = assignment;
    out["ops"].push_back(j);
  }
  return out;
}

}  // namespace dietcode::cli
