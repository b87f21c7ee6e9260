// Builds of the templates' kernels (LIBS=a.so:b.so, each from kern.cc with a VARIANTS list)
// against oneDNN's sgemm, rounds interleaved in rotating order, caches evicted before every
// call (64 MiB written), on 2 workers (THREADS). For each kernel it prints the median time and,
// over the calls, the median of how far apart the two workers finished (idle, a share of the
// call) and how much later worker 1 started its first task than the caller (late).
//   POOL=pack  the packs' own pool (src/x86/cpu_thread_pool.h), pinned, the caller pinned too
//   else       the templates' SimpleThreadPool (templates/x86/serial_runtime.h), unpinned
// Build: g++ -std=c++17 -O2 -Itemplates -Isrc idle_ab.cc -ldl -pthread
// Run:   OMP_WAIT_POLICY=passive THREADS=2 POOL=pack LIBS=./proj.so ./a.out ROUNDS M N
#include <dlfcn.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include "x86/cpu_thread_pool.h"
#include "x86/dietcode_cpu.h"
#include "x86/serial_runtime.h"
using Fn = int (*)(const DietcodeArgs*, const DietcodeCpuRuntime*);
struct Kn { const char* name; Fn fn; };
typedef Kn* (*variants_t)(int*);
typedef int (*sgemm_t)(char, char, long long, long long, long long, float, const float*, long long,
                       const float*, long long, float, float*, long long);
using Clock = std::chrono::steady_clock;

// A runtime around the pool that notes when each worker started its first task of a call and
// finished its last.
struct Spy {
  DietcodeCpuRuntime inner;
  DietcodeCpuTask task;
  void* ctx;
  Clock::time_point t0;
  double begin[2], end[2];
} spy;
static double since_t0() { return std::chrono::duration<double, std::micro>(Clock::now() - spy.t0).count(); }
static void spy_task(void*, int t, int w) {
  if (w < 2 && spy.begin[w] < 0) spy.begin[w] = since_t0();
  spy.task(spy.ctx, t, w);
  if (w < 2) spy.end[w] = since_t0();
}
static void spy_for(void*, int n, DietcodeCpuTask task, void* ctx) {
  spy.task = task, spy.ctx = ctx;
  spy.inner.parallel_for(spy.inner.pool, n, &spy_task, nullptr);
}
static double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  const int rounds = atoi(argv[1]);
  const long M = atol(argv[2]), N = atol(argv[3]), K = getenv("K") ? atol(getenv("K")) : 768;
  std::vector<std::string> names;
  std::vector<Fn> fns;
  const std::string libs = getenv("LIBS");
  for (size_t p = 0; p <= libs.size();) {
    size_t q = libs.find(':', p);
    if (q == std::string::npos) q = libs.size();
    const std::string lib = libs.substr(p, q - p);
    p = q + 1;
    void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) return fprintf(stderr, "%s\n", dlerror()), 1;
    int n;
    Kn* k = ((variants_t)dlsym(h, "variants"))(&n);
    for (int i = 0; i < n; ++i) names.push_back(lib + " " + k[i].name), fns.push_back(k[i].fn);
  }
  sgemm_t sgemm = (sgemm_t)dlsym(dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL), "dnnl_sgemm");
  auto page_aligned = [](size_t n) {
    float* p = (float*)std::aligned_alloc(4096, (n * 4 + 4095) / 4096 * 4096);
    memset(p, 0, n * 4);
    return p;
  };
  float *x = page_aligned(M * K), *w = page_aligned(N * K), *c = page_aligned(M * N);
  srand(1);
  for (long i = 0; i < M * K; ++i) x[i] = rand() / float(RAND_MAX) - 0.5f;
  for (long i = 0; i < N * K; ++i) w[i] = rand() / float(RAND_MAX) - 0.5f;
  const int threads = getenv("THREADS") ? atoi(getenv("THREADS")) : 2;
  const bool pack_pool = getenv("POOL") && !strcmp(getenv("POOL"), "pack");
  dc_x86::SimpleThreadPool simple(threads);
  dietcode::CpuThreadPoolOptions o;
  o.threads = threads, o.pin = true, o.spin_microseconds = 200;
  dietcode::CpuThreadPool pinned(o);
  if (pack_pool) pinned.pin_caller();
  spy.inner = pack_pool ? pinned.runtime() : simple.runtime();
  DietcodeCpuRuntime rt = spy.inner;
  rt.parallel_for = &spy_for;
  const int nk = int(fns.size()) + 1;  // the kernels, then oneDNN
  std::vector<std::vector<double>> us(nk), idle(nk), late(nk);
  std::vector<float> evict((64 << 20) / 4), ref(M * N);
  sgemm('N', 'T', M, N, K, 1.f, x, K, w, K, 0.f, ref.data(), N);
  for (int rd = -1; rd < rounds; ++rd)
    for (int i0 = 0; i0 < nk; ++i0) {
      const int i = (i0 + std::max(rd, 0)) % nk;
      DietcodeArgs a{};
      a.a = x, a.b = w, a.c = c, a.batch = 1, a.m = M, a.n = N, a.k = K;
      for (size_t q = 0; q < evict.size(); q += 16) evict[q] += 1.0f;
      spy.begin[0] = spy.begin[1] = spy.end[0] = spy.end[1] = -1;
      spy.t0 = Clock::now();
      if (i == nk - 1)
        sgemm('N', 'T', M, N, K, 1.f, x, K, w, K, 0.f, c, N);
      else
        fns[i](&a, &rt);
      const double t = since_t0();
      if (rd < 0) {
        double e = 0;
        for (long q = 0; q < M * N; ++q) e = std::max(e, double(std::fabs(c[q] - ref[q])));
        if (e > 1e-3) printf("MISMATCH %s %g\n", i == nk - 1 ? "oneDNN" : names[i].c_str(), e);
        continue;
      }
      us[i].push_back(t);
      if (spy.end[0] >= 0 && spy.end[1] >= 0) {
        idle[i].push_back(std::fabs(spy.end[0] - spy.end[1]) / t);
        late[i].push_back(spy.begin[1] - spy.begin[0]);
      }
    }
  const double onednn = median(us[nk - 1]);
  for (int i = nk - 1; i >= 0; --i)
    printf("idle %.3f late %4.0f us  %-52s %9.1f us %6.1f GFLOP/s %.3f of oneDNN's\n",
           median(idle[i]), median(late[i]), i == nk - 1 ? "oneDNN sgemm" : names[i].c_str(),
           median(us[i]), 2.0 * M * N * K / median(us[i]) / 1e3, median(us[i]) / onednn);
}
