#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
// Register-kernel ceiling: MRxNR tile, A broadcast, B vector loads; all operands in L1.
template <int MR, int NV>
__attribute__((noinline)) void kern(const float* a, const float* b, int kc, float* c, long reps) {
  for (long r = 0; r < reps; ++r) {
    __m256 acc[MR][NV];
    for (int i = 0; i < MR; ++i)
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_setzero_ps();
    const float* pa = a;
    const float* pb = b;
#pragma GCC unroll 4
    for (int k = 0; k < kc; ++k) {
      __m256 bv[NV];
      for (int v = 0; v < NV; ++v) bv[v] = _mm256_load_ps(pb + 8 * v);
      for (int i = 0; i < MR; ++i) {
        __m256 av = _mm256_broadcast_ss(pa + i);
        for (int v = 0; v < NV; ++v) acc[i][v] = _mm256_fmadd_ps(av, bv[v], acc[i][v]);
      }
      pa += MR;
      pb += 8 * NV;
    }
    for (int i = 0; i < MR; ++i)
      for (int v = 0; v < NV; ++v)
        _mm256_storeu_ps(c + (i * NV + v) * 8,
                         _mm256_add_ps(acc[i][v], _mm256_loadu_ps(c + (i * NV + v) * 8)));
  }
}
template <int MR, int NV>
void run(const char* name) {
  const int kc = 256;
  float* a = (float*)aligned_alloc(64, 4 * MR * kc);
  float* b = (float*)aligned_alloc(64, 32 * NV * kc);
  float* c = (float*)aligned_alloc(64, 32 * MR * NV);
  for (int i = 0; i < MR * kc; ++i) a[i] = 1e-3f;
  for (int i = 0; i < 8 * NV * kc; ++i) b[i] = 1e-3f;
  for (int i = 0; i < 8 * MR * NV; ++i) c[i] = 0;
  long reps = 20000;
  std::vector<double> g;
  for (int t = 0; t < 15; ++t) {
    auto s = std::chrono::steady_clock::now();
    kern<MR, NV>(a, b, kc, c, reps);
    double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s).count();
    g.push_back(2.0 * MR * NV * 8 * kc * reps / us / 1e3);
  }
  std::sort(g.begin(), g.end());
  printf("%-8s median %.1f max %.1f GFLOP/s\n", name, g[g.size() / 2], g.back());
}
int main() {
  run<6, 2>("6x16");
  run<4, 3>("4x24");
  run<3, 4>("3x32");
  run<2, 6>("2x48");
  run<12, 1>("12x8");
  run<5, 2>("5x16");
  run<6, 2>("6x16");
  run<4, 3>("4x24");
}
