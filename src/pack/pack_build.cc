#include "pack/pack_build.h"

#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include "codegen/generated_kernel.h"
#include "common/error.h"
#include "nvrtc/parallel_compile.h"

namespace dietcode {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One op on its way into the pack.
struct OpState {
  const OpSpec* op = nullptr;
  OpChoices choices;
  bool tuned = false;
  std::set<int> excluded;               // candidates that do not compile
  std::map<int, PackKernel> built;      // candidate -> generated and compiled
  std::map<int, std::string> failures;  // candidate -> why it was dropped
  DecisionTree tree;                    // leaves are candidate indices until packed
  std::vector<int> kept;                // sample rows the tree was fitted on
  std::vector<int> ids;                 // pack kernel id -> candidate
};

// The samples with the excluded candidates' times hidden, and the rows that keep any time.
std::vector<TreeSample> usable_samples(const OpState& s, std::vector<int>* rows) {
  std::vector<TreeSample> out;
  rows->clear();
  for (size_t r = 0; r < s.choices.samples.size(); ++r) {
    TreeSample t = s.choices.samples[r];
    bool any = false;
    for (size_t k = 0; k < t.latency_us.size(); ++k) {
      if (s.excluded.count(int(k))) {
        t.latency_us[k] = NAN;
        if (!t.predicted_us.empty()) t.predicted_us[k] = NAN;
      }
      any = any || std::isfinite(t.latency_us[k]) ||
            (!t.predicted_us.empty() && std::isfinite(t.predicted_us[k]));
    }
    if (!any) continue;
    rows->push_back(int(r));
    out.push_back(std::move(t));
  }
  return out;
}

void fit(OpState& s, const TreeFitOptions& options) {
  if (s.choices.samples.empty()) {
    if (s.excluded.count(0))
      throw UserError("op " + s.op->name + ": its only kernel does not compile: " + s.failures[0]);
    s.tree = DecisionTree::constant(s.op->vars, 0);
    s.kept.clear();
    return;
  }
  std::vector<TreeSample> samples = usable_samples(s, &s.kept);
  if (samples.empty())
    throw UserError("op " + s.op->name + ": none of its measured kernels compiles; first: " +
                    s.failures.begin()->second);
  s.tree = fit_decision_tree(s.op->vars, samples, int(s.choices.candidates.size()), options);
  // Regret against the best time measured on each instance, compiled or not.
  std::vector<TreeSample> original;
  for (int r : s.kept) original.push_back(s.choices.samples[r]);
  s.tree.set_leaf_stats(original);
}

CompileRequest compile_request(const GeneratedKernel& g, const MicroKernel& mk,
                               const std::vector<std::string>& archs) {
  CompileRequest r;
  r.name = mk.tmpl + ".cu";
  r.source = g.source;
  r.options = g.options;
  r.archs = archs;
  r.want_ptx = true;
  if (!g.arch_suffix.empty()) {
    // An arch-specific kernel (wgmma: sm_90a) runs on exactly one compute capability and has
    // no PTX fallback: build it for the requested archs of that capability only. With none,
    // the compile fails and the build drops the kernel and refits the tree without it.
    r.archs.clear();
    for (const std::string& arch : archs)
      if (arch == "sm_90" || arch == "sm_90a") r.archs.push_back("sm_90" + g.arch_suffix);
    r.want_ptx = false;
  }
  return r;
}

std::string first_line(const std::string& text) {
  size_t start = text.find_first_not_of("\n ");
  if (start == std::string::npos) return "no compiler log";
  return text.substr(start, text.find('\n', start) - start);
}

InstanceTable instance_table(const OpState& s) {
  InstanceTable t;
  bool predicted = false;
  for (int r : s.kept) predicted = predicted || !s.choices.samples[r].predicted_us.empty();
  for (int r : s.kept) {
    const TreeSample& sample = s.choices.samples[r];
    double best = INFINITY;
    for (double v : sample.latency_us)
      if (std::isfinite(v)) best = std::min(best, v);
    t.values.push_back(sample.values);
    t.weight.push_back(sample.weight);
    t.best_us.push_back(best);
    std::vector<double> row, guess;
    for (int id : s.ids) {
      row.push_back(sample.latency_us[id]);
      guess.push_back(sample.predicted_us.empty() ? NAN : sample.predicted_us[id]);
    }
    t.latency_us.push_back(row);
    if (predicted) t.predicted_us.push_back(guess);
  }
  return t;
}

}  // namespace

PackBuildReport build_pack(const Workload& workload, ChoicesProvider& choices,
                           ChoicesProvider& fallback, Compiler& compiler,
                           const std::filesystem::path& library, const PackBuildOptions& options) {
  auto start = Clock::now();
  auto log = [&](const std::string& line) {
    if (options.log) options.log(line);
  };
  PackBuildReport report;
  std::vector<OpState> ops(workload.ops.size());
  bool any_tuned = false, any_untuned = false;
  for (size_t i = 0; i < workload.ops.size(); ++i) {
    OpState& s = ops[i];
    s.op = &workload.ops[i];
    s.choices = choices.choices(workload, *s.op);
    s.tuned = !s.choices.candidates.empty() && !s.choices.samples.empty();
    if (!s.tuned) {
      s.choices = fallback.choices(workload, *s.op);
      if (&choices != &fallback)
        log("op " + s.op->name + ": no timings, so " + fallback.description() + ": one kernel");
    }
    any_tuned = any_tuned || s.tuned;
    any_untuned = any_untuned || !s.tuned;
    fit(s, options.tree);
  }
  report.choices = !any_untuned ? choices.description()
                   : any_tuned  ? choices.description() + "; some ops " + fallback.description()
                                : fallback.description();

  // Compile what the trees use; drop what fails and refit until every leaf compiles.
  ParallelCompileOptions parallel;
  parallel.jobs = options.jobs;
  for (int round = 0;; ++round) {
    std::vector<std::pair<OpState*, int>> todo;
    std::vector<CompileRequest> requests;
    for (OpState& s : ops)
      for (int k : s.tree.kernels()) {
        if (s.built.count(k)) continue;
        const MicroKernel& mk = s.choices.candidates[k];
        PackKernel kernel{mk, {}, {}};
        try {
          kernel.generated = generate_kernel(*s.op, mk);
        } catch (const UserError& e) {
          s.failures[k] = mk.key() + ": " + e.what();
          s.excluded.insert(k);
          continue;
        }
        requests.push_back(compile_request(kernel.generated, mk, options.archs));
        s.built[k] = std::move(kernel);
        todo.push_back({&s, k});
      }
    if (!requests.empty()) {
      log("compiling " + std::to_string(requests.size()) + " kernel(s) for " +
          std::to_string(options.archs.size()) + " arch(s)");
      CompileStats stats;
      std::vector<CompileResult> results = compile_all(compiler, requests, parallel, &stats);
      report.kernels_compiled += stats.kernels;
      report.compile_seconds += stats.wall_seconds;
      for (size_t i = 0; i < todo.size(); ++i) {
        auto [s, k] = todo[i];
        CompileResult& r = results[i];
        std::string missing;
        for (const std::string& arch : options.archs)
          if (!r.binary(arch) || r.binary(arch)->cubin.empty()) missing = arch;
        if (r.ok && missing.empty()) {
          s->built[k].compiled = std::move(r);
          continue;
        }
        s->failures[k] = s->choices.candidates[k].key() + ": " +
                         (r.ok ? "no CUBIN for " + missing : first_line(r.log));
        s->excluded.insert(k);
        s->built.erase(k);
      }
    }
    bool refit = false;
    for (OpState& s : ops)
      for (int k : s.tree.kernels())
        if (s.excluded.count(k)) refit = true;
    if (!refit) break;
    if (round >= 8) throw UserError("kernels keep failing to compile; giving up");
    for (OpState& s : ops) {
      bool broken = false;
      for (int k : s.tree.kernels()) broken = broken || s.excluded.count(k);
      if (broken) {
        log("op " + s.op->name + ": refitting without kernel(s) that do not compile");
        fit(s, options.tree);
      }
    }
  }

  PackRequest request;
  request.workload = &workload;
  request.archs = options.archs;
  request.choices = report.choices;
  for (OpState& s : ops) {
    OpBuildReport r;
    r.op = s.op->name;
    r.tuned = s.tuned;
    r.candidates = int(s.choices.candidates.size());
    r.instances = int(s.kept.size());
    if (!s.kept.empty()) {
      std::vector<TreeSample> original;
      for (int row : s.kept) original.push_back(s.choices.samples[row]);
      r.quality = evaluate_tree(s.tree, original);
    }
    for (const auto& [k, why] : s.failures) r.dropped.push_back(why);
    PackOp p;
    p.op = s.op;
    p.tree = s.tree;
    s.ids = p.tree.compact();
    for (int k : s.ids) p.kernels.push_back(s.built.at(k));
    p.instances = instance_table(s);
    r.kernels = int(p.kernels.size());
    r.leaves = p.tree.leaf_count();
    r.depth = p.tree.depth();
    report.ops.push_back(r);
    request.ops.push_back(std::move(p));
  }
  report.files = write_pack(request, library, options.write);
  report.total_seconds = seconds_since(start);
  return report;
}

}  // namespace dietcode
