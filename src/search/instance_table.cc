#include "search/instance_table.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace dietcode {

InstanceTable::InstanceTable(const Workload& workload, const OpSpec& op)
    : op_(&op), instances_(expand_instances(workload, op)) {
  if (instances_.empty()) throw std::logic_error("op \"" + op.name + "\" has no instances");
  double weight_sum = 0, max_priority = 0;
  for (const Instance& inst : instances_) {
    weight_sum += inst.weight;
    max_priority = std::max(max_priority, inst.priority);
  }
  for (size_t i = 0; i < instances_.size(); ++i) {
    const Instance& inst = instances_[i];
    shapes_.push_back(inst.gemm);
    // A workload whose weights are all zero still has a mean: fall back to uniform.
    weights_.push_back(weight_sum > 0 ? inst.weight / weight_sum : 1.0 / instances_.size());
    priorities_.push_back(max_priority > 0 ? inst.priority / max_priority : 1.0);
    std::string name;
    for (size_t v = 0; v < op.vars.size() && v < inst.values.size(); ++v)
      name += (v ? "," : "") + op.vars[v] + "=" + std::to_string(inst.values[v]);
    names_.push_back(name.empty() ? "static" : name);
    index_[inst.values] = i;
  }
}

std::map<std::string, int64_t> InstanceTable::shape(size_t i) const {
  std::map<std::string, int64_t> out;
  for (size_t v = 0; v < op_->vars.size() && v < instances_[i].values.size(); ++v)
    out[op_->vars[v]] = instances_[i].values[v];
  return out;
}

std::optional<size_t> InstanceTable::find(const std::map<std::string, int64_t>& shape) const {
  if (shape.size() != op_->vars.size()) return std::nullopt;
  std::vector<int64_t> values;
  for (const std::string& var : op_->vars) {
    auto it = shape.find(var);
    if (it == shape.end()) return std::nullopt;
    values.push_back(it->second);
  }
  auto it = index_.find(values);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

double InstanceTable::weighted_mean(const std::vector<double>& latency_us) const {
  double sum = 0;
  for (size_t i = 0; i < weights_.size(); ++i) sum += weights_[i] * latency_us[i];
  return sum;
}

double InstanceTable::achieved_tflops(const std::vector<double>& latency_us) const {
  double flops = 0, time = 0;
  for (size_t i = 0; i < weights_.size(); ++i) {
    flops += weights_[i] * instances_[i].flops;
    time += weights_[i] * latency_us[i];
  }
  // FLOP per microsecond is 1e6 FLOP/s; a TFLOP/s is 1e12.
  return time > 0 && std::isfinite(time) ? flops / time * 1e-6 : 0.0;
}

}  // namespace dietcode
