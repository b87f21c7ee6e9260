// What `dietcode inspect WORKLOAD --space --gpu ID` shows: for each op and each template that
// can compute it, how many micro-kernels are valid on that GPU and what they are — as JSON
// (every candidate's parameters) or as text (the count, a table of the first few, and the
// range of values each tunable takes among the valid ones).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "space/space.h"
#include "workload/workload.h"

namespace dietcode {

struct OpSpaceReport {
  std::string op;    // the op's name in the workload
  std::string tmpl;  // "" when no template can compute the op
  // Then what it asks for (op_computation.h), as the text report names it.
  std::string computation;
  GemmShape largest;
  double unconstrained = 0;  // combinations before constraints
  Enumeration valid;
  std::vector<LaunchResources> resources;  // parallel to valid.candidates
};

// One template's space for one op (context.op) on one GPU (context.gpu).
OpSpaceReport report_op_space(const TemplateSpace& space, const SpaceContext& context,
                              const SearchLimits& limits = {});

// Every op of a workload, each with every template that supports it.
std::vector<OpSpaceReport> report_workload_space(const Workload& workload, const GpuSpec& gpu,
                                                 const SearchLimits& limits = {});

// The per-dimension maximum of an op's GEMM over all its instances: what tiles are bounded by.
GemmShape largest_shape(const Workload& workload, const OpSpec& op);

// {"op", "template", "largest": {"batch", "M", "N", "K"}, "unconstrained", "count",
//  "complete", "candidates": [{TUNABLE: value, ..., "threads", "smem_bytes"}, ...]}
nlohmann::json space_report_json(const OpSpaceReport& report);
nlohmann::json space_report_json(const std::vector<OpSpaceReport>& reports);

// A heading with the count, a table of the first `rows` candidates, and per tunable the values
// the valid candidates use.
std::string render_space_report(const OpSpaceReport& report, size_t rows = 10);
std::string render_space_report(const std::vector<OpSpaceReport>& reports, size_t rows = 10);

}  // namespace dietcode
