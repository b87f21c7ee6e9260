// Tells a broken environment from bad kernels by what the candidates have in common.
//
// A candidate that fails to load or launch is normally its own fault and is recorded and
// skipped. But when a driver is older than the toolkit that built the CUBINs, or a GPU is in
// a bad state, *every* candidate fails, and the same way: logging hundreds of compile_errors
// and finishing "successfully" with no kernel would hide the real problem for the length of a
// tuning run. EnvironmentHealth watches the outcomes in order and says the environment is
// broken when
//   - a failure can only be the environment's: the driver cannot read the PTX or CUBIN
//     version at all (CUDA_ERROR_UNSUPPORTED_PTX_VERSION), or
//   - no candidate has passed yet and the first kStreak ones all failed to load or launch
//     (compile_error or launch_error, the statuses a module or a launch produces) with the
//     same error once the parts that name the kernel are taken out.
// Wrong results and timeouts never count: those are the kernels' own. Once any candidate has
// passed, the environment has been shown to work and only the first rule applies.
#pragma once

#include <string>

#include "measure/measurer.h"

namespace dietcode {

class EnvironmentHealth {
 public:
  static constexpr int kStreak = 12;

  void observe(MeasureStatus status, const std::string& error);
  // "" while the environment looks fine; else one line saying what every candidate got.
  const std::string& broken() const { return broken_; }

 private:
  bool passed_any_ = false;
  int streak_ = 0;
  std::string streak_error_;  // the normalised error the streak shares
  std::string streak_example_;
  std::string broken_;
};

// The part of an error that does not depend on the kernel: the CUDA error name when it has
// one (CUDA_ERROR_INVALID_IMAGE), else the text with digits removed.
std::string error_signature(const std::string& error);

}  // namespace dietcode
