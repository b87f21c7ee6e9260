// Two pinned threads run zmm FMA chains together for 20 ms every 250 ms; per sample, each
// thread's GFLOP/s. Shows whether (and how long) the two vCPUs share one core's FMA units.
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
using Clock = std::chrono::steady_clock;
std::atomic<int> go{0};
double gf[2];
static void pin(int cpu) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s); pthread_setaffinity_np(pthread_self(), sizeof s, &s); }
__attribute__((noinline)) static double fma_for(double ms) {
  __m512 a[12]; for (int i = 0; i < 12; ++i) a[i] = _mm512_set1_ps(1.0f + i * 1e-3f);
  const __m512 m = _mm512_set1_ps(0.9999f), c = _mm512_set1_ps(1e-4f);
  long iters = 0; auto t0 = Clock::now(); double el = 0;
  do {
    for (int r = 0; r < 256; ++r)
      for (int i = 0; i < 12; ++i) a[i] = _mm512_fmadd_ps(a[i], m, c);
    iters += 256;
    el = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  } while (el < ms);
  __m512 s = a[0]; for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, a[i]);
  volatile float sink = _mm512_reduce_add_ps(s); (void)sink;
  return iters * 12.0 * 32 / (el * 1e6);  // GFLOP/s
}
int main(int argc, char** argv) {
  int samples = argc > 1 ? atoi(argv[1]) : 480;
  std::thread t([&] { pin(1); for (int s = 0; s < samples; ++s) { while (go.load() != 2 * s + 1) {} gf[1] = fma_for(20); go.fetch_add(1); } });
  pin(0);
  auto start = Clock::now();
  for (int s = 0; s < samples; ++s) {
    go.store(2 * s + 1); gf[0] = fma_for(20);
    while (go.load() != 2 * s + 2) {}
    double at = std::chrono::duration<double>(Clock::now() - start).count();
    std::printf("%.2f %.1f %.1f\n", at, gf[0], gf[1]); std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(230));
  }
  t.join();
}
