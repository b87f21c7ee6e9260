// cost_model_replay LOG WORKLOAD [--threads N] [--seeds S] [--per-instance 1] [--peers 0]
// [--peer-weight W] [--own-label 0] [--gpu ID] [--templates 0] [--depth D] [--rounds R] [--eta E]
// [--min-child W] [--lambda L] [--reach-nearest 0|1] [--max-overhead US] [--weights-prepacked 0|1]: the cost model's held-out quality on a
// tuning log, as `tune` reports it at the end of a run, without tuning again. The model learns
// from the workload's other ops as tune's does; with --peers 0, from the op's own kernels
// alone. --max-overhead sets the ceiling of the fitted launch overhead (the machine's:
// MachineSpec::max_launch_overhead_us). --weights-prepacked says whether the model is told that
// dense and conv2d weights came packed once (default: as the log's records say, tune
// --constant-weights).
//
// Not a test: a tool for working on the CPU features and analytic terms (cost/x86_*.cc). A
// tune of BERT-base takes ten minutes and its Spearman moves by several hundredths from seed to
// seed; replaying the measurements of one log through the current model, cross-validated with
// several seeds (each deals the folds anew), shows what a change to the model does on the same
// data in seconds.
//
// The machine figures (FMA peak, bandwidth) are probed on this host, as `tune` does: replay a
// log on the kind of machine it was measured on. A GPU log (--gpu h200) is replayed against
// the GPU's spec in configs/gpus, anywhere.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codegen/generated_kernel.h"
#include "common/error.h"
#include "cost/analytic_fit.h"
#include "search/instance_table.h"
#include "search/kernel_book.h"
#include "search/model_quality.h"
#include "search/op_cost_model.h"
#include "search/tuning_log.h"
#include "space/gpu_spec.h"
#include "space/machine_spec.h"
#include "workload/workload.h"
#include "x86/host_cpu.h"
#include "x86/host_cpu_spec.h"

namespace dietcode {
namespace {

// The op's measurements as the search holds them: one entry per kernel, a latency or a failure
// per instance measured.
void fill_book(const OpSpec& op, const InstanceTable& table,
               const std::vector<const TuningRecord*>& records, KernelBook& book) {
  std::map<std::string, LaunchPlan> plans;
  for (const TuningRecord* r : records) {
    const std::optional<size_t> i = table.find(r->shape);
    if (!i || r->gemm != table[*i].gemm) continue;
    auto plan = plans.find(r->mk.key());
    if (plan == plans.end()) plan = plans.emplace(r->mk.key(), generate_kernel(op, r->mk).plan).first;
    KernelEntry& e = book.add(r->mk, plan->second);
    if (r->registers) KernelBook::note_registers(e, *r->registers);  // as a resumed search has it
    if (r->status == MeasureStatus::kOk && r->latency_us && r->runoff > 0)
      book.add_runoff_latency(e, *i, r->runoff, *r->latency_us);
    else if (r->status == MeasureStatus::kOk && r->latency_us)
      book.add_latency(e, *i, *r->latency_us);
    else
      book.add_failure(e, *i, r->status, r->error);
  }
}

// The held-out quality of a kernel subset: those of one template, or all ("").
struct Replay {
  int seeds = 0;  // cross-validations that ranked something, one per seed
  double spearman = 0, within = 0, regret = 0;
  int shape_seeds = 0;
  double shape_spearman = 0;  // over every kernel, on held-out instances
  size_t kernels = 0;
  std::map<std::string, std::pair<double, int>> per_instance;  // Spearman sum, seeds
  std::map<std::string, std::pair<double, int>> per_shape;  // the same with the shape held out
  std::map<std::string, InstanceQuality> first_split;          // the first seed's, per instance
  TrainingReport fitted;  // of a model that learned every kernel: the analytic knobs it fitted
};

// Adds each ranked instance's Spearman to its sum and count.
void add_spearman(const QualitySummary& q, std::map<std::string, std::pair<double, int>>& sums) {
  for (const InstanceQuality& i : q.per_instance)
    if (std::isfinite(i.spearman)) {
      sums[i.instance].first += i.spearman;
      ++sums[i.instance].second;
    }
}

Replay replay(const OpSpec& op, const InstanceTable& table, const MachineSpec& machine,
              const std::vector<const TuningRecord*>& records, const std::string& tmpl,
              int seeds, const std::vector<PeerBook>& peers, const CostModelParams& params) {
  std::vector<const TuningRecord*> kept;
  for (const TuningRecord* r : records)
    if (tmpl.empty() || r->mk.tmpl == tmpl) kept.push_back(r);
  KernelBook book(table);
  fill_book(op, table, kept, book);
  Replay out;
  out.kernels = book.usable().size();
  OpCostModel whole(table, machine, params);
  for (size_t k : book.usable()) whole.learn(book[k]);
  for (const PeerBook& peer : peers)
    for (size_t k : peer.book->usable()) whole.learn_peer((*peer.book)[k], *peer.table);
  if (whole.model().measurements() > 0) out.fitted = whole.retrain();
  for (int seed = 1; seed <= seeds; ++seed) {
    const CostModelQuality q =
        evaluate_held_out(book, table, machine, params, 0.2, uint64_t(seed), 0.05, peers);
    if (!q.evaluated || !std::isfinite(q.summary.mean_spearman)) continue;
    ++out.seeds;
    if (q.shapes_evaluated && std::isfinite(q.shapes.mean_spearman)) {
      ++out.shape_seeds;
      out.shape_spearman += q.shapes.mean_spearman;
      add_spearman(q.shapes, out.per_shape);
    }
    out.spearman += q.summary.mean_spearman;
    out.within += q.summary.fraction_within;
    out.regret += q.summary.weighted_mean_regret;
    for (const InstanceQuality& i : q.summary.per_instance) out.first_split.emplace(i.instance, i);
    add_spearman(q.summary, out.per_instance);
  }
  if (out.seeds) {
    out.spearman /= out.seeds;
    out.within /= out.seeds;
    out.regret /= out.seeds;
  }
  if (out.shape_seeds) out.shape_spearman /= out.shape_seeds;
  return out;
}

int run(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s LOG WORKLOAD [--threads N] [--seeds S] [--per-instance 1]\n", argv[0]);
    return 2;
  }
  const std::string log_path = argv[1];
  const Workload workload = load_workload(argv[2]);
  int threads = 0, seeds = 5;
  bool per_instance = false, use_peers = true, per_template = true;
  std::string gpu;  // a GPU log: the id of its configs/gpus spec
  double max_overhead_us = -1;  // the ceiling of the fitted launch overhead; < 0: the machine's
  int weights_prepacked = -1;   // < 0: as the log's records say
  CostModelParams params;
  for (int a = 3; a + 1 < argc; a += 2) {
    const std::string flag = argv[a];
    if (flag == "--threads") threads = std::atoi(argv[a + 1]);
    else if (flag == "--seeds") seeds = std::max(1, std::atoi(argv[a + 1]));
    else if (flag == "--per-instance") per_instance = std::atoi(argv[a + 1]) != 0;
    else if (flag == "--peers") use_peers = std::atoi(argv[a + 1]) != 0;
    else if (flag == "--gpu") gpu = argv[a + 1];
    else if (flag == "--peer-weight") params.peer_weight = std::atof(argv[a + 1]);
    else if (flag == "--own-label") params.own_label_for_measured = std::atoi(argv[a + 1]) != 0;
    else if (flag == "--bandwidth") params.own_label_bandwidth = std::atof(argv[a + 1]);
    else if (flag == "--prior-weight") params.own_label_prior_weight = std::atof(argv[a + 1]);
    else if (flag == "--reach-nearest") params.own_label_reach_nearest = std::atoi(argv[a + 1]) != 0;
    else if (flag == "--templates") per_template = std::atoi(argv[a + 1]) != 0;
    // XGBoost's settings, to try others on logs already measured.
    else if (flag == "--depth") params.xgb.max_depth = std::atoi(argv[a + 1]);
    else if (flag == "--rounds") params.xgb.rounds = std::atoi(argv[a + 1]);
    else if (flag == "--eta") params.xgb.eta = std::atof(argv[a + 1]);
    else if (flag == "--min-child") params.xgb.min_child_weight = std::atof(argv[a + 1]);
    else if (flag == "--lambda") params.xgb.lambda = std::atof(argv[a + 1]);
    else if (flag == "--max-overhead") max_overhead_us = std::atof(argv[a + 1]);
    else if (flag == "--weights-prepacked") weights_prepacked = std::atoi(argv[a + 1]);
  }
  MachineSpec machine;
  if (gpu.empty()) {
    const HostCpu cpu = detect_host_cpu();
    if (threads <= 0) threads = cpu.logical_cores;
    machine = MachineSpec::of_cpu(host_cpu_spec(cpu, threads));
  } else {
    machine = MachineSpec(load_gpu_spec(gpu));
  }
  if (max_overhead_us >= 0) machine.max_launch_overhead_us = max_overhead_us;

  std::vector<std::string> warnings;
  const TuningLog log = read_tuning_log(log_path, warnings);
  if (weights_prepacked < 0)
    weights_prepacked = std::any_of(log.records.begin(), log.records.end(),
                                    [](const TuningRecord& r) { return r.constant_weights; });
  machine.cpu.weights_prepacked = weights_prepacked != 0;
  fmt::print("{}: {} records; model quality, 5-fold cross-validated with {} seeds{}\n",
             log_path, log.records.size(), seeds,
             use_peers ? ", learning from the other ops too" : ", each op's own kernels alone");
  fmt::print("{:<8} {:<22} {:>7} {:>9} {:>12} {:>9} {:>14}  {}\n", "op", "kernels of", "kernels",
             "Spearman", "top-1 in 5%", "regret", "new shapes",
             "fitted on every kernel: gamma or packing ns/element, overhead us");
  // Every op's book, for the others to learn from.
  std::vector<std::unique_ptr<InstanceTable>> tables;
  std::vector<std::unique_ptr<KernelBook>> books;
  for (const OpSpec& op : workload.ops) {
    RecordFilter filter;
    filter.workload = workload.name;
    filter.op = op.name;
    tables.push_back(std::make_unique<InstanceTable>(workload, op));
    books.push_back(std::make_unique<KernelBook>(*tables.back()));
    fill_book(op, *tables.back(), filter_records(log, filter), *books.back());
  }
  for (size_t n = 0; n < workload.ops.size(); ++n) {
    const OpSpec& op = workload.ops[n];
    std::vector<PeerBook> peers;
    if (use_peers)
      for (size_t p = 0; p < workload.ops.size(); ++p)
        if (p != n) peers.push_back({books[p].get(), tables[p].get()});
    RecordFilter filter;
    filter.workload = workload.name;
    filter.op = op.name;
    const std::vector<const TuningRecord*> records = filter_records(log, filter);
    if (records.empty()) continue;
    const InstanceTable table(workload, op);
    std::vector<std::string> templates = {""};
    for (const TuningRecord* r : records)
      if (per_template &&
          std::find(templates.begin(), templates.end(), r->mk.tmpl) == templates.end())
        templates.push_back(r->mk.tmpl);
    for (const std::string& tmpl : templates) {
      const Replay r = replay(op, table, machine, records, tmpl, seeds, peers, params);
      if (!r.seeds) continue;
      const AnalyticParams& knobs = r.fitted.analytic;
      fmt::print("{:<8} {:<22} {:>7} {:>9.3f} {:>11.0f}% {:>8.1f}% {:>14.3f}  {:.2f}, {:.2f}\n",
                 op.name, tmpl.empty() ? "every template" : tmpl, r.kernels, r.spearman,
                 100 * r.within, 100 * r.regret, r.shape_spearman,
                 fitted_shape_knob(knobs, machine.target).value, knobs.launch_overhead_us);
      if (per_instance && tmpl.empty())
        for (const auto& [name, sum] : r.per_instance) {
          // What the model picked there in the first seed's folds, against the measured best.
          const InstanceQuality& first = r.first_split.at(name);
          fmt::print("    {:<12} Spearman {:.3f}  picked {} ({:+.1f}% over the best, {})\n", name,
                     sum.first / sum.second, first.picked, 100 * first.regret, first.best);
        }
      if (per_instance && tmpl.empty() && !r.per_shape.empty()) {
        fmt::print("    held out as a shape:");
        for (const auto& [name, sum] : r.per_shape)
          fmt::print(" {} {:.2f}", name, sum.first / sum.second);
        fmt::print("\n");
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace dietcode

int main(int argc, char** argv) {
  try {
    return dietcode::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cost_model_replay: %s\n", e.what());
    return 1;
  }
}
