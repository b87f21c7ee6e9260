#include "space/target.h"

namespace dietcode {

const char* to_string(Target target) { return target == Target::kCpu ? "cpu" : "cuda"; }

std::optional<Target> parse_target(const std::string& text) {
  if (text == "cuda") return Target::kCuda;
  if (text == "cpu") return Target::kCpu;
  return std::nullopt;
}

}  // namespace dietcode
