// The pack generator: from a PackRequest, the C++ translation unit of a pack, its C header and
// its linker version script. The writer (pack_writer.h) compiles them with the loader runtime.
//
// The translation unit (line 1 says it is generated) holds
//   - the CUBINs, PTX and manifest, embedded by the assembler with .incbin from files in the
//     build folder (a hex array of 50 x 30 KB costs g++ 2 s and 180 MB; .incbin 0.06 s); a
//     CPU pack's kernels are kernel units instead, compiled apart and linked in;
//   - per op: the dispatcher (the decision tree as nested ifs), the shape -> GEMM evaluation
//     (dimension expressions as C), and the launch description of each kernel;
//   - the typed wrappers, NAME_OP(X, W, [bias,] Y, <one int64_t per shape variable>, stream).
#pragma once

#include <string>
#include <vector>

#include "pack/pack_request.h"

namespace dietcode {

struct PackBlob {
  std::string file;  // name in the build folder
  std::string bytes;
  bool nul_terminated = false;  // PTX and the manifest are read as C strings
};

// The loader runtime a pack is compiled with (one of the embedded files, embedded_runtime.h)
// and what compiling and linking it needs.
struct PackRuntime {
  std::string header;               // "pack_runtime.h": what the generated unit includes
  std::string source;               // "pack_runtime.cc": compiled with it
  bool needs_cuda_headers = false;  // the driver API's types (a GPU pack)
  std::vector<std::string> link_flags;  // "-ldl", "-pthread"
};

// Code compiled apart from the pack's translation unit and linked into it: a CPU kernel, built
// for its own ISA level (pack_kernel_units.h). Its object keeps only `entries` global, so
// inline code it shares with units of another level never merges with theirs.
struct KernelUnit {
  std::string file;                  // "kernel_0_1.cc" in the build folder
  std::string source;
  std::vector<std::string> flags;    // the compiler's flags, without -c and -o
  std::vector<std::string> entries;  // the extern "C" symbols the pack calls
  // The unit's object when this build already compiled it (the kernel compile of a CPU pack,
  // pack_object_compiler.h), which the writer then links as it is; empty: compile it.
  std::string object;
};

struct PackSources {
  PackRuntime runtime;
  std::vector<KernelUnit> kernel_units;
  std::vector<PackBlob> blobs;
  std::string translation_unit;       // refers to each blob as BUILD_DIR/file
  std::string header;                 // NAME.h: the C ABI and the typed wrappers, C99 and C++
  std::string version_script;         // exports the ABI and the wrappers, nothing else
  std::vector<std::string> exported;  // the symbols it exports, sorted
};

// build_dir must be absolute (the assembler resolves .incbin paths itself); header_name is
// the header's file name, for its include guard and its comments.
// What is written per target (the kernel table, the runtime, the header's note) comes from
// pack_target(request.target) (pack_target.h).
PackSources generate_pack_sources(const PackRequest& request, const std::string& manifest,
                                  const std::string& build_dir, const std::string& library_name,
                                  const std::string& header_name);

// The header's line on linking the pack: "Link with -lNAME or dlopen it." for libNAME.so, its
// path for a library named otherwise.
std::string link_advice(const std::string& library_name);

// A name for the i-th blob's symbol in the generated unit.
std::string pack_blob_symbol(size_t i);

// C for `static int NAME(const int64_t* dietcode_values, DietcodeArgs* dietcode_args)`:
// the op's GEMM (batch, m, n, k, strides) and, for conv2d, its geometry, from the values of
// its shape variables; 0 when one of them does not fit its field (computed in 128 bits, so
// nothing wraps). Preceded by the helpers it uses, defined once per translation unit.
std::string shape_function_c(const OpSpec& op, const std::string& name);

// The typed wrapper's prototype, without the trailing ';'.
std::string wrapper_prototype(const Workload& workload, const OpSpec& op);

// A C/C++ string literal for any bytes.
std::string c_string_literal(const std::string& text);

}  // namespace dietcode
