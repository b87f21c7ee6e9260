// Small-T harness (docs/results/cpu, AF): a dense op of M = MM rows (N = NN, K = KK) timed as bench
// times it: caches evicted, the pool asleep; the kernels of VARIANTS, a pack's dietcode_launch
// (PACK=libNAME.so), the same kernel from its own unit (./unit.so), oneDNN's sgemm and a plain read
// of W, rounds interleaved in rotating order.
#include <dlfcn.h>
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
#include "x86/cpu_thread_pool.h"  // src/ on the include path
using namespace dc_x86;
#ifndef MM
#define MM 16
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
#define BL(...) &run<OpKind::kDense, Epilogue::kNone, Params<__VA_ARGS__>, NN, KK>
struct K { const char* name; Fn fn; };
static const float* g_w; static float g_sink[64];
struct ReadCtx { const float* w; long n; };
static std::chrono::steady_clock::time_point g_t0; static double g_st[2], g_en[2];
static void read_task(void* c, int t, int) {
  g_st[t] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - g_t0).count();
  auto* r = (ReadCtx*)c; long per = r->n / 2; const float* p = r->w + t * per;
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (long i = 0; i < per; i += 32) { a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i)); a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8)); a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16)); a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24)); }
  _mm256_storeu_ps(g_sink + 8 * t, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  g_en[t] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - g_t0).count();
}
static int read_w(const DietcodeArgs* a, const DietcodeCpuRuntime* rt) {
  g_t0 = std::chrono::steady_clock::now(); ReadCtx c{(const float*)a->b, NN * KK}; rt->parallel_for(rt->pool, 2, read_task, &c); if (getenv("TRACE")) printf("read: start %.0f %.0f end %.0f %.0f\n", g_st[0], g_st[1], g_en[0], g_en[1]); return 0;
}
typedef int (*launch_t)(const char*, void* const*, int, const int64_t*, int, void*);
static launch_t g_launch; static const char* g_op = "qkv";
static int pack_fn(const DietcodeArgs* a, const DietcodeCpuRuntime*) {
  void* args[3] = {(void*)a->a, (void*)a->b, a->c}; int64_t T = a->m / 16; if (!getenv("PACK")) return 0;
  return g_launch(g_op, args, 3, &T, 1, nullptr);
}
static Fn g_unit;
static int unit_fn(const DietcodeArgs* a, const DietcodeCpuRuntime* rt) { return g_unit ? g_unit(a, rt) : 0; }
static K kernels[] = {
  {"PACK dietcode_launch", &pack_fn},
  {"pack's unit .so, harness pool", &unit_fn},
#include VARIANTS
  {"read W (2 threads)", &read_w},
};
int main(int argc, char** argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 31;
  void* h = dlopen("libdnnl.so.2", RTLD_NOW);
  if (void* u = dlopen("./unit.so", RTLD_NOW)) g_unit = (Fn)dlsym(u, "dietcode_cpu_19dbdd4103d9d61f");
  void* ph = dlopen(getenv("PACK"), RTLD_NOW);
  g_launch = (launch_t)dlsym(ph, "dietcode_launch");
  ((int (*)(int))dlsym(ph, "dietcode_set_num_threads"))(2);
  sgemm_t sg = (sgemm_t)dlsym(h, "dnnl_sgemm");
  const long M = MM, N = NN, Kd = KK;
  auto mk = [](size_t n) { size_t bytes = ((n * 4 + 4095) / 4096) * 4096; float* p = (float*)std::aligned_alloc(4096, bytes); memset(p, 0, bytes); return p; };
  float *x = mk(M * Kd), *w = mk(N * Kd), *c = mk(M * N), *r = mk(M * N);
  srand(1);
  for (long i = 0; i < M * Kd; ++i) x[i] = rand() / float(RAND_MAX) - 0.5f;
  for (long i = 0; i < N * Kd; ++i) w[i] = rand() / float(RAND_MAX) - 0.5f;
  dietcode::CpuThreadPoolOptions po; po.threads = 2; po.pin = true; po.spin_microseconds = 200;
  dietcode::CpuThreadPool pool(po); pool.pin_caller();
  DietcodeCpuRuntime rt = pool.runtime();
  DietcodeArgs a{}; a.a = x; a.b = w; a.c = c; a.batch = 1; a.m = M; a.n = N; a.k = Kd;
  const int nk = sizeof(kernels) / sizeof(kernels[0]);
  sg('N', 'T', M, N, Kd, 1.f, x, Kd, w, Kd, 0.f, r, N);
  for (int i = 0; i < nk - 1; ++i) { memset(c, 0, M*N*4);
    kernels[i].fn(&a, &rt);
    double e = 0; for (long j = 0; j < M * N; ++j) e = std::max(e, double(std::fabs(c[j] - r[j])));
    if (e > 1e-3) printf("MISMATCH %s %g\n", kernels[i].name, e);
  }
  std::vector<std::vector<double>> t(nk + 1);
  std::vector<float> ev((64 << 20) / 4);
  const bool warm = getenv("WARM");
  for (int rd = 0; rd < rounds; ++rd)
    for (int i0 = 0; i0 <= nk; ++i0) {
      int i = (i0 + rd) % (nk + 1);
      if (!warm) {
        struct E { float* p; long n; } e{ev.data(), (long)ev.size()};
        rt.parallel_for(rt.pool, 2, [](void* c, int t, int) { auto* e = (E*)c; long per = e->n / 2; for (long j = t * per; j < (t + 1) * per; j += 16) e->p[j] += 1; }, &e);
      } else if (i == nk) sg('N', 'T', M, N, Kd, 1.f, x, Kd, w, Kd, 0.f, c, N); else kernels[i].fn(&a, &rt);
      if (getenv("SLEEP")) { pool.wait_until_workers_sleep(20000); std::this_thread::sleep_for(std::chrono::microseconds(1000)); }
      auto s = std::chrono::steady_clock::now();
      if (i == nk) sg('N', 'T', M, N, Kd, 1.f, x, Kd, w, Kd, 0.f, c, N);
      else kernels[i].fn(&a, &rt);
      t[i].push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s).count());
    }
  for (int i = 0; i <= nk; ++i) {
    auto v = t[i]; std::sort(v.begin(), v.end());
    printf("%-58s med %8.1f us  min %8.1f  %6.1f GFLOP/s\n", i == nk ? "oneDNN sgemm" : kernels[i].name, v[v.size() / 2], v[0], 2.0 * M * N * Kd / v[v.size() / 2] / 1e3);
  }
}
