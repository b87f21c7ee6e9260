// Whole-GEMM A/B of the x86 templates against oneDNN's sgemm, one process, rounds interleaved in
// rotating order: qkv at T = 64 (M 1024, N 2304, K 768), each kernel of variants.inc on operands
// that start on pages and again with some of them OFF floats further (WHICH: any of x, w, c),
// oneDNN on both. THREADS (default 1) workers of the templates' SimpleThreadPool, oneDNN on
// OMP_NUM_THREADS; EVICT writes 64 MiB before every timed run. run.sh builds it with the
// templates of this tree and those of 598e22f (before the C alignment work) side by side.
#include <dlfcn.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "old/x86/ops_x86.h"
#include "x86/ops_x86.h"
#include "x86/serial_runtime.h"
using namespace dc_x86;
#ifndef MM
#define MM 1024
#endif
#ifndef NN
#define NN 2304
#endif
#ifndef KK
#define KK 768
#endif
typedef int (*sgemm_t)(char, char, long long, long long, long long, float, const float*, long long,
                       const float*, long long, float, float*, long long);
using Fn = int (*)(const DietcodeArgs*, const DietcodeCpuRuntime*);
#define WB(...) &run_wbcast<OpKind::kDense, Epilogue::kNone, Params<__VA_ARGS__>, NN, KK>
#define BLO(...)                                                            \
  &dc_x86_old::run<dc_x86_old::OpKind::kDense, dc_x86_old::Epilogue::kNone, \
                   dc_x86_old::Params<__VA_ARGS__>, NN, KK>
#define BL(...) &run<OpKind::kDense, Epilogue::kNone, Params<__VA_ARGS__>, NN, KK>
struct K {
  const char* name;
  Fn fn;
};
template <class P>
int prepacked_fn(const DietcodeArgs* a, const DietcodeCpuRuntime* rt) {
  static float* panels = nullptr;
  if (!panels) {
    long n = prepack<OpKind::kDense, P, NN, KK>(a, nullptr);
    panels = (float*)std::aligned_alloc(64, ((n * 4 + 63) / 64) * 64);
    prepack<OpKind::kDense, P, NN, KK>(a, panels);
  }
  return run_prepacked<OpKind::kDense, Epilogue::kNone, P, NN, KK>(a, rt, panels);
}
#define PP(...) &prepacked_fn<Params<__VA_ARGS__>>
// Params: MR NR KC MC NC LOOP THREADS_M PACK_A PREFETCH UNROLL ISA WORKERS PREFETCH_TILE
static K kernels[] = {
#include VARIANTS
};
int main(int argc, char** argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 15;
  void* h = dlopen("libdnnl.so.2", RTLD_NOW);
  sgemm_t sg = (sgemm_t)dlsym(h, "dnnl_sgemm");
  const long M = MM, N = NN, Kd = KK;
  struct Buf {
    float* p;
    size_t n;
    float& operator[](size_t i) { return p[i]; }
    float* data() { return p; }
    float* begin() { return p; }
    float* end() { return p + n; }
  };
  auto mk = [](size_t n) {
    size_t bytes = ((n * 4 + (2 << 20) - 1) >> 21) << 21;
    float* p = (float*)std::aligned_alloc(2 << 20, bytes);
    if (getenv("HUGE")) madvise(p, bytes, MADV_HUGEPAGE);
    memset(p, 0, bytes);
    return Buf{p, n};
  };
  const long OFF = getenv("OFF") ? atol(getenv("OFF")) : 4;  // floats
  Buf x = mk(M * Kd + 64), w = mk(N * Kd + 64), c = mk(M * N + 64), r = mk(M * N);
  const char* which = getenv("WHICH") ? getenv("WHICH") : "xwc";
  Buf xo{x.p + (strchr(which, 'x') ? OFF : 0), 0}, wo{w.p + (strchr(which, 'w') ? OFF : 0), 0},
      co{c.p + (strchr(which, 'c') ? OFF : 0), 0};
  srand(1);
  for (auto& v : x) v = rand() / float(RAND_MAX) - 0.5f;
  for (auto& v : w) v = rand() / float(RAND_MAX) - 0.5f;
  const int threads = getenv("THREADS") ? atoi(getenv("THREADS")) : 1;
  SimpleThreadPool pool(threads);
  DietcodeCpuRuntime rt = threads > 1 ? pool.runtime() : serial_runtime();
  DietcodeArgs a{};
  a.a = x.data();
  a.b = w.data();
  a.c = c.data();
  a.batch = 1;
  a.m = M;
  a.n = N;
  a.k = Kd;
  const int nk0 = sizeof(kernels) / sizeof(kernels[0]);
  const int nk =
      2 * nk0 + 1;  // kernels aligned, kernels offset, then oneDNN offset; oneDNN aligned last
  DietcodeArgs ao = a;
  ao.a = xo.p;
  ao.b = wo.p;
  ao.c = co.p;
  std::vector<std::vector<double>> t(nk + 1);
  sg('N', 'T', M, N, Kd, 1.f, x.data(), Kd, w.data(), Kd, 0.f, r.data(), N);
  for (int i = 0; i < nk0; ++i) {
    kernels[i].fn(&a, &rt);
    double e = 0;
    for (long j = 0; j < M * N; ++j) e = std::max(e, double(std::fabs(c[j] - r[j])));
    if (e > 1e-3) printf("MISMATCH %s %g\n", kernels[i].name, e);
  }
  const bool evict = getenv("EVICT") != nullptr;
  std::vector<float> ev(evict ? (64 << 20) / 4 : 0);
  for (int rd = 0; rd < rounds; ++rd)
    for (int i0 = 0; i0 <= nk; ++i0) {
      int i = (i0 + rd) % (nk + 1);
      if (evict) {
        for (size_t j = 0; j < ev.size(); j += 16) ev[j] += 1.0f;
      }
      auto s = std::chrono::steady_clock::now();
      if (i == nk)
        sg('N', 'T', M, N, Kd, 1.f, x.data(), Kd, w.data(), Kd, 0.f, c.data(), N);
      else if (i == nk - 1)
        sg('N', 'T', M, N, Kd, 1.f, xo.p, Kd, wo.p, Kd, 0.f, co.p, N);
      else if (i < nk0)
        kernels[i].fn(&a, &rt);
      else
        kernels[i - nk0].fn(&ao, &rt);
      t[i].push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s).count());
    }
  std::vector<double> med(nk + 1);
  for (int i = 0; i <= nk; ++i) {
    auto v = t[i];
    std::sort(v.begin(), v.end());
    med[i] = v[v.size() / 2];
  }
  for (int i = 0; i <= nk; ++i)
    printf("%-60s %10.1f us  %6.1f GFLOP/s  %.3fx of oneDNN time\n",
           (i == nk       ? std::string("oneDNN sgemm")
            : i == nk - 1 ? std::string("oneDNN sgemm OFFSET")
            : i < nk0     ? std::string(kernels[i].name)
                          : std::string(kernels[i - nk0].name) + " OFFSET")
               .c_str(),
           med[i], 2.0 * M * N * Kd / med[i] / 1e3, med[i] / med[nk]);
}
