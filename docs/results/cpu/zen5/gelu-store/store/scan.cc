#include "ops_x86.h"
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
using namespace dc_x86;
static std::vector<float> w, x, c, bias, ev;
template <class P>
double one(long M, long N, long K) {
  const AMatrixMK W{w.data(), K};
  const BMatrixNK X{x.data(), K};
  std::vector<double> t;
  for (int r = 0; r < 5; ++r) {
    std::fill(ev.begin(), ev.end(), float(r));
    auto s = std::chrono::steady_clock::now();
    gemm_region<Avx2, P, Epilogue::kBias, true>(W, X, bias.data(), c.data(), N, K, 0, N, 0, M);
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s).count());
  }
  std::sort(t.begin(), t.end());
  return 2.0 * M * N * K / 1e3 / t[2];
}
template <int KC, int MC, int NC, int LO, int PF, int MR = 6, int NR = 16>
void row(long M, long N, long K) {
  printf("MR%d NR%d KC%4d MC%3d NC%4d LO%d PF%2d : %.1f\n", MR, NR, KC, MC, NC, LO, PF,
         one<Params<MR, NR, KC, MC, NC, LO, 0, 0, PF, 4>>(M, N, K));
  fflush(stdout);
}
int main(int argc, char** argv) {
  long M = 2048, N = argc > 1 ? atol(argv[1]) : 3072, K = argc > 2 ? atol(argv[2]) : 768;
  w.assign(N * K, 0.01f); x.assign(M * K, 0.02f); c.assign(M * N, 0); bias.assign(N, 0.1f); ev.assign(16 << 20, 0);
  row<768, 192, 384, 0, 8>(M, N, K);
  row<768, 48, 384, 0, 8>(M, N, K);
  row<768, 96, 96, 0, 8>(M, N, K);
  row<768, 192, 96, 1, 8>(M, N, K);
  row<384, 192, 384, 0, 8>(M, N, K);
  row<384, 96, 96, 0, 8>(M, N, K);
  row<384, 48, 768, 0, 8>(M, N, K);
  row<384, 192, 384, 1, 8>(M, N, K);
  row<256, 192, 384, 0, 8>(M, N, K);
  row<256, 96, 768, 0, 8>(M, N, K);
  row<256, 48, 1536, 1, 8>(M, N, K);
  row<768, 192, 384, 0, 0>(M, N, K);
  row<768, 192, 384, 0, 16>(M, N, K);
  row<384, 96, 96, 0, 16>(M, N, K);
  row<768, 192, 384, 0, 8, 4, 24>(M, N, K);
  row<384, 96, 96, 0, 8, 4, 24>(M, N, K);
  row<768, 192, 384, 0, 8, 12, 8>(M, N, K);
  row<384, 96, 96, 0, 8, 12, 8>(M, N, K);
  row<768, 192, 384, 0, 8>(M, N, K);
}
