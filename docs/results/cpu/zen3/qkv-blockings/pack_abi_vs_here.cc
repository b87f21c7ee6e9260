// The pack's qkv through its C ABI against the same kernel compiled here and oneDNN, round by
// round in one process (bench's regime).
#include <dlfcn.h>
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
#define NN 2304
#define KK 768
using Fn = int (*)(const DietcodeArgs*, const DietcodeCpuRuntime*);
using PackFn = int (*)(const float*, const float*, float*, int64_t, void*);
int main(int argc, char** argv) {
  const int rounds = atoi(argv[1]);
  const int T = atoi(argv[2]);
  const int threads = 2;
  const long N = NN, K = KK, M = 16L * T;
  auto mk = [](size_t n) { size_t b = ((n * 4 + 4095) / 4096) * 4096; float* p = (float*)std::aligned_alloc(4096, b); memset(p, 0, b); return p; };
  float *x = mk(M * K), *w = mk(N * K), *c = mk(M * N), *c2 = mk(M * N), *c3 = mk(M * N);
  srand(1);
  for (long i = 0; i < M * K; ++i) x[i] = rand() / float(RAND_MAX) - 0.5f;
  for (long i = 0; i < N * K; ++i) w[i] = rand() / float(RAND_MAX) - 0.5f;
  void* lib = dlopen(argv[3], RTLD_NOW);
  if (!lib) { printf("%s\n", dlerror()); return 1; }
  auto set_threads = (int (*)(int))dlsym(lib, "dietcode_set_num_threads");
  set_threads(threads);
  PackFn qkv = (PackFn)dlsym(lib, "bert_dense_cpu_qkv");
  auto base = dietcode::make_cpu_baseline("onednn", threads);
  dietcode::OpSpec op; op.name = "x"; op.kind = dietcode::OpKind::kDense; op.dtype = dietcode::DType::kFloat32;
  dietcode::GemmShape gs; gs.batch = 1; gs.M = M; gs.N = N; gs.K = K;
  dietcode::CpuGemmOperands g; g.a = x; g.b = w; g.y = c2;
  base->prepare(op, gs, nullptr, g);
  dietcode::CpuThreadPoolOptions po; po.threads = threads; po.pin = true; po.spin_microseconds = 200;
  dietcode::CpuThreadPool pool(po); pool.pin_caller();
  DietcodeCpuRuntime rt = pool.runtime();
  DietcodeArgs a{}; a.a = x; a.b = w; a.c = c; a.batch = 1; a.m = M; a.n = N; a.k = K;
  Fn here = &dc_x86::run<dc_x86::OpKind::kDense, dc_x86::Epilogue::kNone, dc_x86::Params<6,16,512,96,3072,0,0,1,0,4>, NN, KK>;
  std::vector<std::function<void()>> f = {
      [&] { base->run(); },
      [&] { qkv(x, w, c3, T, nullptr); },
      [&] { here(&a, &rt); }};
  const char* names[] = {"oneDNN", "pack via dietcode ABI", "same kernel compiled here"};
  for (auto& fn : f) fn();
  double e = 0; for (long j = 0; j < M * N; ++j) e = std::max({e, double(std::fabs(c[j] - c2[j])), double(std::fabs(c3[j] - c2[j]))});
  printf("max err %g\n", e);
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
  for (size_t p = 0; p < n; ++p) {
    std::vector<double> rr;
    for (int r = 0; r < rounds; ++r) rr.push_back(t[p][r] / t[0][r]);
    std::sort(rr.begin(), rr.end());
    printf("T=%d %-28s %9.1f us %6.1f GFLOP/s  /oneDNN paired median %.3f [p25 %.3f p75 %.3f]\n", T, names[p], med(t[p]), flops / med(t[p]) / 1e3,
           rr[rounds / 2], rr[rounds / 4], rr[3 * rounds / 4]);
  }
}
