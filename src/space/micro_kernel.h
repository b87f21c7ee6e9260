// A micro-kernel: one template plus a value for each of its tunables. It computes one output
// tile and is launched over as many tiles as a shape needs, so it is independent of any shape.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace dietcode {

struct MicroKernel {
  std::string tmpl;                   // template name, a file stem in templates/: "dense_f32"
  std::map<std::string, int> params;  // tunable -> value, e.g. {"BM", 64}

  int get(const std::string& name) const;  // throws std::out_of_range naming the tunable
  int get_or(const std::string& name, int fallback) const;

  // Canonical identity, stable across runs: "dense_f32:BK=16,BM=64,...". Used as the log's
  // and the cache's key.
  std::string key() const;

  nlohmann::json to_json() const;  // {"template": ..., "params": {...}}
  static MicroKernel from_json(const nlohmann::json& j);  // throws UserError on bad shape

  bool operator==(const MicroKernel& o) const { return tmpl == o.tmpl && params == o.params; }
  bool operator<(const MicroKernel& o) const {
    return tmpl != o.tmpl ? tmpl < o.tmpl : params < o.params;
  }
};

}  // namespace dietcode
