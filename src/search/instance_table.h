// The shape instances of one op as the search weighs them: each instance's share of the op's
// time (its weight, normalised over the op so a weighted mean is a plain dot product) and its
// priority (FLOPs x weight, normalised to a maximum of 1), plus the ways the log names it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "workload/workload.h"

namespace dietcode {

class InstanceTable {
 public:
  InstanceTable(const Workload& workload, const OpSpec& op);

  const OpSpec& op() const { return *op_; }
  size_t size() const { return instances_.size(); }
  const std::vector<Instance>& instances() const { return instances_; }
  const Instance& operator[](size_t i) const { return instances_[i]; }
  const std::vector<GemmShape>& shapes() const { return shapes_; }

  const std::vector<double>& weights() const { return weights_; }        // sum to 1
  const std::vector<double>& priorities() const { return priorities_; }  // max is 1

  // "T=37", "B=2,T=37": for messages and cost-model quality records.
  const std::string& name(size_t i) const { return names_[i]; }
  // The log's "shape" of an instance: variable -> value.
  std::map<std::string, int64_t> shape(size_t i) const;
  // The instance a log record's "shape" names; nullopt for none of this op's.
  std::optional<size_t> find(const std::map<std::string, int64_t>& shape) const;

  // sum_i w_i * latency_i; NaN entries are not allowed (the caller fills gaps first).
  double weighted_mean(const std::vector<double>& latency_us) const;
  // Weighted FLOPs over weighted time: the throughput the assignment achieves, in TFLOP/s.
  double achieved_tflops(const std::vector<double>& latency_us) const;

 private:
  const OpSpec* op_;
  std::vector<Instance> instances_;
  std::vector<GemmShape> shapes_;
  std::vector<double> weights_, priorities_;
  std::vector<std::string> names_;
  std::map<std::vector<int64_t>, size_t> index_;
};

}  // namespace dietcode
