// Writes a kernel pack: generates its sources (pack_source.h) into a private build folder,
// compiles them with the loader runtime using the host C++ compiler, and moves libNAME.so and
// NAME.h into place.
//
//   c++ -O2 -shared -fPIC -fvisibility=hidden, a version script exporting only the ABI and the
//   typed wrappers, no build id, no debug info, stripped, -ldl only: the pack never links
//   libcuda (it dlopens it on first use). A CPU pack compiles its runtime (the thread pool,
//   -pthread) instead of the driver loader, needs no CUDA headers, and first compiles each of
//   its kernels for its own ISA level into an object it links (pack_kernel_units.h).
//
// Reproducible: the compiler runs inside the build folder on relative file names and the
// output carries no path, time or random name, so equal inputs give byte-identical packs
// wherever they are written. Atomic: each output is written beside its destination under a
// temporary name and renamed over it, so a failure never leaves a half-written pack.
#pragma once

#include <filesystem>
#include <string>

#include "pack/pack_request.h"

namespace dietcode {

struct PackWriteOptions {
  std::string cxx = "c++";       // the host C++ compiler (a CPU pack's kernels too)
  std::string cuda_include_dir;  // cuda.h (GPU packs); empty: the toolkit dietcode was built
                                 // with, else /usr/local/cuda/include
  bool keep_build_dir = false;   // leave the generated sources behind (printed) for debugging
  std::filesystem::path object_cache_dir;  // a CPU pack's kernel objects and any pack's
                                           // runtime object are kept here and reused
                                           // (object_cache.h); empty: no cache
};

struct PackFiles {
  std::filesystem::path library, header;
  std::filesystem::path build_dir;  // only when kept
  uintmax_t library_bytes = 0;
  double compile_seconds = 0;
  int kernel_objects = 0;         // a CPU pack's kernel units
  int kernel_objects_cached = 0;  // of them, taken from the object cache
  int kernel_objects_reused =
      0;  // of them, made by the build's kernel compile (not compiled again)
  bool runtime_object_cached = false;  // the loader runtime's object too (pack_runtime_object.h)
};

// The header's path for a library path: "out/libbert_dense.so" -> "out/bert_dense.h".
std::filesystem::path header_path_for(const std::filesystem::path& library);

// Throws UserError for a bad request, EnvironmentError when the host compiler or cuda.h is
// missing or the output cannot be written, std::runtime_error (an internal error, with the
// compiler's output) if the generated code does not compile.
PackFiles write_pack(const PackRequest& request, const std::filesystem::path& library,
                     const PackWriteOptions& options = {});

}  // namespace dietcode
