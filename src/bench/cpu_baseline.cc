// The CPU baselines by name (cpu_baseline.h); each lives in its own file.
#include "bench/cpu_baseline.h"

#include "bench/cpu_baseline_common.h"

namespace dietcode {

const std::vector<std::string>& cpu_baseline_names() {
  static const std::vector<std::string> names = {"onednn", "openblas"};
  return names;
}

std::unique_ptr<CpuBaseline> make_cpu_baseline(const std::string& name, int threads,
                                               bool constant_weights) {
  if (threads <= 0) threads = default_cpu_threads();
  if (name == "onednn") return make_onednn_baseline(threads, constant_weights);
  if (name == "openblas") return make_openblas_baseline(threads);
  throw std::invalid_argument("no CPU baseline named \"" + name + "\" (onednn, openblas)");
}

}  // namespace dietcode
