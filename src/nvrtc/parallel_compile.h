// Compiles a batch of kernels on several threads. Compiling is the expensive step of tuning
// (0.1-0.5 s per kernel in NVRTC, single-threaded inside), so candidates are compiled in
// parallel and timed serially afterwards. Results come back in request order.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "nvrtc/compiler.h"

namespace dietcode {

struct CompileStats {
  int kernels = 0;
  int failed = 0;  // results with ok == false
  int cache_hits = 0;
  double wall_seconds = 0;   // the whole batch, start to finish
  double nvrtc_seconds = 0;  // summed over results: time spent inside the compiler
  double kernels_per_second() const { return wall_seconds > 0 ? kernels / wall_seconds : 0; }
};

struct ParallelCompileOptions {
  int jobs = 0;  // threads; 0 means default_compile_jobs()
  // Called once per finished request, from a worker thread but never from two at once:
  // progress bars and logs need no locking of their own.
  std::function<void(size_t index, const CompileResult& result)> on_done;
};

// std::thread::hardware_concurrency(), at least 1.
int default_compile_jobs();

// `compiler` is called from several threads at once (NvrtcCompiler and CachingCompiler are
// safe for that). If a compile throws (a broken environment), no new request is started and
// the first exception is rethrown here once every thread has stopped.
std::vector<CompileResult> compile_all(Compiler& compiler,
                                       const std::vector<CompileRequest>& requests,
                                       const ParallelCompileOptions& options = {},
                                       CompileStats* stats = nullptr);

}  // namespace dietcode
