#include "measure/measure_common.h"

#include <algorithm>

namespace dietcode {

std::string first_line(const std::string& text, const char* fallback) {
  size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return fallback;
  return text.substr(begin, text.find_first_of("\r\n", begin) - begin);
}

std::string archs_of(const CompileResult& compiled) {
  std::string out;
  for (const auto& binary : compiled.binaries) out += (out.empty() ? "" : ", ") + binary.arch;
  return out.empty() ? "none" : out;
}

std::vector<int> pick_check_shapes(const std::vector<GemmShape>& shapes, const LaunchPlan& plan) {
  std::vector<int> picked = {0};
  auto add = [&picked](int i) {
    if (std::find(picked.begin(), picked.end(), i) == picked.end()) picked.push_back(i);
  };
  add(int(shapes.size()) - 1);
  for (size_t i = 0; i < shapes.size(); ++i) {
    bool partial = (plan.tile_m > 0 && shapes[i].M % plan.tile_m != 0) ||
                   (plan.tile_n > 0 && shapes[i].N % plan.tile_n != 0);
    if (partial) {
      add(int(i));
      break;
    }
  }
  return picked;
}

}  // namespace dietcode
