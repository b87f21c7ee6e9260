// One thread: a BLIS kernel's time with caches warm and with them evicted before each call.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>
#include <array>
#include <thread>
#include "x86/cpu_thread_pool.h"
#include "x86/ops_x86.h"
using dc_x86::Epilogue; using dc_x86::OpKind; using dc_x86::Params;
using Clock = std::chrono::steady_clock;
template <class P> int dense(const DietcodeArgs* a, const DietcodeCpuRuntime* rt) {
  return dc_x86::run<OpKind::kDense, Epilogue::kBias, P>(a, rt);
}
constexpr auto V4 = dc_x86::Isa::kAvx512;
struct C { const char* name; int (*fn)(const DietcodeArgs*, const DietcodeCpuRuntime*); };
const C cands[] = {
 {"fc2 6x64 kc384 mc96 nc768 pf8 u1 tm1", dense<Params<6, 64, 384, 96, 768, 0, 1, 0, 8, 1, V4>>},
 {"proj 6x64 kc384 mc144 nc512 pf8 u4", dense<Params<6, 64, 384, 144, 512, 0, 0, 0, 8, 4, V4>>},
 {"proj16 6x64 kc384 mc144 nc512 pf4 u4 tm1", dense<Params<6, 64, 384, 144, 512, 0, 1, 0, 4, 4, V4>>},
 {"qkv 6x64 kc512 mc96 nc512 pf4 u1", dense<Params<6, 64, 512, 96, 512, 0, 0, 0, 4, 1, V4>>},
 {"qkv0 6x32 kc256 mc72 nc3072 pa1 shareW", dense<Params<6, 32, 256, 72, 3072, 0, 0, 1, 0, 4, V4, 0, 0, 1>>},
};
constexpr int NC_ = sizeof(cands) / sizeof(cands[0]);
static std::vector<char> evict_buf(96 << 20);
static void evict() { for (size_t i = 0; i < evict_buf.size(); i += 64) evict_buf[i]++; }
int main(int argc, char** argv) {
  std::vector<std::array<long,3>> shapes;
  for (const char* e = getenv("SHAPES"); e && *e;) { long m = strtol(e, (char**)&e, 10); ++e; long n = strtol(e, (char**)&e, 10); ++e; long k = strtol(e, (char**)&e, 10); shapes.push_back({m, n, k}); if (*e == ',') ++e; }
  std::vector<int> use; for (const char* e = getenv("CANDS"); e && *e;) { use.push_back(strtol(e, (char**)&e, 10)); if (*e == ',') ++e; }
  if (use.empty()) for (int c = 0; c < NC_; ++c) use.push_back(c);
  int rounds = argc > 1 ? atoi(argv[1]) : 15;
  int threads = getenv("THREADS") ? atoi(getenv("THREADS")) : 1;
  dietcode::CpuThreadPool pool({.threads = threads, .pin = true});
  pool.pin_caller();
  DietcodeCpuRuntime rt = pool.runtime();
  for (auto& s : shapes) {
    long M = s[0], N = s[1], K = s[2];
    float* x = (float*)aligned_alloc(64, M * K * 4); float* w = (float*)aligned_alloc(64, N * K * 4);
    float* y = (float*)aligned_alloc(64, M * N * 4); std::vector<float> bias(N, 0.5f);
    std::mt19937 rng(7); std::uniform_real_distribution<float> u(-1, 1);
    for (long i = 0; i < M * K; ++i) x[i] = u(rng); for (long i = 0; i < N * K; ++i) w[i] = u(rng);
    memset(y, 0, M*N*4);
    DietcodeArgs a{}; a.a = x; a.b = w; a.bias = bias.data(); a.c = y; a.batch = 1; a.m = M; a.n = N; a.k = K;
    std::vector<std::vector<double>> tw(NC_), tc(NC_);
    for (int c : use) cands[c].fn(&a, &rt);
    for (int r = 0; r < rounds; ++r)
      for (int c : use) {
        auto t0 = Clock::now(); cands[c].fn(&a, &rt);
        tw[c].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        if (getenv("SLEEP")) { auto z = Clock::now(); while (Clock::now() - z < std::chrono::milliseconds(8)) {} } else evict();
        { volatile float sink = 0; const char* m = getenv("WARM");
          if (m && strchr(m,'w')) for (long i = 0; i < N*K; i += 16) sink += w[i];
          if (m && strchr(m,'x')) for (long i = 0; i < M*K; i += 16) sink += x[i];
          if (m && strchr(m,'y')) for (long i = 0; i < M*N; i += 16) sink += y[i]; }
        t0 = Clock::now(); cands[c].fn(&a, &rt);
        tc[c].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      }
    for (int c : use) {
      std::sort(tw[c].begin(), tw[c].end()); std::sort(tc[c].begin(), tc[c].end());
      double w_ = tw[c][rounds/2], c_ = tc[c][rounds/2];
      std::printf("%ldx%ldx%ld %-40s warm %8.1f us %6.1f GF/s  evicted %8.1f us %6.1f GF/s  (+%.1f%%)\n", M, N, K, cands[c].name,
        w_*1e6, 2.0*M*N*K/w_*1e-9, c_*1e6, 2.0*M*N*K/c_*1e-9, (c_/w_-1)*100);
    }
    free(x); free(w); free(y);
  }
}
