// Compiles a pack's kernel units (pack_source.h: CPU kernels, each for its own ISA level) in
// the pack's build folder into objects the pack links, each keeping only its entries global.
//
// Why not plain objects: units of different levels instantiate the same inline code (the
// kernel templates' helpers, std::min ...) compiled for different ISAs; the linker would keep
// one copy of each for all of them, and an AVX2 kernel could end up calling AVX-512 code. So
// each object is partially linked with its COMDAT groups resolved (-r
// --force-group-allocation) and then every symbol but its entries is made local (objcopy
// --keep-global-symbol): each unit keeps its own copy of everything it uses.
//
//   CXX FLAGS [-fno-gnu-unique] -c UNIT.cc -o UNIT.raw.o   (the unit's flags: -march=LEVEL ...;
//                                                          g++ only: see identify_toolchain)
//   CXX -r -nostdlib -Wl,--force-group-allocation UNIT.raw.o -o UNIT.o
//   objcopy --keep-global-symbol=ENTRY ... UNIT.o
//
// Units compile in parallel, one per core. With a cache folder (object_cache.h), each finished
// object is kept under a key of everything that decides its bytes (the unit's file name, flags,
// entries and source, the compiler's --version text, objcopy's), so a pack rebuilt from the
// same kernels, or another pack sharing some, skips their compiles.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "pack/pack_source.h"

namespace dietcode {

struct KernelUnitStats {
  int units = 0;
  int cache_hits = 0;  // objects taken from the cache, not compiled
  int reused = 0;      // objects the build's kernel compile made (KernelUnit::object)
};

// A unit's compiler flags for an x86-64 level: the tuner's (CxxCompiler::flags) for an object
// rather than a shared object, then the kernel's own options (-D..., -I...).
std::vector<std::string> kernel_unit_flags(const std::string& level,
                                           const std::vector<std::string>& options);

// Compiles units one at a time, through the object cache when it has a folder: what
// compile_kernel_units does for each unit, and the kernel compile of a CPU pack
// (pack_object_compiler.h) for each kernel. Thread-safe; every unit needs its own file name.
class KernelUnitCompiler {
 public:
  // `cache_dir` empty: no cache. Runs `cxx --version` (and objcopy's) in `dir` once.
  KernelUnitCompiler(std::string cxx, const std::filesystem::path& dir,
                     const std::filesystem::path& cache_dir);
  ~KernelUnitCompiler();

  // Writes the unit's source into `dir` and its object to dir/object; "" when it worked, else
  // why not ("cannot run '...': ..." when a tool is missing, else the failing command and its
  // output). *cache_hit says whether the object came from the cache.
  std::string compile(const KernelUnit& unit, const std::filesystem::path& dir,
                      const std::string& object, bool* cache_hit = nullptr) const;

 private:
  struct State;
  std::string cxx_;
  std::unique_ptr<State> state_;
};

// The objects, relative to dir, in unit order: a unit's own `object` when it has one, else
// compiled from its source. Every unit's source is written there too. `cache_dir` empty: no cache. Throws
// EnvironmentError when objcopy is missing, std::runtime_error (an internal error, with the
// compiler's output) when a unit does not compile.
std::vector<std::string> compile_kernel_units(const std::vector<KernelUnit>& units,
                                              const std::string& cxx,
                                              const std::filesystem::path& dir,
                                              const std::filesystem::path& cache_dir = {},
                                              KernelUnitStats* stats = nullptr);

}  // namespace dietcode
