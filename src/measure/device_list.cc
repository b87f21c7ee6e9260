#include "measure/device_list.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "common/error.h"

namespace dietcode {

namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, separator)) out.push_back(item);
  if (!text.empty() && text.back() == separator) out.push_back("");
  return out;
}

bool parse_int(const std::string& text, int& out) {
  if (text.empty() || text.size() > 6 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  out = std::stoi(text);
  return true;
}

bool parse_number(const std::string& text, double& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && out >= 0 && out < 1e7;
}

}  // namespace

std::vector<int> parse_device_list(const std::string& text, int count) {
  std::vector<int> ordinals;
  if (text == "all") {
    for (int d = 0; d < count; ++d) ordinals.push_back(d);
    if (ordinals.empty()) throw UserError("this host has no GPU");
    return ordinals;
  }
  for (const std::string& item : split(text, ',')) {
    int ordinal = 0;
    if (!parse_int(item, ordinal))
      throw UserError(fmt::format(
          "expected \"all\" or GPU ordinals separated by commas (such as 0,1,3), got \"{}\"",
          text));
    if (std::find(ordinals.begin(), ordinals.end(), ordinal) != ordinals.end())
      throw UserError(fmt::format("GPU {} is listed twice", ordinal));
    ordinals.push_back(ordinal);
  }
  if (ordinals.empty())
    throw UserError(fmt::format(
        "expected \"all\" or GPU ordinals separated by commas (such as 0,1,3), got \"{}\"", text));
  for (int ordinal : ordinals)
    if (ordinal >= count)
      throw UserError(fmt::format("no GPU {}: this host has {}", ordinal,
                                  count == 0 ? std::string("no GPU")
                                  : count == 1
                                      ? std::string("1 GPU (0)")
                                      : fmt::format("{} GPUs (0 to {})", count, count - 1)));
  return ordinals;
}

std::string gpu_model_text(const GpuSpec& gpu) {
  return fmt::format("{}, {}, {} SMs", gpu.name, gpu.arch(), gpu.sms);
}

void check_same_model(const std::vector<std::pair<int, GpuSpec>>& gpus) {
  for (size_t i = 1; i < gpus.size(); ++i) {
    const GpuSpec& a = gpus[0].second;
    const GpuSpec& b = gpus[i].second;
    if (a.name == b.name && a.cc_major == b.cc_major && a.cc_minor == b.cc_minor && a.sms == b.sms)
      continue;
    throw UserError(fmt::format(
        "GPU {} ({}) and GPU {} ({}) are different GPU models; a run tunes one model: start one "
        "run per model, each with its own log",
        gpus[0].first, gpu_model_text(a), gpus[i].first, gpu_model_text(b)));
  }
}

std::vector<SimulatedGpuSetup> simulated_host(const std::string& gpu, const char* description) {
  if (!description) return std::vector<SimulatedGpuSetup>(kSimulatedHostGpus, {gpu});
  std::vector<SimulatedGpuSetup> host;
  const std::vector<std::string> entries = split(description, ';');
  for (size_t d = 0; d < entries.size(); ++d) {
    SimulatedGpuSetup setup{gpu};
    for (const std::string& item : split(entries[d], ',')) {
      if (item.empty()) continue;
      const size_t eq = item.find('=');
      const std::string key = item.substr(0, eq);
      const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
      double ms = 0;
      bool ok = !value.empty();
      if (ok && key == "gpu") {
        setup.gpu = value;
      } else if (ok && key == "delay_ms" && (ok = parse_number(value, ms))) {
        setup.delay_seconds = ms / 1000;
      } else if (ok && key == "fail_after") {
        ok = parse_int(value, setup.fail_after_calls);
      } else {
        ok = false;
      }
      if (!ok)
        throw UserError(fmt::format(
            "{}: GPU {}: cannot read \"{}\" (expected gpu=ID, delay_ms=MS or fail_after=N)",
            kSimulatedGpusVariable, d, item));
    }
    host.push_back(setup);
  }
  if (host.empty()) throw UserError(fmt::format("{}: describes no GPU", kSimulatedGpusVariable));
  return host;
}

}  // namespace dietcode
