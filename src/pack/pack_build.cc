#include "pack/pack_build.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include "codegen/generated_kernel.h"
#include "common/error.h"
#include "nvrtc/parallel_compile.h"
#include "space/template_space.h"
#include "pack/manifest.h"
#include "pack/pack_target.h"
#include "search/compile_step.h"  // first_error_line

namespace dietcode {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One dispatcher of an op on its way into the pack: the target archs it serves and, when one
// of them is arch-specific (sm_90a), the kernels that run only there.
struct Dispatcher {
  std::vector<std::string> archs;
  std::string specific_arch;  // arch-specific kernels for this arch may be chosen; "" none
  DecisionTree tree;          // leaves are candidate indices until packed
  std::vector<int> kept;      // sample rows the tree was fitted on
};

// One op on its way into the pack.
struct OpState {
  const OpSpec* op = nullptr;
  OpChoices choices;
  bool tuned = false;
  std::map<int, std::string> only_arch;  // candidate -> the one arch it runs on (wgmma: sm_90a)
  std::set<int> excluded;                // candidates that do not compile
  std::map<int, PackKernel> built;       // candidate -> generated and compiled
  std::map<int, std::string> failures;   // candidate -> why it was dropped
  std::vector<Dispatcher> dispatchers;   // [0] serves the newest target arch
  std::vector<int> ids;                  // pack kernel id -> candidate
};

// Candidates a dispatcher may not pick: those that do not compile and those bound to another
// arch. `compiled_too` false leaves the compile failures in (for regret against the best
// measured time, compiled or not).
std::set<int> hidden(const OpState& s, const Dispatcher& d, bool compiled_too = true) {
  std::set<int> out = compiled_too ? s.excluded : std::set<int>{};
  for (const auto& [k, arch] : s.only_arch)
    if (arch != d.specific_arch) out.insert(k);
  return out;
}

// The samples with the hidden candidates' times blanked, and the rows that keep any time.
std::vector<TreeSample> usable_samples(const OpState& s, const std::set<int>& hide,
                                       std::vector<int>* rows) {
  std::vector<TreeSample> out;
  if (rows) rows->clear();
  for (size_t r = 0; r < s.choices.samples.size(); ++r) {
    TreeSample t = s.choices.samples[r];
    bool any = false;
    for (size_t k = 0; k < t.latency_us.size(); ++k) {
      if (hide.count(int(k))) {
        t.latency_us[k] = NAN;
        if (!t.predicted_us.empty()) t.predicted_us[k] = NAN;
      }
      any = any || std::isfinite(t.latency_us[k]) ||
            (!t.predicted_us.empty() && std::isfinite(t.predicted_us[k]));
    }
    if (!any && rows) continue;
    if (rows) rows->push_back(int(r));
    out.push_back(std::move(t));
  }
  return out;
}

// The rows `kept` of the samples as a dispatcher sees them (arch-bound kernels of other archs
// blanked): what its regret is measured on.
std::vector<TreeSample> judged_samples(const OpState& s, const Dispatcher& d) {
  std::vector<TreeSample> all = usable_samples(s, hidden(s, d, false), nullptr), out;
  for (int r : d.kept) out.push_back(all[r]);
  return out;
}

// The samples with the times of the kernels every arch runs taken `margin` longer, for the
// dispatcher of an arch that has kernels of its own (PackBuildOptions::portable_margin).
void handicap_portable_kernels(const OpState& s, const Dispatcher& d, double margin,
                               std::vector<TreeSample>& samples) {
  if (margin <= 0 || d.specific_arch.empty()) return;
  for (TreeSample& t : samples)
    for (size_t k = 0; k < t.latency_us.size(); ++k) {
      if (s.only_arch.count(int(k))) continue;
      t.latency_us[k] *= 1 + margin;  // NAN stays NAN
      if (!t.predicted_us.empty()) t.predicted_us[k] *= 1 + margin;
    }
}

void fit(OpState& s, Dispatcher& d, const TreeFitOptions& options, double portable_margin) {
  if (s.choices.samples.empty()) {
    if (s.excluded.count(0))
      throw UserError("op " + s.op->name + ": its only kernel does not compile: " + s.failures[0]);
    d.tree = DecisionTree::constant(s.op->vars, 0);
    d.kept.clear();
    return;
  }
  std::vector<TreeSample> samples = usable_samples(s, hidden(s, d), &d.kept);
  handicap_portable_kernels(s, d, portable_margin, samples);
  if (samples.empty()) {
    if (s.failures.empty())
      throw UserError("op " + s.op->name + ": no measured kernel runs on " + d.archs[0]);
    throw UserError("op " + s.op->name + ": none of its measured kernels compiles for " +
                    d.archs[0] + "; first: " + s.failures.begin()->second);
  }
  d.tree = fit_decision_tree(s.op->vars, samples, int(s.choices.candidates.size()), options);
  d.tree.set_leaf_stats(judged_samples(s, d));
}

// Which arch a target's dispatcher is keyed by: its own name when it is arch-specific and some
// candidate runs only there, else "" (the dispatcher every portable arch shares).
std::string dispatcher_key(const OpState& s, const std::string& arch) {
  for (const auto& [k, only] : s.only_arch)
    if (only == arch) return arch;
  return "";
}

// Groups the target archs by the kernels they can run; the group of the newest arch (the
// highest compute capability or x86-64 level, arch-specific first) comes first.
std::vector<Dispatcher> plan_dispatchers(const OpState& s, const std::vector<std::string>& archs,
                                         const PackTarget& target) {
  std::vector<Dispatcher> out;
  for (const std::string& arch : archs) {
    std::string key = dispatcher_key(s, arch);
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const Dispatcher& d) { return d.specific_arch == key; });
    if (it == out.end()) it = out.insert(out.end(), Dispatcher{{}, key, {}, {}});
    it->archs.push_back(arch);
  }
  auto newest = [&target](const Dispatcher& d) {
    std::pair<int, bool> best{0, false};
    for (const std::string& arch : d.archs) {
      bool specific = false;
      int cc = target.arch_number(arch, &specific);
      best = std::max(best, {cc, specific});
    }
    return best;
  };
  std::stable_sort(out.begin(), out.end(),
                   [&](const Dispatcher& a, const Dispatcher& b) { return newest(a) > newest(b); });
  return out;
}

// The tuned instances any dispatcher was fitted on, in sample order.
std::vector<int> kept_rows(const OpState& s) {
  std::set<int> rows;
  for (const Dispatcher& d : s.dispatchers) rows.insert(d.kept.begin(), d.kept.end());
  return {rows.begin(), rows.end()};
}

PackInstances pack_instances(const OpState& s) {
  PackInstances t;
  bool predicted = false;
  std::vector<int> kept = kept_rows(s);
  for (int r : kept) predicted = predicted || !s.choices.samples[r].predicted_us.empty();
  for (int r : kept) {
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

// The candidates some dispatcher's tree picks, ascending.
std::vector<int> used_kernels(const OpState& s) {
  std::set<int> out;
  for (const Dispatcher& d : s.dispatchers) {
    std::vector<int> k = d.tree.kernels();
    out.insert(k.begin(), k.end());
  }
  return {out.begin(), out.end()};
}

}  // namespace

PackBuildReport build_pack(const Workload& workload, ChoicesProvider& choices,
                           ChoicesProvider& fallback, Compiler& compiler,
                           const std::filesystem::path& library, const PackBuildOptions& options) {
  auto start = Clock::now();
  auto log = [&](const std::string& line) {
    if (options.log) options.log(line);
  };
  const PackTarget& target = pack_target(options.target);
  const double portable_margin =
      options.portable_margin.value_or(target.portable_kernel_margin());
  if (!(portable_margin >= 0) || !std::isfinite(portable_margin))
    throw std::invalid_argument("portable margin " + std::to_string(portable_margin) +
                                " is not >= 0");
  PackBuildReport report;
  report.portable_margin = portable_margin;
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
    for (size_t k = 0; k < s.choices.candidates.size(); ++k) {
      const MicroKernel& mk = s.choices.candidates[k];
      if (template_space(mk.tmpl).target != options.target)
        throw UserError("op " + s.op->name + ": kernel " + mk.key() + " is for " +
                        to_string(template_space(mk.tmpl).target) + ", not this " +
                        to_string(options.target) + " pack");
      std::string bound = target.bound_arch(mk);
      if (!bound.empty()) s.only_arch[int(k)] = bound;
    }
  }
  // The archs asked for, else those the candidates need (a CPU pack: their ISA levels).
  std::vector<std::string> archs = options.archs;
  if (archs.empty()) {
    std::vector<MicroKernel> all;
    for (const OpState& s : ops)
      all.insert(all.end(), s.choices.candidates.begin(), s.choices.candidates.end());
    archs = target.default_archs(all, options.home_arch);
    // A default arch that some tuned op has no kernel for is left out, with a warning, rather
    // than refused (a short CPU tune may measure only AVX-512 kernels for one op and an AVX2
    // one for another); an arch asked for with --arch still is refused.
    std::vector<std::string> served;
    for (const std::string& arch : archs) {
      const OpState* lacking = nullptr;
      for (const OpState& s : ops) {
        bool runs = s.choices.candidates.empty();  // untuned: the portable default kernel
        for (size_t k = 0; k < s.choices.candidates.size() && !runs; ++k) {
          auto only = s.only_arch.find(int(k));
          runs = only == s.only_arch.end() || only->second == arch;
        }
        if (!runs) {
          lacking = &s;
          break;
        }
      }
      if (lacking)
        report.warnings.push_back(arch + " left out of the pack: op " + lacking->op->name +
                                  " has no measured kernel that runs there (tune longer, or "
                                  "pass --arch to ask for it)");
      else
        served.push_back(arch);
    }
    if (!served.empty()) archs = served;
  }
  for (const std::string& arch : archs) target.arch_number(arch);  // a UserError if foreign
  for (OpState& s : ops) {
    s.dispatchers = plan_dispatchers(s, archs, target);
    for (Dispatcher& d : s.dispatchers) {
      fit(s, d, options.tree, portable_margin);
      // The margin matters only where a dispatcher chooses between both kinds of kernel.
      report.portable_margin_applied =
          report.portable_margin_applied || (portable_margin > 0 && !d.specific_arch.empty());
    }
  }
  report.choices = !any_untuned ? choices.description()
                   : any_tuned  ? choices.description() + "; some ops " + fallback.description()
                                : fallback.description();

  // Compile what the trees use; drop what fails and refit until every leaf compiles.
  constexpr int kMaxCompileRounds = 9;
  ParallelCompileOptions parallel;
  parallel.jobs = options.jobs;
  for (int round = 0;; ++round) {
    std::vector<std::pair<OpState*, int>> todo;
    std::vector<CompileRequest> requests;
    for (OpState& s : ops)
      for (int k : used_kernels(s)) {
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
        requests.push_back(target.compile_request(kernel.generated, mk, archs));
        s.built[k] = std::move(kernel);
        todo.push_back({&s, k});
      }
    if (!requests.empty()) {
      log("compiling " + std::to_string(requests.size()) + " kernel(s) for " +
          std::to_string(archs.size()) + " arch(s)");
      CompileStats stats;
      std::vector<CompileResult> results = compile_all(compiler, requests, parallel, &stats);
      report.kernels_compiled += stats.kernels;
      report.kernels_cached += stats.cache_hits;
      report.compile_seconds += stats.wall_seconds;
      for (size_t i = 0; i < todo.size(); ++i) {
        auto [s, k] = todo[i];
        CompileResult& r = results[i];
        std::string missing;
        for (const std::string& arch : requests[i].archs)
          if (!r.binary(arch) || r.binary(arch)->cubin.empty()) missing = arch;
        if (r.ok && missing.empty()) {
          s->built[k].compiled = std::move(r);
          continue;
        }
        s->failures[k] = s->choices.candidates[k].key() + ": " +
                         (r.ok ? "no CUBIN for " + missing : first_error_line(r.log));
        s->excluded.insert(k);
        s->built.erase(k);
      }
    }
    auto broken = [](const OpState& s, const Dispatcher& d) {
      for (int k : d.tree.kernels())
        if (s.excluded.count(k)) return true;
      return false;
    };
    bool refit = false;
    for (OpState& s : ops)
      for (Dispatcher& d : s.dispatchers) refit = refit || broken(s, d);
    if (!refit) break;
    if (round + 1 >= kMaxCompileRounds) {
      std::string one;  // one compile error to show: as a rule, the one all the others had
      for (const OpState& s : ops)
        if (!s.failures.empty()) one = "op " + s.op->name + ": " + s.failures.rbegin()->second;
      throw UserError("kernels keep failing to compile; giving up after " +
                      std::to_string(kMaxCompileRounds) + " rounds (" + one + ")");
    }
    for (OpState& s : ops)
      for (Dispatcher& d : s.dispatchers)
        if (broken(s, d)) {
          log("op " + s.op->name + ": refitting without kernel(s) that do not compile");
          fit(s, d, options.tree, portable_margin);
        }
  }

  PackRequest request;
  request.workload = &workload;
  request.target = options.target;
  request.archs = archs;
  report.archs = archs;
  request.choices = report.choices;
  request.timing_noise = options.tree.timing_noise;
  request.portable_margin = report.portable_margin_applied ? portable_margin : 0;
  for (OpState& s : ops) {
    OpBuildReport r;
    r.op = s.op->name;
    r.tuned = s.tuned;
    r.candidates = int(s.choices.candidates.size());
    r.instances = int(kept_rows(s).size());
    for (const auto& [k, why] : s.failures) r.dropped.push_back(why);
    PackOp p;
    p.op = s.op;
    // Pack kernel ids: the kernels of the first dispatcher, then those the others add.
    std::map<int, int> new_id;
    for (const Dispatcher& d : s.dispatchers)
      for (int k : d.tree.kernels())
        if (new_id.emplace(k, int(s.ids.size())).second) s.ids.push_back(k);
    for (const Dispatcher& d : s.dispatchers) {
      DispatcherReport dr;
      dr.archs = d.archs;
      dr.kernels = int(d.tree.kernels().size());
      dr.leaves = d.tree.leaf_count();
      dr.depth = d.tree.depth();
      if (!d.kept.empty()) dr.quality = evaluate_tree(d.tree, judged_samples(s, d));
      r.dispatchers.push_back(dr);
      PackDispatcher pd{d.archs, d.tree};
      pd.tree.renumber(new_id);
      p.dispatchers.push_back(std::move(pd));
    }
    for (int k : s.ids) p.kernels.push_back(s.built.at(k));
    p.instances = pack_instances(s);
    r.kernels = int(p.kernels.size());
    report.ops.push_back(r);
    request.ops.push_back(std::move(p));
  }
  report.files = write_pack(request, library, options.write);
  report.total_seconds = seconds_since(start);
  return report;
}

}  // namespace dietcode
