#include "search/round_cost.h"

#include <algorithm>
#include <cmath>

namespace dietcode {

void RoundCostFit::add(int kernels, double timed_us, double seconds) {
  if (kernels <= 0 || !(seconds >= 0) || !(timed_us >= 0) || !std::isfinite(timed_us)) return;
  rounds_.push_back({double(kernels), timed_us, seconds});
  refit();
}

void RoundCostFit::refit() {
  double kk = 0, kt = 0, tt = 0, ks = 0, ts = 0, s = 0, k = 0;
  for (const Round& r : rounds_) {
    kk += r.kernels * r.kernels;
    kt += r.kernels * r.timed_us;
    tt += r.timed_us * r.timed_us;
    ks += r.kernels * r.seconds;
    ts += r.timed_us * r.seconds;
    s += r.seconds;
    k += r.kernels;
  }
  // Both terms, where the rounds tell them apart (rounds of different kernel counts or of
  // different kernels' speeds) and the fit is physical: neither cost negative.
  const double det = kk * tt - kt * kt;
  if (rounds_.size() >= 2 && det > 1e-9 * kk * tt) {
    const double a = (ks * tt - ts * kt) / det;
    const double b = (ts * kk - ks * kt) / det;
    if (a >= 0 && b >= 0) {
      a_ = a;
      b_ = b;
      return;
    }
  }
  // Otherwise the one term that explains the rounds better: all of it per kernel (the average
  // the budget went by before), or all of it in the timing.
  const double a_only = s / k;
  const double b_only = tt > 0 ? ts / tt : 0;
  double a_residual = 0, b_residual = 0;
  for (const Round& r : rounds_) {
    a_residual += std::pow(r.seconds - a_only * r.kernels, 2);
    b_residual += std::pow(r.seconds - b_only * r.timed_us, 2);
  }
  if (tt > 0 && b_residual < a_residual) {
    a_ = 0;
    b_ = b_only;
  } else {
    a_ = a_only;
    b_ = 0;
  }
}

double RoundCostFit::seconds(int kernels, double timed_us) const {
  if (!known() || kernels <= 0) return 0;
  return a_ * kernels + b_ * std::max(0.0, timed_us);
}

}  // namespace dietcode
