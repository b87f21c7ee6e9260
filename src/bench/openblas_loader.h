// OpenBLAS (the OpenMP build, Debian libopenblas0-openmp), reached at run time and never
// linked: the second CPU baseline `dietcode bench` times fp32 GEMMs against (openblas_baseline.cc).
//
// Which file: the OpenMP variant, explicitly,
//   /usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0
// and not the soname libopenblas.so.0, which Debian's alternatives usually point at the pthread
// build: that one busy-spins its own thread pool and oversubscribes the cores when oneDNN's
// libgomp threads run in the same process. The OpenMP build shares that libgomp. The file is
// opened with RTLD_LOCAL (oneDNN, BLIS and others export BLAS symbols too).
// $DIETCODE_OPENBLAS_LIBRARY overrides the path; the label then says which threading that
// build has (openblas_get_parallel).
//
// The declarations are our own (cblas.h of 0.3.21), so building dietcode needs no OpenBLAS
// header. 0.3.21 exports no cblas_sgemm_batch: batch_matmul loops over the batch.
#pragma once

#include <string>
#include <vector>

namespace dietcode {

namespace cblas {
constexpr int RowMajor = 101, ColMajor = 102;  // CBLAS_ORDER
constexpr int NoTrans = 111, Trans = 112;      // CBLAS_TRANSPOSE
using blasint = int;                           // the Debian builds are LP64 (32-bit integers)
}  // namespace cblas

struct OpenblasApi {
  std::string path;       // the file actually opened
  std::string config;     // openblas_get_config(): "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..."
  std::string version;    // "0.3.21", from the config
  std::string core;       // openblas_get_corename(): "SkylakeX", "Zen", "Haswell"
  int parallel = -1;      // openblas_get_parallel(): 0 sequential, 1 pthreads, 2 OpenMP

  void (*cblas_sgemm)(int order, int trans_a, int trans_b, cblas::blasint m, cblas::blasint n,
                      cblas::blasint k, float alpha, const float* a, cblas::blasint lda,
                      const float* b, cblas::blasint ldb, float beta, float* c,
                      cblas::blasint ldc) = nullptr;
  void (*openblas_set_num_threads)(int) = nullptr;
  int (*openblas_get_num_threads)() = nullptr;
  char* (*openblas_get_config)() = nullptr;
  char* (*openblas_get_corename)() = nullptr;
  int (*openblas_get_parallel)() = nullptr;

  std::string threading() const;  // "openmp", "pthreads", "sequential"
  // "OpenBLAS 0.3.21 (openmp)"
  std::string label() const;
};

// $DIETCODE_OPENBLAS_LIBRARY alone when set (and not empty), else
// {"/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0"}.
std::vector<std::string> openblas_candidates();

// Opens the first loadable file and resolves every function; false with *why set to one line,
// e.g. "no OpenBLAS: /usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0: cannot open
// shared object file: No such file or directory; install the Debian package
// libopenblas0-openmp (or set DIETCODE_OPENBLAS_LIBRARY)".
bool load_openblas(const std::vector<std::string>& files, OpenblasApi* out, std::string* why);

// The process-wide instance from openblas_candidates(), loaded once; EnvironmentError with
// the line above when it cannot be loaded.
const OpenblasApi& openblas_api();

}  // namespace dietcode
