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
#include <string>
#include <vector>

#include "pack/pack_source.h"

namespace dietcode {

struct KernelUnitStats {
  int units = 0;
  int cache_hits = 0;  // objects taken from the cache, not compiled
};

// The objects, relative to dir, in unit order. The units' sources must already be written
// there. `cache_dir` empty: no cache. Throws EnvironmentError when objcopy is missing,
// std::runtime_error (an internal error, with the compiler's output) when a unit does not
// compile.
std::vector<std::string> compile_kernel_units(const std::vector<KernelUnit>& units,
                                              const std::string& cxx,
                                              const std::filesystem::path& dir,
                                              const std::filesystem::path& cache_dir = {},
                                              KernelUnitStats* stats = nullptr);

}  // namespace dietcode
