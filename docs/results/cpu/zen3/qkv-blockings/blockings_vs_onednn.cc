// Several kernels and oneDNN timed round by round in one process (bench's regime: caches evicted,
// other threads asleep); each kernel's per-round time over oneDNN's, median and quartiles.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>
#include "x86/ops_x86.h"
#include "x86/cpu_thread_pool.h"
#include "bench/cpu_baseline.h"
#include "bench/cpu_cache_evictor.h"
#include "bench/process_threads.h"
#ifndef NN
#define NN 2304
#endif
#define KK 768
using Fn = int (*)(const DietcodeArgs*, const DietcodeCpuRuntime*);
#define WB(...) &dc_x86::run_wbcast<dc_x86::OpKind::kDense, dc_x86::Epilogue::kNone, dc_x86::Params<__VA_ARGS__, dc_x86::Isa::kAvx2, 0, 0>, NN, KK>
#define BL(...) &dc_x86::run<dc_x86::OpKind::kDense, dc_x86::Epilogue::kNone, dc_x86::Params<__VA_ARGS__>, NN, KK>
struct Kern { const char* name; Fn fn; };
// Params: MR NR KC MC NC LOOP THREADS_M PACK_A PREFETCH UNROLL
static Kern kerns[] = {
#include VARIANTS
};
int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 21;
  const int T = argc > 2 ? atoi(argv[2]) : 64;
  const int threads = argc > 3 ? atoi(argv[3]) : 2;
  const long N = NN, K = KK, M = 16L * T;
  auto mk = [](size_t n) { size_t b = ((n * 4 + 4095) / 4096) * 4096; float* p = (float*)std::aligned_alloc(4096, b); memset(p, 0, b); return p; };
  float *x = mk(M * K), *w = mk(N * K), *c = mk(M * N), *c2 = mk(M * N);
  srand(1);
  for (long i = 0; i < M * K; ++i) x[i] = rand() / float(RAND_MAX) - 0.5f;
  for (long i = 0; i < N * K; ++i) w[i] = rand() / float(RAND_MAX) - 0.5f;
  auto base = dietcode::make_cpu_baseline("onednn", threads);
  dietcode::OpSpec op; op.name = "x"; op.kind = dietcode::OpKind::kDense; op.dtype = dietcode::DType::kFloat32;
  dietcode::GemmShape gs; gs.batch = 1; gs.M = M; gs.N = N; gs.K = K;
  dietcode::CpuGemmOperands g; g.a = x; g.b = w; g.y = c2;
  base->prepare(op, gs, nullptr, g);
  dietcode::CpuThreadPoolOptions po; po.threads = threads; po.pin = true; po.spin_microseconds = 200;
  dietcode::CpuThreadPool pool(po); pool.pin_caller();
  DietcodeCpuRuntime rt = pool.runtime();
  DietcodeArgs a{}; a.a = x; a.b = w; a.c = c; a.batch = 1; a.m = M; a.n = N; a.k = K;
  std::vector<std::function<void()>> f;
  f.push_back([&] { base->run(); });
  const int nk = sizeof(kerns) / sizeof(kerns[0]);
  for (int i = 0; i < nk; ++i) { Fn fn = kerns[i].fn; f.push_back([&a, &rt, fn] { fn(&a, &rt); }); }
  base->run();
  for (int i = 0; i < nk; ++i) {
    memset(c, 0, M * N * 4); f[i + 1]();
    double e = 0; for (long j = 0; j < M * N; ++j) e = std::max(e, double(std::fabs(c[j] - c2[j])));
    if (e > 1e-3) printf("MISMATCH %s %g\n", kerns[i].name, e);
  }
  dietcode::CpuCacheEvictor ev(getenv("WARM") ? 0 : 64 << 20, threads);
  const size_t n = f.size();
  std::vector<std::vector<double>> t(n);
  for (int r = 0; r < rounds; ++r)
    for (size_t k = 0; k < n; ++k) {
      size_t i = (r + k) % n;
      ev.evict();
      dietcode::wait_for_other_threads_to_sleep(20000);
      auto s = std::chrono::steady_clock::now();
      f[i]();
      t[i].push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s).count());
    }
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  const double flops = 2.0 * M * N * K;
  printf("N=%ld T=%d threads=%d rounds=%d  oneDNN %.1f us (%.1f GFLOP/s)\n", N, T, threads, rounds, med(t[0]), flops / med(t[0]) / 1e3);
  for (int p = 0; p < nk; ++p) {
    std::vector<double> rr;
    for (int r = 0; r < rounds; ++r) rr.push_back(t[1 + p][r] / t[0][r]);
    std::sort(rr.begin(), rr.end());
    printf("  %-52s %9.1f us %6.1f GFLOP/s  /oneDNN paired median %.3f [p25 %.3f p75 %.3f]\n", kerns[p].name, med(t[1 + p]), flops / med(t[1 + p]) / 1e3,
           rr[rounds / 2], rr[rounds / 4], rr[3 * rounds / 4]);
  }
}
