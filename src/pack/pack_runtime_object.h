// A pack's loader runtime (pack/runtime/: the driver loader of a GPU pack, the thread pool of a
// CPU pack) compiled on its own into an object the pack links, and kept in the object cache
// (object_cache.h). It is the same for every pack one dietcode writes with one compiler, and it
// is most of a pack's own compile: 2.2 s of the 3.3 s that rebuilding BERT's CPU pack took on
// a 2-core machine with every kernel object cached.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "pack/embedded_runtime.h"
#include "pack/pack_source.h"

namespace dietcode {

struct RuntimeObject {
  std::string file;     // relative to the build folder: "pack_runtime_cpu.cc.o"
  bool cached = false;  // taken from the cache, not compiled
};

// Compiles `runtime.source` (already written to `dir` with `files`, the embedded runtime it
// includes) with `flags`, the flags of the pack's own unit. `cuda_include`: the toolkit headers'
// folder of a GPU pack (their text is part of the key), empty for a CPU pack. `cache_dir`
// empty: no cache. Throws EnvironmentError when the compiler cannot run, std::runtime_error
// (an internal error, with the compiler's output) when the runtime does not compile.
RuntimeObject compile_runtime_object(const std::string& cxx, const std::vector<std::string>& flags,
                                     const PackRuntime& runtime,
                                     const std::vector<EmbeddedFile>& files,
                                     const std::string& cuda_include,
                                     const std::filesystem::path& dir,
                                     const std::filesystem::path& cache_dir);

}  // namespace dietcode
