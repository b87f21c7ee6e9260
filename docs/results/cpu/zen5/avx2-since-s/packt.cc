// The pack's qkv through its C ABI: warm and with caches evicted, median.
#include <dlfcn.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
using Clock = std::chrono::steady_clock;
typedef int (*Qkv)(const float*, const float*, float*, long, void*);
static std::vector<char> evict_buf(96 << 20);
static void evict() { for (size_t i = 0; i < evict_buf.size(); i += 64) evict_buf[i]++; }
int main(int argc, char** argv) {
  void* h = dlopen(argv[1], RTLD_NOW); if (!h) { puts(dlerror()); return 1; }
  Qkv f = (Qkv)dlsym(h, argv[2]);
  long N = atol(argv[3]), K = atol(argv[4]);
  int rounds = 15;
  for (int ai = 5; ai < argc; ++ai) {
    long T = atol(argv[ai]), M = 16 * T;
    float* x = (float*)aligned_alloc(4096, (M * K * 4 + 4095) / 4096 * 4096);
    float* w = (float*)aligned_alloc(4096, (N * K * 4 + 4095) / 4096 * 4096);
    float* y = (float*)aligned_alloc(4096, (M * N * 4 + 4095) / 4096 * 4096);
    for (long i = 0; i < M * K; ++i) x[i] = (i % 7) * 0.1f; for (long i = 0; i < N * K; ++i) w[i] = (i % 5) * 0.1f;
    std::vector<float> bias(N, 0.5f);
    auto call = [&] { typedef int (*F4)(const float*, const float*, const float*, float*, long, void*);
      if (strstr(argv[2], "fc")) return ((F4)f)(x, w, bias.data(), y, T, nullptr); return f(x, w, y, T, nullptr); };
    call();
    std::vector<double> tw, tc;
    for (int r = 0; r < rounds; ++r) {
      auto t0 = Clock::now(); call(); tw.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      evict();
      t0 = Clock::now(); call(); tc.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
    std::sort(tw.begin(), tw.end()); std::sort(tc.begin(), tc.end());
    printf("%s T=%ld warm %.1f us  evicted %.1f us  (%.1f GF/s evicted)\n", argv[2], T, tw[rounds/2]*1e6, tc[rounds/2]*1e6, 2.0*M*N*K/tc[rounds/2]*1e-9);
    free(x); free(w); free(y);
  }
}
