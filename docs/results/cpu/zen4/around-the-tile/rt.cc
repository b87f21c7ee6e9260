#include <immintrin.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
template <int MR, int NV>
__attribute__((noinline)) void kern(const float* a, const float* b, int kc, float* c, long reps) {
  for (long r = 0; r < reps; ++r) {
    __m512 acc[MR][NV];
    for (int i = 0; i < MR; ++i) for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_ps();
    const float* pa = a; const float* pb = b;
#pragma GCC unroll 4
    for (int k = 0; k < kc; ++k) {
      __m512 bv[NV];
      for (int v = 0; v < NV; ++v) bv[v] = _mm512_load_ps(pb + 16 * v);
      for (int i = 0; i < MR; ++i) {
        __m512 av = _mm512_set1_ps(pa[i]);
        for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_fmadd_ps(av, bv[v], acc[i][v]);
      }
      pa += MR; pb += 16 * NV;
    }
    for (int i = 0; i < MR; ++i) for (int v = 0; v < NV; ++v)
      _mm512_storeu_ps(c + (i * NV + v) * 16, _mm512_add_ps(acc[i][v], _mm512_loadu_ps(c + (i * NV + v) * 16)));
  }
}
template <int MR, int NV> void run(const char* name, int kc) {

  float* a = (float*)aligned_alloc(64, 4 * MR * kc);
  float* b = (float*)aligned_alloc(64, 64 * NV * kc);
  float* c = (float*)aligned_alloc(64, 64 * MR * NV);
  for (int i = 0; i < MR * kc; ++i) a[i] = 1e-3f;
  for (int i = 0; i < 16 * NV * kc; ++i) b[i] = 1e-3f;
  for (int i = 0; i < 16 * MR * NV; ++i) c[i] = 0;
  long reps = 2560000 / kc; std::vector<double> g;
  for (int t = 0; t < 15; ++t) {
    auto s = std::chrono::steady_clock::now();
    kern<MR, NV>(a, b, kc, c, reps);
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s).count();
    g.push_back(2.0 * MR * NV * 16 * kc * reps / us / 1e3);
  }
  std::sort(g.begin(), g.end());
  printf("%-8s kc %4d median %.1f max %.1f GFLOP/s\n", name, kc, g[g.size() / 2], g.back());
}
int main() { for (int kc : {64, 128, 256, 512, 1024}) { run<6,4>("6x64", kc); run<12,2>("12x32", kc); run<8,3>("8x48", kc); } }
