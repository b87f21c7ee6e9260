// Kernels of the templates called directly (VARIANTS) and, with PACK=libNAME.so set, a pack's
// dietcode_launch (op OP, default qkv, M = 16 T; the variant &pack_launch), against oneDNN's
// sgemm, on operands in 4 KiB pages and in 2 MiB pages (MADV_HUGEPAGE), rounds interleaved in
// rotating order, one process. oneDNN, and with it libgomp, is dlopen'ed RTLD_LOCAL, as a
// Python host loads them: with OMP_PROC_BIND set, libgomp binds the main thread to one CPU as it
// loads (sections AL and AM of docs/results/cpu/README.md).
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
#include "x86/ops_x86.h"
#include "x86/serial_runtime.h"
// The pack's own dietcode_launch (PACK = path of a pack with op OP, M = 16 T).
typedef int (*launch_t)(const char*, void* const*, int, const int64_t*, int, void*);
static launch_t g_launch;
static const char* g_op = "qkv";
static int pack_launch(const DietcodeArgs* a, const DietcodeCpuRuntime*) {
  if (!g_launch) {
    fprintf(stderr, "this variant list times a pack: set PACK=libNAME.so\n");
    exit(2);
  }
  void* args[3] = {const_cast<void*>(a->a), const_cast<void*>(a->b), a->c};
  int64_t t = a->m / 16;
  return g_launch(g_op, args, 3, &t, 1, nullptr);
}
using namespace dc_x86;
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
#define BL(...) &run<OpKind::kDense, Epilogue::kNone, Params<__VA_ARGS__>, NN, KK>
struct Kn { const char* name; Fn fn; };
static Kn kernels[] = {
#include VARIANTS
};
static long thp_kb() {
  FILE* f = fopen("/proc/self/smaps_rollup", "r"); char l[256]; long v = -1;
  while (f && fgets(l, sizeof l, f)) if (!strncmp(l, "AnonHugePages:", 14)) v = atol(l + 14);
  if (f) fclose(f); return v;
}
int main(int argc, char** argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 9;
  const long M = argc > 2 ? atol(argv[2]) : 2048, N = NN, Kd = KK;
  void* h = dlopen("libdnnl.so.2", RTLD_NOW);
  if (const char* pack = getenv("PACK")) {
    void* pk = dlopen(pack, RTLD_NOW);
    if (!pk) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    g_launch = (launch_t)dlsym(pk, "dietcode_launch");
  }
  if (getenv("OP")) g_op = getenv("OP");
  sgemm_t sg = (sgemm_t)dlsym(h, "dnnl_sgemm");
  auto mk = [](size_t n, bool huge) {
    size_t bytes = ((n * 4 + (2 << 20) - 1) >> 21) << 21;
    float* p = (float*)std::aligned_alloc(2 << 20, bytes);
    madvise(p, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    memset(p, 0, bytes);
    return p;
  };
  float* x[2]; float* w[2]; float* c[2];
  for (int hp = 0; hp < 2; ++hp) { x[hp] = mk(M*Kd, hp); w[hp] = mk(N*Kd, hp); c[hp] = mk(M*N, hp); }
  srand(1);
  for (long i = 0; i < M*Kd; ++i) x[0][i] = x[1][i] = rand() / float(RAND_MAX) - 0.5f;
  for (long i = 0; i < N*Kd; ++i) w[0][i] = w[1][i] = rand() / float(RAND_MAX) - 0.5f;
  fprintf(stderr, "AnonHugePages %ld kB\n", thp_kb());
  const int threads = getenv("THREADS") ? atoi(getenv("THREADS")) : 1;
  SimpleThreadPool pool(threads);
  DietcodeCpuRuntime rt = threads > 1 ? pool.runtime() : serial_runtime();
  const int nk0 = sizeof(kernels) / sizeof(kernels[0]);
  const int per = nk0 + 1, nk = 2 * per;  // [kernels..., onednn] x {4K, huge}
  std::vector<std::vector<double>> t(nk);
  const bool evict = getenv("EVICT") != nullptr;
  std::vector<float> ev(evict ? (64 << 20) / 4 : 0);
  std::vector<float> ref(M*N);
  sg('N', 'T', M, N, Kd, 1.f, x[0], Kd, w[0], Kd, 0.f, ref.data(), N);
  for (int rd = -1; rd < rounds; ++rd)
    for (int i0 = 0; i0 < nk; ++i0) {
      int i = (i0 + std::max(rd, 0)) % nk, hp = i / per, j = i % per;
      DietcodeArgs a{}; a.a = x[hp]; a.b = w[hp]; a.c = c[hp]; a.batch = 1; a.m = M; a.n = N; a.k = Kd;
      if (evict) for (size_t q = 0; q < ev.size(); q += 16) ev[q] += 1.0f;
      auto s = std::chrono::steady_clock::now();
      if (j == nk0) sg('N', 'T', M, N, Kd, 1.f, x[hp], Kd, w[hp], Kd, 0.f, c[hp], N);
      else kernels[j].fn(&a, &rt);
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s).count();
      if (rd < 0) { double e = 0; for (long q = 0; q < M*N; ++q) e = std::max(e, double(std::fabs(c[hp][q]-ref[q]))); if (e > 1e-3) printf("MISMATCH %d %g\n", i, e); }
      else t[i].push_back(us);
    }
  for (int i = 0; i < nk; ++i) {
    auto v = t[i]; std::sort(v.begin(), v.end()); double med = v[v.size()/2];
    int hp = i / per, j = i % per;
    printf("%-40s %s %10.1f us %6.1f GFLOP/s\n", j == nk0 ? "oneDNN sgemm" : kernels[j].name, hp ? "2M" : "4K", med, 2.0*M*N*Kd/med/1e3);
  }
}
