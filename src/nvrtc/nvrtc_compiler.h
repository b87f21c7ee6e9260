// The real Compiler: NVRTC, in process, no GPU needed. One nvrtcCompileProgram per requested
// arch (CUBIN via nvrtcGetCUBIN), plus PTX for the newest virtual arch when asked, so a pack
// also runs on GPUs newer than any arch it was built for.
//
// Every compile passes --ptxas-options=-v: the resulting log carries ptxas' register and spill
// report, parsed into KernelResources per entry (ptxas_report.h). A compile error is a result
// (ok == false, the log says why); only a broken NVRTC installation throws EnvironmentError,
// and an arch NVRTC does not know throws UserError.
#pragma once

#include <string>
#include <vector>

#include "nvrtc/compiler.h"

namespace dietcode {

class NvrtcCompiler : public Compiler {
 public:
  // Headers from the toolkit dietcode was built against, else /usr/local/cuda, each with its
  // include/cccl beside it. Throws EnvironmentError when NVRTC cannot even report its version.
  NvrtcCompiler();
  // Explicit -I folders (tests, unusual installations), in search order.
  explicit NvrtcCompiler(std::vector<std::string> include_dirs);

  CompileResult compile(const CompileRequest& request) override;

  const std::vector<std::string>& include_dirs() const { return include_dirs_; }

  // What, besides the request itself, decides the compiler's output: the NVRTC version and
  // library, and the include folders. Part of every kernel cache key.
  std::string fingerprint() const;

  static std::string version();               // "13.0"; throws EnvironmentError
  static std::vector<int> supported_archs();  // {75, 80, ..., 121}
  static std::vector<std::string> default_include_dirs();

 private:
  std::vector<std::string> include_dirs_;
};

// "sm_90a" -> 90 and suffix "a"; false for anything that is not sm_<digits>[a|f].
bool parse_arch(const std::string& arch, int* number, std::string* suffix);

}  // namespace dietcode
