#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
// Cost of C's writes under a 6x16 kernel: tiles computed from L1 operands (kc k-steps), then
// stored to a C of M x N (mode 0: one small buffer, no traffic; 1: normal stores; 2: NT stores).
template <int MODE>
__attribute__((noinline)) void gemm(const float* a, const float* b, int kc, float* c, long M,
                                    long N, float* sink) {
  for (long i = 0; i + 6 <= M; i += 6)
    for (long j = 0; j < N; j += 16) {
      __m256 acc[6][2];
      for (int r = 0; r < 6; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
      const float* pa = a;
      const float* pb = b;
#pragma GCC unroll 4
      for (int k = 0; k < kc; ++k) {
        __m256 b0 = _mm256_load_ps(pb), b1 = _mm256_load_ps(pb + 8);
        for (int r = 0; r < 6; ++r) {
          __m256 av = _mm256_broadcast_ss(pa + r);
          acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
          acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
        }
        pa += 6;
        pb += 16;
      }
      float* cc = MODE == 0 ? sink : c + i * N + j;
      long ld = MODE == 0 ? 16 : N;
      for (int r = 0; r < 6; ++r) {
        if (MODE == 2) {
          _mm256_stream_ps(cc + r * ld, acc[r][0]);
          _mm256_stream_ps(cc + r * ld + 8, acc[r][1]);
        } else {
          _mm256_store_ps(cc + r * ld, acc[r][0]);
          _mm256_store_ps(cc + r * ld + 8, acc[r][1]);
        }
      }
    }
  _mm_sfence();
}
int main(int argc, char** argv) {
  long M = 2046, N = argc > 1 ? atol(argv[1]) : 3072;
  int kc = argc > 2 ? atoi(argv[2]) : 768;
  float* a = (float*)aligned_alloc(64, 4 * 6 * kc);
  float* b = (float*)aligned_alloc(64, 4 * 16 * kc);
  float* c = (float*)aligned_alloc(64, 4 * M * N);
  float* sink = (float*)aligned_alloc(64, 4 * 96);
  float* ev = (float*)aligned_alloc(64, 64 << 20);
  for (int i = 0; i < 6 * kc; ++i) a[i] = 1e-3f;
  for (int i = 0; i < 16 * kc; ++i) b[i] = 1e-3f;
  memset(c, 0, 4 * M * N);
  memset(ev, 0, 64 << 20);
  std::vector<double> g[3];
  for (int t = 0; t < 9; ++t)
    for (int mode = 0; mode < 3; ++mode) {
      memset(ev, t, 64 << 20);  // evict
      auto s = std::chrono::steady_clock::now();
      if (mode == 0) gemm<0>(a, b, kc, c, M, N, sink);
      if (mode == 1) gemm<1>(a, b, kc, c, M, N, sink);
      if (mode == 2) gemm<2>(a, b, kc, c, M, N, sink);
      double us =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s).count();
      g[mode].push_back(2.0 * M * N * kc / us / 1e3);
    }
  const char* names[] = {"no C traffic", "normal stores", "NT stores"};
  for (int m = 0; m < 3; ++m) {
    std::sort(g[m].begin(), g[m].end());
    printf("N=%ld kc=%d %-14s median %.1f GFLOP/s\n", N, kc, names[m], g[m][4]);
  }
}
