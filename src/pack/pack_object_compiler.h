// The kernel compile of a CPU pack: each request is compiled into the very object the pack
// links (a kernel unit, pack_kernel_units.h), so the compile that checks a kernel is also the
// last one it gets. The result's one binary, for the request's ISA level, holds the object's
// bytes (ArchBinary::cubin holds "the image", whatever the target); CpuPackTarget hands them to
// the writer, which links them as they are (KernelUnit::object).
//
// Before, the check went through CxxCompiler, whose shared objects the pack cannot link, and
// the writer compiled every kernel a second time as an object: a BERT pack of 26 kernels took
// 28 s for the one and 23 s for the other on 2 cores.
//
// A request: name = the unit's file name, source = its whole source, options = the kernel's own
// (-D..., -I...; the level's flags come from kernel_unit_flags), archs = {its one level},
// entries = the symbols the object keeps global. Objects go through the object cache when it
// has a folder, under the key the writer uses, so a pack rebuilt from the same kernels
// compiles none of them. A compile error is a result (ok false, the log says why); a missing
// compiler or objcopy throws EnvironmentError, as the writer would.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "nvrtc/compiler.h"
#include "pack/pack_kernel_units.h"

namespace dietcode {

class PackObjectCompiler : public Compiler {
 public:
  // `cxx`: the program that compiles the pack too; `cache_dir` empty: no cache.
  PackObjectCompiler(std::string cxx, std::filesystem::path cache_dir);
  ~PackObjectCompiler() override;

  CompileResult compile(const CompileRequest& request) override;

 private:
  std::unique_ptr<KernelUnitCompiler> units_;
};

}  // namespace dietcode
