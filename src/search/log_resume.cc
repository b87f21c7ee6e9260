#include "search/log_resume.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <tuple>

#include "common/error.h"

namespace dietcode {

namespace fs = std::filesystem;

ResumeState read_log_for_resume(const std::string& path, const std::string& workload,
                                const DeviceIdentity& device) {
  ResumeState state;
  TuningLog log = read_tuning_log(path, state.notes, /*must_exist=*/false);
  state.lines_read = log.records.size();
  std::map<std::tuple<std::string, std::string, bool>, size_t> other_devices;
  std::map<std::string, size_t> other_workloads;
  size_t other_l2 = 0, other_weights = 0;
  for (TuningRecord& r : log.records) {
    if (r.workload != workload) {
      ++other_workloads[r.workload];
    } else if (r.device != device.name || r.arch != device.arch ||
               r.simulated != device.simulated) {
      ++other_devices[{r.device, r.arch, r.simulated}];
    } else if (r.l2 != device.l2) {
      ++other_l2;
    } else if (r.constant_weights != device.constant_weights) {
      ++other_weights;
    } else {
      state.records.push_back(std::move(r));
    }
  }
  for (const auto& [who, count] : other_devices) {
    const auto& [name, arch, simulated] = who;
    state.notes.push_back(
        fmt::format("{}: ignoring {} record{} measured on {} ({}{}): this run measures on {} ({})",
                    path, count, count == 1 ? "" : "s", name, arch, simulated ? ", simulated" : "",
                    device.name, device.arch));
  }
  if (other_l2)
    state.notes.push_back(fmt::format(
        "{}: ignoring {} record{} timed with the L2 {}: this run times with the L2 {} (--l2)",
        path, other_l2, other_l2 == 1 ? "" : "s", device.l2 == "flush" ? "warm" : "flushed",
        device.l2 == "flush" ? "flushed" : "warm"));
  if (other_weights)
    state.notes.push_back(fmt::format(
        "{}: ignoring {} record{} timed with the weights {}: this run times them {} "
        "(--constant-weights)",
        path, other_weights, other_weights == 1 ? "" : "s",
        device.constant_weights ? "packed in every call" : "constant",
        device.constant_weights ? "constant" : "packed in every call"));
  for (const auto& [name, count] : other_workloads)
    state.notes.push_back(fmt::format("{}: ignoring {} record{} of workload \"{}\"", path, count,
                                      count == 1 ? "" : "s", name));
  return state;
}

std::string move_log_aside(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return "";
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  std::string target = fmt::format("{}.{}.bak", path, stamp);
  for (int n = 1; fs::exists(target, ec); ++n) target = fmt::format("{}.{}.{}.bak", path, stamp, n);
  if (std::rename(path.c_str(), target.c_str()) != 0)
    throw EnvironmentError(fmt::format("{}: cannot move the old log aside to {}: {}", path, target,
                                       std::strerror(errno)));
  return target;
}

}  // namespace dietcode
