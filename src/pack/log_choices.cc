// Choices from a tuning log: every micro-kernel measured for an op is a candidate, with its
// latest time on each instance of the workload. Where a runoff timed an instance, its times
// are settled as the search settles them (search/runoff.h): the latest runoff's finalists by
// their runoff times, every other kernel by its time scaled as the finalists' moved.
//
// A kernel that ever failed on the op (compile_error, launch_error, wrong_result,
// device_limits_exceeded) is dropped altogether: the tree may send shapes it was never tried
// on to any kernel, so only kernels that never misbehaved may ship. A timeout only leaves that
// instance's time unknown. Records for shapes outside the workload, for other workloads, or
// whose GEMM no longer matches the op's definition (the workload was edited) are ignored.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "common/error.h"
#include "pack/choices.h"
#include "pack/log_records.h"
#include "search/runoff.h"
#include "space/template_space.h"

namespace dietcode {
namespace {

bool disqualifies(const std::string& status) { return status != "ok" && status != "timeout"; }

std::string join(const std::set<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Every instance's (ordinary, runoff) time pairs: per (op, shape), its latest runoff's
// finalists (InstanceRunoff, the rule choices() settles by) with the latest ordinary time of
// the same kernel. Kernels are numbered by key across the whole log, as InstanceRunoff wants.
std::optional<TimingNoise> measure_timing_noise(const std::vector<LogMeasurement>& records) {
  struct Instance {
    std::map<size_t, double> ordinary;  // kernel -> latest
    InstanceRunoff runoff;
  };
  std::map<std::string, size_t> kernel_index;
  std::map<std::pair<std::string, std::map<std::string, int64_t>>, Instance> instances;
  for (const LogMeasurement& m : records) {
    if (m.status != "ok") continue;
    Instance& in = instances[{m.op, m.shape}];
    const size_t kernel = kernel_index.emplace(m.mk.key(), kernel_index.size()).first->second;
    if (m.runoff == 0)
      in.ordinary[kernel] = m.latency_us;
    else
      in.runoff.add(kernel, m.runoff, m.latency_us);
  }
  std::vector<std::vector<std::pair<double, double>>> pairs;
  for (const auto& [id, in] : instances) {
    std::vector<std::pair<double, double>> list;
    for (const auto& [kernel, us] : in.runoff.times())
      if (auto o = in.ordinary.find(kernel); o != in.ordinary.end()) list.emplace_back(o->second, us);
    if (!list.empty()) pairs.push_back(std::move(list));
  }
  return runoff_timing_noise(pairs);
}

class LogChoices : public ChoicesProvider {
 public:
  LogChoices(std::string path, std::vector<LogMeasurement> records, std::string description,
             std::optional<Target> target, std::vector<std::string>& warnings)
      : path_(std::move(path)),
        records_(std::move(records)),
        description_(std::move(description)),
        target_(target),
        warnings_(warnings),
        timing_noise_(measure_timing_noise(records_)) {}

  std::string description() const override { return description_; }
  std::optional<Target> target() const override { return target_; }
  std::optional<TimingNoise> timing_noise() const override { return timing_noise_; }

  OpChoices choices(const Workload& workload, const OpSpec& op) override {
    std::vector<Instance> instances = expand_instances(workload, op);
    std::map<std::vector<int64_t>, size_t> index;
    for (size_t i = 0; i < instances.size(); ++i) index[instances[i].values] = i;

    std::map<std::string, MicroKernel> kernels;             // by key: a stable order
    std::map<std::string, std::map<size_t, double>> times;  // key -> instance -> latest us
    struct RunoffTime {
      std::string key;
      int runoff;
      double us;
    };
    std::map<size_t, std::vector<RunoffTime>> runoff_times;  // instance -> in log order
    std::set<std::string> failed;
    int outside = 0, stale = 0;
    for (const LogMeasurement& m : records_) {
      if (m.op != op.name || (!m.workload.empty() && m.workload != workload.name)) continue;
      std::vector<int64_t> values;
      for (const std::string& var : op.vars) {
        auto it = m.shape.find(var);
        if (it == m.shape.end()) break;
        values.push_back(it->second);
      }
      auto at = index.find(values);
      if (values.size() != op.vars.size() || m.shape.size() != op.vars.size() ||
          at == index.end()) {
        ++outside;
        continue;
      }
      const GemmShape& g = instances[at->second].gemm;
      if (m.has_gemm &&
          (m.gemm[0] != g.batch || m.gemm[1] != g.M || m.gemm[2] != g.N || m.gemm[3] != g.K)) {
        ++stale;
        continue;
      }
      std::string key = m.mk.key();
      kernels.emplace(key, m.mk);
      if (m.status == "ok" && m.runoff > 0)
        runoff_times[at->second].push_back({key, m.runoff, m.latency_us});
      else if (m.status == "ok")
        times[key][at->second] = m.latency_us;
      if (disqualifies(m.status)) failed.insert(key);
    }
    if (outside)
      warnings_.push_back(path_ + ": op " + op.name + ": " + std::to_string(outside) +
                          " record(s) for shapes that are not instances of the workload ignored");
    if (stale)
      warnings_.push_back(path_ + ": op " + op.name + ": " + std::to_string(stale) +
                          " record(s) measured for another definition of the op ignored");

    OpChoices out;
    std::vector<std::string> keys;
    std::set<std::string> runoff_timed;
    for (const auto& [i, list] : runoff_times)
      for (const RunoffTime& t : list) runoff_timed.insert(t.key);
    for (const auto& [key, mk] : kernels)
      if (!failed.count(key) && (times.count(key) || runoff_timed.count(key))) {
        keys.push_back(key);
        out.candidates.push_back(mk);
      }
    std::map<std::string, size_t> position;
    for (size_t k = 0; k < keys.size(); ++k) position[keys[k]] = k;
    for (size_t i = 0; i < instances.size(); ++i) {
      TreeSample s;
      s.values = instances[i].values;
      s.weight = instances[i].weight;
      for (const std::string& key : keys) {
        auto t = times[key].find(i);
        s.latency_us.push_back(t == times[key].end() ? NAN : t->second);
      }
      if (auto r = runoff_times.find(i); r != runoff_times.end()) {
        InstanceRunoff runoff;
        for (const RunoffTime& t : r->second)
          if (auto k = position.find(t.key); k != position.end()) runoff.add(k->second, t.runoff, t.us);
        s.latency_us = settle_runoff(s.latency_us, runoff.as_vector(keys.size()));
      }
      const bool any = std::any_of(s.latency_us.begin(), s.latency_us.end(),
                                   [](double us) { return !std::isnan(us); });
      if (any) out.samples.push_back(std::move(s));
    }
    return out;
  }

 private:
  std::string path_;
  std::vector<LogMeasurement> records_;
  std::string description_;
  std::optional<Target> target_;
  std::vector<std::string>& warnings_;
  std::optional<TimingNoise> timing_noise_;
};

// The target of a record's template; nullopt for a template this dietcode does not know.
std::optional<Target> target_of(const LogMeasurement& m) {
  for (const TemplateSpace* space : all_template_spaces())
    if (space->tmpl == m.mk.tmpl) return space->target;
  return std::nullopt;
}

}  // namespace

std::unique_ptr<ChoicesProvider> make_log_choices(const Workload& workload,
                                                  const std::string& log_path, bool allow_simulated,
                                                  std::vector<std::string>& warnings,
                                                  std::optional<Target> target) {
  std::vector<LogMeasurement> all = read_log_measurements(log_path, warnings);
  std::vector<LogMeasurement> mine;
  int simulated = 0, other_target = 0;
  std::set<std::string> devices;
  std::set<Target> targets;
  for (LogMeasurement& m : all) {
    if ((!m.workload.empty() && m.workload != workload.name) || !workload.find_op(m.op)) continue;
    std::optional<Target> of = target_of(m);
    if (target && of && *of != *target) {
      ++other_target;
      continue;
    }
    if (of) targets.insert(*of);
    simulated += m.simulated;
    if (!m.device.empty()) devices.insert(m.device + (m.arch.empty() ? "" : " (" + m.arch + ")"));
    mine.push_back(std::move(m));
  }
  if (simulated && !allow_simulated)
    throw UserError(log_path + ": " + std::to_string(simulated) +
                    " measurement(s) come from a simulated device (dietcode tune --simulate), "
                    "a test double, not a GPU; pass --allow-simulated to build from them anyway");
  if (other_target)
    warnings.push_back(log_path + ": " + std::to_string(other_target) + " record(s) of " +
                       (*target == Target::kCpu ? "GPU" : "CPU") + " templates ignored for this " +
                       to_string(*target) + " pack");
  if (!target && targets.size() > 1)
    throw UserError(log_path + ": holds measurements of both GPU (cuda) and CPU templates for " +
                    workload.name + "; pick one with --target cuda or --target cpu");
  if (!target && targets.size() == 1) target = *targets.begin();
  std::string description =
      simulated ? "simulated (a test double's numbers, not GPU measurements)" : "measured";
  if (!devices.empty()) description += " on " + join(devices);
  return std::make_unique<LogChoices>(log_path, std::move(mine), description, target, warnings);
}

}  // namespace dietcode
