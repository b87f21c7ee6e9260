// Fitting the analytic term's two knobs to the measurements: the launch overhead, and the
// target's shape knob, which f_occ depends on (on a GPU the underfilled-SM gamma, on a CPU what
// packing an element costs a thread): the pair under which each kernel's implied f_MK (its log
// label) varies least from shape to shape, found on a coarse grid and then a finer one around
// its optimum.
//
// Why a file of its own: the grid has hundreds of pairs and each is scored over every
// measurement of the op and of its peers, tens of thousands, with a pow and a log each; that
// was three quarters of a tune's time on the CPU. A label splits into a part fixed per
// measurement, a part that depends on the shape knob alone (f_occ) and a part that depends on
// the overhead alone (the compute time left), so each part is computed once per grid value and
// a pair costs additions only.
#pragma once

#include <cstddef>
#include <vector>

#include "cost/analytic.h"

namespace dietcode {

struct FitMeasurement {
  size_t kernel = 0;  // which kernel measured it: labels are compared within a kernel only
  const AnalyticTerms* terms = nullptr;  // of the measured shape, under any knobs
  double latency_us = 0;
  double weight = 1;
};

struct AnalyticFit {
  AnalyticParams params;
  double spread = 0;   // pooled within-kernel weighted variance of the log labels at params
  bool fitted = false;  // false: no kernel has two usable measurements; params are the start
};

// The fitted pair, other knobs as in `start`; the rows' target (all alike) names the shape
// knob. Gamma stays in [0, 1], the packing cost in [0, 1.5] ns, the overhead in
// [0, max_overhead_us]; overhead_step_us is the coarse grid's step (the fine grid's is a fifth).
// threads: how many score the grid (0: the host's cores, up to 16; fewer than 4096 rows are
// always scored on the calling thread). The result does not depend on it.
AnalyticFit fit_analytic(const std::vector<FitMeasurement>& rows, const AnalyticParams& start,
                         double max_overhead_us, double overhead_step_us, int threads = 0);

// The knob fit_analytic fits beside the overhead on `target` ("underfilled_sm_gamma" on a GPU,
// "pack_ns_per_element" on a CPU) and its value in `params`: for logs and tools that report it.
struct FittedShapeKnob {
  const char* name;
  double value;
};
FittedShapeKnob fitted_shape_knob(const AnalyticParams& params, Target target);

// What fit_analytic minimises, computed directly from the labels (for tests): the pooled
// within-kernel weighted variance of log(f_MK / peak) under p; +inf when no kernel has two
// usable measurements.
double label_spread(const std::vector<FitMeasurement>& rows, const AnalyticParams& p);

}  // namespace dietcode
