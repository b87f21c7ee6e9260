#include "space/micro_kernel.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/error.h"

namespace dietcode {

int MicroKernel::get(const std::string& name) const {
  auto it = params.find(name);
  if (it == params.end()) throw std::out_of_range(tmpl + ": no tunable named " + name);
  return it->second;
}

int MicroKernel::get_or(const std::string& name, int fallback) const {
  auto it = params.find(name);
  return it == params.end() ? fallback : it->second;
}

std::string MicroKernel::key() const {
  std::string out = tmpl + ":";
  bool first = true;
  for (const auto& [name, value] : params) {
    if (!first) out += ",";
    first = false;
    out += name + "=" + std::to_string(value);
  }
  return out;
}

nlohmann::json MicroKernel::to_json() const {
  return {{"template", tmpl}, {"params", params}};
}

MicroKernel MicroKernel::from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("template") || !j["template"].is_string() ||
      !j.contains("params") || !j["params"].is_object())
    throw UserError("expected {\"template\": NAME, \"params\": {TUNABLE: INT, ...}}");
  MicroKernel mk;
  mk.tmpl = j["template"].get<std::string>();
  for (const auto& [name, value] : j["params"].items()) {
    if (!value.is_number_integer()) throw UserError("params." + name + ": expected an integer");
    mk.params[name] = value.get<int>();
  }
  return mk;
}

}  // namespace dietcode
