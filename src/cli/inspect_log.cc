#include "cli/inspect_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/table.h"
#include "common/error.h"
#include "search/tuning_log.h"

namespace dietcode::cli {

namespace {

std::string shape_text(const std::map<std::string, int64_t>& shape) {
  std::string text;
  for (const auto& [name, value] : shape)
    text += (text.empty() ? "" : ",") + name + "=" + std::to_string(value);
  return text;
}

// --shape T=37 as {T: 37}; a value the log never saw simply matches nothing.
std::map<std::string, int64_t> parse_filters(const std::vector<std::string>& shapes) {
  std::map<std::string, int64_t> filters;
  for (const std::string& text : shapes) {
    size_t eq = text.find('=');
    std::string digits = eq == std::string::npos ? "" : text.substr(eq + 1);
    if (eq == 0 || eq == std::string::npos || digits.empty() || digits.size() > 18 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      throw UserError("inspect --shape: expected VAR=VALUE with a positive integer value, got \"" +
                      text + "\"");
    filters[text.substr(0, eq)] = std::stoll(digits);
  }
  return filters;
}

bool selected(const std::map<std::string, int64_t>& shape,
              const std::map<std::string, int64_t>& filters) {
  for (const auto& [name, value] : filters) {
    auto it = shape.find(name);
    if (it != shape.end() && it->second != value) return false;
  }
  return true;
}

struct OpView {
  std::vector<const TuningRecord*> best;  // per instance, in instance order
  std::set<std::string> kernels;          // distinct best micro-kernels
  size_t records = 0, failed = 0;
  bool simulated = false;
};

}  // namespace

int inspect_log(const std::string& path, bool json, const std::vector<std::string>& shapes,
                bool quiet) {
  std::vector<std::string> warnings;
  TuningLog log = read_tuning_log(path, warnings);
  for (const std::string& w : warnings) std::fprintf(stderr, "%s\n", w.c_str());
  auto filters = parse_filters(shapes);

  std::vector<const TuningRecord*> all;
  for (const TuningRecord& r : log.records) all.push_back(&r);
  // Ops in first-seen order, so the view follows the log rather than the alphabet.
  std::vector<std::string> order;
  std::map<std::string, OpView> ops;
  for (const TuningRecord* r : all) {
    if (!ops.count(r->op)) order.push_back(r->op);
    OpView& view = ops[r->op];
    ++view.records;
    view.failed += r->status != MeasureStatus::kOk;
    view.simulated = view.simulated || r->simulated;
  }
  for (const auto& [key, record] : best_per_instance(all)) {
    if (!selected(key.shape, filters)) continue;
    OpView& view = ops[key.op];
    view.best.push_back(record);
    view.kernels.insert(record->mk.key());
  }

  if (json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const std::string& op : order) {
      const OpView& view = ops[op];
      nlohmann::ordered_json instances = nlohmann::ordered_json::array();
      for (const TuningRecord* r : view.best)
        instances.push_back({{"shape", r->shape},
                             {"latency_us", *r->latency_us},
                             {"mk", r->mk.to_json()},
                             {"device", r->device},
                             {"simulated", r->simulated}});
      out.push_back({{"op", op},
                     {"records", view.records},
                     {"failed", view.failed},
                     {"kernels_used", view.kernels.size()},
                     {"instances", instances}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  if (quiet) return 0;
  std::printf("tuning log %s: %zu records, %zu lines of other kinds\n", path.c_str(),
              log.records.size(), log.others.size());
  for (const std::string& op : order) {
    const OpView& view = ops[op];
    std::printf("\n%s: %zu records (%zu failed), best of %zu instances uses %zu kernels%s\n",
                op.c_str(), view.records, view.failed, view.best.size(), view.kernels.size(),
                view.simulated ? " (SIMULATED: a model's numbers, not measurements)" : "");
    TextTable table;
    table.add_column("shape");
    table.add_column("best us", TextTable::Align::kRight);
    table.add_column("micro-kernel");
    for (const TuningRecord* r : view.best)
      table.add_row({shape_text(r->shape), format_sig(*r->latency_us), r->mk.key()});
    std::printf("%s", table.render("  ").c_str());
  }
  return 0;
}

// One kernel of an op in the by-kernel view.
struct KernelView {
  std::string key;
  size_t instances = 0, best_on = 0;
  double log_ratio_sum = 0, latency_sum = 0;  // over its instances
  double geomean_vs_best() const { return std::exp(log_ratio_sum / double(instances)); }
};

int inspect_log_by_kernel(const std::string& path, bool json,
                          const std::vector<std::string>& shapes, bool quiet) {
  std::vector<std::string> warnings;
  TuningLog log = read_tuning_log(path, warnings);
  for (const std::string& w : warnings) std::fprintf(stderr, "%s\n", w.c_str());
  auto filters = parse_filters(shapes);

  // Each kernel's time on each instance as the rounds measured it (the best of its records
  // there). Runoff records are left out: they time only each instance's finalists, so they
  // would compare kernels on different sets of instances.
  std::vector<std::string> order;
  std::map<std::string, std::map<InstanceKey, std::map<std::string, double>>> times;
  bool simulated = false;
  for (const TuningRecord& r : log.records) {
    if (r.status != MeasureStatus::kOk || !r.latency_us || r.runoff > 0) continue;
    if (!selected(r.shape, filters)) continue;
    if (!times.count(r.op)) order.push_back(r.op);
    auto [it, inserted] = times[r.op][instance_key(r)].emplace(r.mk.key(), *r.latency_us);
    if (!inserted) it->second = std::min(it->second, *r.latency_us);
    simulated = simulated || r.simulated;
  }

  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  if (!json && !quiet)
    std::printf("tuning log %s: each kernel's time on an instance against the fastest kernel "
                "there, geometric mean over the instances it was timed on (the rounds' times)%s\n",
                path.c_str(), simulated ? " (SIMULATED: a model's numbers, not measurements)" : "");
  for (const std::string& op : order) {
    std::map<std::string, KernelView> kernels;
    for (const auto& [instance, per_kernel] : times[op]) {
      double best = INFINITY;
      for (const auto& [key, us] : per_kernel) best = std::min(best, us);
      for (const auto& [key, us] : per_kernel) {
        KernelView& k = kernels[key];
        k.key = key;
        ++k.instances;
        k.best_on += us == best;
        k.log_ratio_sum += std::log(us / best);
        k.latency_sum += us;
      }
    }
    std::vector<KernelView> ranked;
    for (auto& [key, k] : kernels) ranked.push_back(k);
    std::stable_sort(ranked.begin(), ranked.end(), [](const KernelView& a, const KernelView& b) {
      return a.geomean_vs_best() < b.geomean_vs_best();
    });
    if (json) {
      nlohmann::ordered_json rows = nlohmann::ordered_json::array();
      for (const KernelView& k : ranked)
        rows.push_back({{"kernel", k.key},
                        {"instances", k.instances},
                        {"best_on", k.best_on},
                        {"geomean_vs_best", k.geomean_vs_best()},
                        {"mean_latency_us", k.latency_sum / double(k.instances)}});
      out.push_back({{"op", op}, {"instances", times[op].size()}, {"kernels", rows}});
      continue;
    }
    if (quiet) continue;
    std::printf("\n%s: %zu kernels on %zu instances\n", op.c_str(), ranked.size(),
                times[op].size());
    TextTable table;
    table.add_column("vs best", TextTable::Align::kRight);
    table.add_column("best on", TextTable::Align::kRight);
    table.add_column("instances", TextTable::Align::kRight);
    table.add_column("mean us", TextTable::Align::kRight);
    table.add_column("micro-kernel");
    for (const KernelView& k : ranked)
      table.add_row({fmt::format("{:.3f}x", k.geomean_vs_best()), std::to_string(k.best_on),
                     std::to_string(k.instances), format_sig(k.latency_sum / double(k.instances)),
                     k.key});
    std::printf("%s", table.render("  ").c_str());
  }
  if (json) std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

}  // namespace dietcode::cli
