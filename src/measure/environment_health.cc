#include "measure/environment_health.h"

#include <fmt/format.h>

#include <cctype>
#include <regex>

namespace dietcode {

std::string error_signature(const std::string& error) {
  static const std::regex cuda_error("CUDA_ERROR_[A-Z_]+");
  std::smatch match;
  if (std::regex_search(error, match, cuda_error)) return match.str();
  std::string out;
  for (char ch : error)
    if (!std::isdigit(static_cast<unsigned char>(ch))) out += ch;
  return out;
}

void EnvironmentHealth::observe(MeasureStatus status, const std::string& error) {
  if (!broken_.empty()) return;
  if (error.find("CUDA_ERROR_UNSUPPORTED_PTX_VERSION") != std::string::npos) {
    broken_ = "the NVIDIA driver cannot load what NVRTC compiled (" + error +
              "): the driver is older than the CUDA toolkit";
    return;
  }
  if (status == MeasureStatus::kOk) {
    passed_any_ = true;
    return;
  }
  if (passed_any_) return;
  if (status != MeasureStatus::kCompileError && status != MeasureStatus::kLaunchError) {
    streak_ = 0;  // a kernel of its own making: the environment ran it
    return;
  }
  const std::string signature = fmt::format("{}|{}", to_string(status), error_signature(error));
  if (streak_ == 0 || signature != streak_error_) {
    streak_ = 0;
    streak_error_ = signature;
    streak_example_ = error;
  }
  if (++streak_ >= kStreak)
    broken_ = fmt::format(
        "the first {} candidates all failed the same way ({}: {}), which points at the "
        "environment rather than the kernels",
        streak_, to_string(status), streak_example_);
}

}  // namespace dietcode
