// The workload-level half of the space report: expand each op's instances to find the
// largest shape, and ask the registry which templates can compute it.
#include <algorithm>

#include "space/op_computation.h"
#include "space/space_report.h"
#include "space/template_space.h"

namespace dietcode {

GemmShape largest_shape(const Workload& workload, const OpSpec& op) {
  GemmShape out{0, 0, 0, 0};
  for (const Instance& instance : expand_instances(workload, op)) {
    out.batch = std::max(out.batch, instance.gemm.batch);
    out.M = std::max(out.M, instance.gemm.M);
    out.N = std::max(out.N, instance.gemm.N);
    out.K = std::max(out.K, instance.gemm.K);
  }
  return out;
}

std::vector<OpSpaceReport> report_workload_space(const Workload& workload, const GpuSpec& gpu,
                                                 const SearchLimits& limits) {
  std::vector<OpSpaceReport> out;
  for (const OpSpec& op : workload.ops) {
    GemmShape largest = largest_shape(workload, op);
    std::vector<const TemplateSpace*> spaces = template_spaces_for(op);
    if (spaces.empty()) {
      OpSpaceReport none;
      none.op = op.name;
      none.computation = op_computation_text(op);
      none.largest = largest;
      out.push_back(std::move(none));
    }
    for (const TemplateSpace* space : spaces)
      out.push_back(report_op_space(*space, SpaceContext{gpu, op, largest}, limits));
  }
  return out;
}

}  // namespace dietcode
