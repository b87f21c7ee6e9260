#include "ops_x86.h"
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
using namespace dc_x86;
static std::vector<float> w, x, c, bias, ev;
template <class P>
double one(long M, long N, long K, bool evict) {
  const AMatrixMK W{w.data(), K};
  const BMatrixNK X{x.data(), K};
  std::vector<double> t;
  for (int r = 0; r < 41; ++r) {
    if (evict) std::fill(ev.begin(), ev.end(), float(r));
    auto s = std::chrono::steady_clock::now();
    gemm_region<Avx2, P, Epilogue::kNone, true>(W, X, nullptr, c.data(), N, K, 0, N, 0, M);
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s).count());
  }
  std::sort(t.begin(), t.end());
  return 2.0 * M * N * K / 1e3 / t[20];
}
int main(int argc, char** argv) {
  long M = argc > 1 ? atol(argv[1]) : 128, N = 2304, K = 768;
  w.assign(N * K, 0.01f); x.assign(M * K, 0.02f); c.assign(M * N, 0); bias.assign(N, 0.1f); ev.assign(16 << 20, 0);
  for (int e = 0; e < 2; ++e) {
    printf("M=%ld evict=%d  k4 (KC1024 LO1 MC144 NC96 U2): %.1f   k5 (KC768 LO1 MC96 NC192 U2): %.1f   fc1-like (KC768 LO0 MC192 NC384 U4): %.1f\n", M, e,
         one<Params<6, 16, 1024, 144, 96, 1, 0, 0, 8, 2>>(M, N, K, e),
         one<Params<6, 16, 768, 96, 192, 1, 0, 0, 8, 2>>(M, N, K, e),
         one<Params<6, 16, 768, 192, 384, 0, 0, 0, 8, 4>>(M, N, K, e));
  }
}
