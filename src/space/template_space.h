// A template's tunables and constraints as data (the CLBlast way): what values each tunable
// may take, which combinations are legal for a GPU and an operator, and how tile sizes are
// built from factors, so the generic search machinery (space.h) can enumerate, sample and
// mutate any template without knowing it.
//
// Tile extents are products of factor chains, outer level first. For a SIMT GEMM the M extent
// of a block tile is WARPS_M * THREADS_M * TM (warps along M, threads of a warp along M,
// elements per thread): mutating moves a prime factor between two levels of one chain, which
// keeps the tile and changes how it is spread over the hierarchy, or grows one level alone.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "space/gpu_spec.h"
#include "space/micro_kernel.h"
#include "space/target.h"
#include "workload/workload.h"

namespace dietcode {

struct Tunable {
  std::string name;
  std::vector<int> values;  // every legal value, ascending
  int default_value;        // the template compiles with this when the -D is absent
  std::string doc;
};

struct FactorChain {
  std::string extent;               // "BM": what the product is called
  std::vector<std::string> levels;  // outer to inner tunables whose product is the extent
};

// What a candidate is checked against: the GPU, the operator and the largest instance.
struct SpaceContext {
  const GpuSpec& gpu;
  const OpSpec& op;
  GemmShape largest;  // per-dimension maximum over the op's instances
};

struct Constraint {
  std::string description;  // "threads per block <= 1024", shown when a candidate is rejected
  std::function<bool(const MicroKernel&, const SpaceContext&)> holds;
  // The tunables `holds` reads. When listed, enumeration checks the constraint as soon as they
  // are chosen and prunes early; when empty, only complete candidates are checked.
  std::vector<std::string> uses = {};
};

// Resources a micro-kernel asks for at launch, known before compiling.
struct LaunchResources {
  int threads = 0;
  int dynamic_smem_bytes = 0;
};

struct TemplateSpace {
  std::string tmpl;  // "dense_f32": templates/<tmpl>.cu
  Target target = Target::kCuda;  // the machine its kernels run on
  std::vector<Tunable> tunables;
  std::vector<FactorChain> chains;
  std::vector<Constraint> constraints;
  // Unset for targets without GPU launch limits (the CPU): nothing to check before compiling.
  std::function<LaunchResources(const MicroKernel&)> resources;
  // Which ops this template can compute (kind, dtype, layout flags).
  std::function<bool(const OpSpec&)> supports;

  // Hand-picked configurations beside the default, each a few tunables set over the defaults
  // (the rest keep theirs): tiles the vendor libraries are known to run, which a model that
  // starts out knowing nothing would take many rounds to find. Timed in the first rounds.
  std::vector<std::map<std::string, int>> seeds;

  MicroKernel defaults() const;  // every tunable at its default
  // The default, then each seed: what the first rounds time before the model chooses.
  std::vector<MicroKernel> starting_kernels() const;
  const Tunable* find(const std::string& name) const;
  int extent(const MicroKernel& mk, const std::string& extent_name) const;  // product of a chain
};

// Every template dietcode knows, and those of a target that can compute an op.
const std::vector<const TemplateSpace*>& all_template_spaces();
std::vector<const TemplateSpace*> template_spaces_for(const OpSpec& op,
                                                      Target target = Target::kCuda);
const TemplateSpace& template_space(const std::string& tmpl);  // throws UserError if unknown

}  // namespace dietcode
