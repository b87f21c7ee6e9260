// The Compiler seam: CUDA C++ source in, CUBIN (per arch) and PTX out. NvrtcCompiler is the
// real one; tests substitute fakes. A failed compile is a result (ok == false, log holds the
// reason), never an exception: a bad candidate is data, not an error.
#pragma once

#include <string>
#include <vector>

namespace dietcode {

struct CompileRequest {
  std::string name;                  // for logs and NVRTC's program name, "dense_f32.cu"
  std::string source;
  std::vector<std::string> options;  // extra NVRTC options (-D..., -I...)
  std::vector<std::string> archs;    // "sm_80", "sm_90", "sm_90a": a CUBIN each
  bool want_ptx = true;              // also PTX for the newest virtual arch, for newer GPUs
  // The extern "C" symbols a caller links against, where the output is an object that keeps
  // only those global (a CPU pack's kernel, pack_object_compiler.h); others ignore it.
  std::vector<std::string> entries;
};

// What ptxas reported for one kernel entry in one arch.
struct KernelResources {
  std::string entry;
  int registers = 0;
  int spill_stores = 0;  // bytes
  int spill_loads = 0;   // bytes
  int static_smem = 0;   // bytes
  int stack_frame = 0;   // bytes
};

struct ArchBinary {
  std::string arch;                        // "sm_90"
  std::string cubin;                       // raw bytes
  std::vector<KernelResources> resources;  // parsed from the ptxas -v report
};

struct CompileResult {
  bool ok = false;
  std::string log;  // NVRTC's program log (errors, warnings, ptxas report)
  std::vector<ArchBinary> binaries;
  std::string ptx;  // empty unless requested
  std::string ptx_arch;  // "compute_90"
  double seconds = 0;    // wall time spent in NVRTC (0 on a cache hit)
  bool cache_hit = false;

  bool spills() const;  // any entry in any arch spills registers
  const ArchBinary* binary(const std::string& arch) const;
};

class Compiler {
 public:
  virtual ~Compiler() = default;
  virtual CompileResult compile(const CompileRequest& request) = 0;

  // Several requests at once, results in request order. A compiler whose start-up dominates
  // (the system C++ compiler: a process per call) does them in one invocation; the default
  // compiles one after another.
  virtual std::vector<CompileResult> compile_batch(const std::vector<CompileRequest>& requests) {
    std::vector<CompileResult> out;
    out.reserve(requests.size());
    for (const CompileRequest& r : requests) out.push_back(compile(r));
    return out;
  }
  // How many requests one compile_batch call should get (compile_all hands out chunks of up
  // to this many); 1: batching gains nothing.
  virtual int preferred_batch() const { return 1; }
};

}  // namespace dietcode
