// The data-only parts of TemplateSpace; the registry of real templates lives in
// template_registry.cc.
#include "space/template_space.h"

#include <stdexcept>

namespace dietcode {

MicroKernel TemplateSpace::defaults() const {
  MicroKernel mk;
  mk.tmpl = tmpl;
  for (const Tunable& t : tunables) mk.params[t.name] = t.default_value;
  return mk;
}

std::vector<MicroKernel> TemplateSpace::starting_kernels() const {
  std::vector<MicroKernel> kernels = {defaults()};
  for (const auto& seed : seeds) {
    MicroKernel mk = defaults();
    for (const auto& [name, value] : seed) {
      if (!find(name)) throw std::logic_error(tmpl + ": a seed sets unknown tunable " + name);
      mk.params[name] = value;
    }
    kernels.push_back(mk);
  }
  return kernels;
}

const Tunable* TemplateSpace::find(const std::string& name) const {
  for (const Tunable& t : tunables)
    if (t.name == name) return &t;
  return nullptr;
}

int TemplateSpace::extent(const MicroKernel& mk, const std::string& extent_name) const {
  for (const FactorChain& chain : chains) {
    if (chain.extent != extent_name) continue;
    int product = 1;
    for (const std::string& level : chain.levels) product *= mk.get(level);
    return product;
  }
  // A tile size that is a tunable of its own (no chain) is its own extent.
  if (find(extent_name)) return mk.get(extent_name);
  throw std::out_of_range(tmpl + ": no factor chain or tunable named " + extent_name);
}

}  // namespace dietcode
