// The same kernel two ways, alternating, caches evicted and pools asleep before each call:
// through the pack's C ABI (its own pool) and compiled here from the templates (this pool).
#include <dlfcn.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "x86/cpu_thread_pool.h"
#include "x86/ops_x86.h"
using dc_x86::Epilogue; using dc_x86::OpKind; using dc_x86::Params;
using Clock = std::chrono::steady_clock;
constexpr auto V4 = dc_x86::Isa::kAvx512;
using K1 = Params<6, 64, 512, 96, 512, 0, 0, 0, 4, 1, V4>;  // pack a's qkv kernel 1 (T 24..116)
typedef int (*Qkv)(const float*, const float*, float*, long, void*);
static std::vector<char> evict_buf(96 << 20);
static void evict() { for (size_t i = 0; i < evict_buf.size(); i += 64) evict_buf[i]++; }
int main(int argc, char** argv) {
  void* h = dlopen(argv[1], RTLD_NOW); if (!h) { puts(dlerror()); return 1; }
  Qkv f = (Qkv)dlsym(h, "bert_dense_cpu_qkv");
  const long T = atol(argv[2]), M = 16 * T, N = 2304, K = 768; const int rounds = atoi(argv[3]);
  dietcode::CpuThreadPool pool({.threads = 2, .pin = true});
  pool.pin_caller();
  DietcodeCpuRuntime rt = pool.runtime();
  float* x = (float*)aligned_alloc(4096, M * K * 4); float* w = (float*)aligned_alloc(4096, N * K * 4);
  float* y = (float*)aligned_alloc(4096, M * N * 4);
  for (long i = 0; i < M * K; ++i) x[i] = (i % 7) * 0.1f; for (long i = 0; i < N * K; ++i) w[i] = (i % 5) * 0.1f;
  DietcodeArgs a{}; a.a = x; a.b = w; a.c = y; a.batch = 1; a.m = M; a.n = N; a.k = K;
  auto here = [&] { dc_x86::run<OpKind::kDense, Epilogue::kNone, K1>(&a, &rt); };
  auto pack = [&] { f(x, w, y, T, nullptr); };
  ((int (*)(int))dlsym(h, "dietcode_set_num_threads"))(2);
  here(); pack();
  std::vector<double> tp, th;
  for (int r = 0; r < rounds; ++r)
    for (int which = 0; which < 2; ++which) {
      evict(); pool.wait_until_workers_sleep(5000); usleep(1000);
      auto t0 = Clock::now();
      ((r + which) % 2 ? (void)pack() : (void)here());
      double t = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
      ((r + which) % 2 ? tp : th).push_back(t);
    }
  std::sort(tp.begin(), tp.end()); std::sort(th.begin(), th.end());
  printf("T=%ld rounds %d: pack median %.1f us (min %.1f), here median %.1f us (min %.1f): pack/here %.3f\n", T, rounds,
         tp[rounds / 2], tp[0], th[rounds / 2], th[0], tp[rounds / 2] / th[rounds / 2]);
}
