#include "measure/measurer.h"

namespace dietcode {

namespace {

struct StatusName {
  MeasureStatus status;
  const char* name;
};

// One table serves both directions, so a new status cannot get a spelling in only one.
constexpr StatusName kStatusNames[] = {
    {MeasureStatus::kOk, "ok"},
    {MeasureStatus::kCompileError, "compile_error"},
    {MeasureStatus::kLaunchError, "launch_error"},
    {MeasureStatus::kWrongResult, "wrong_result"},
    {MeasureStatus::kTimeout, "timeout"},
    {MeasureStatus::kDeviceLimitsExceeded, "device_limits_exceeded"},
};

}  // namespace

const char* to_string(MeasureStatus status) {
  for (const auto& entry : kStatusNames)
    if (entry.status == status) return entry.name;
  return "unknown";
}

std::optional<MeasureStatus> parse_measure_status(const std::string& text) {
  for (const auto& entry : kStatusNames)
    if (text == entry.name) return entry.status;
  return std::nullopt;
}

}  // namespace dietcode
