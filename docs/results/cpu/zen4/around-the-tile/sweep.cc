// One thread, operands 64-byte aligned and warm: whole-GEMM GFLOP/s of BLIS blockings, rounds
// interleaved, median per kernel.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
#include <array>
#include "x86/cpu_thread_pool.h"
#include "x86/ops_x86.h"
using dc_x86::Epilogue; using dc_x86::OpKind; using dc_x86::Params; using I5 = std::integral_constant<dc_x86::Isa, dc_x86::Isa::kAvx512>;
using Clock = std::chrono::steady_clock;
template <class P> int dense(const DietcodeArgs* a, const DietcodeCpuRuntime* rt) {
  return dc_x86::run<OpKind::kDense, Epilogue::kBias, P>(a, rt);
}
constexpr auto V4 = dc_x86::Isa::kAvx512;
//                     MR NR  KC  MC   NC  LO TM PA PF UN
struct C { const char* name; int (*fn)(const DietcodeArgs*, const DietcodeCpuRuntime*); };
const C cands[] = {
 {"seed 6x64 kc512 mc96 nc512 pf4 u1", dense<Params<6, 64, 512, 96, 512, 0, 0, 0, 4, 1, V4>>},
 {"kc256", dense<Params<6, 64, 256, 96, 512, 0, 0, 0, 4, 1, V4>>},
 {"kc128", dense<Params<6, 64, 128, 96, 512, 0, 0, 0, 4, 1, V4>>},
 {"kc384 nc768", dense<Params<6, 64, 384, 96, 768, 0, 0, 0, 4, 1, V4>>},
 {"mc48", dense<Params<6, 64, 512, 48, 512, 0, 0, 0, 4, 1, V4>>},
 {"mc192 nc256", dense<Params<6, 64, 512, 192, 256, 0, 0, 0, 4, 1, V4>>},
 {"pf8", dense<Params<6, 64, 512, 96, 512, 0, 0, 0, 8, 1, V4>>},
 {"pf16", dense<Params<6, 64, 512, 96, 512, 0, 0, 0, 16, 1, V4>>},
 {"pf0", dense<Params<6, 64, 512, 96, 512, 0, 0, 0, 0, 1, V4>>},
 {"packA", dense<Params<6, 64, 512, 96, 512, 0, 0, 1, 4, 1, V4>>},
 {"u4", dense<Params<6, 64, 512, 96, 512, 0, 0, 0, 4, 4, V4>>},
 {"loop1", dense<Params<6, 64, 512, 96, 512, 1, 0, 0, 4, 1, V4>>},
 {"12x32 kc512 mc96 nc512", dense<Params<12, 32, 512, 96, 512, 0, 0, 0, 4, 1, V4>>},
 {"8x48 kc512 mc96 nc480", dense<Params<8, 48, 512, 96, 480, 0, 0, 0, 4, 1, V4>>},
 {"14x32 kc512 mc112 nc512", dense<Params<14, 32, 512, 112, 512, 0, 0, 0, 4, 1, V4>>},
 {"6x64 kc512 mc96 nc3072", dense<Params<6, 64, 512, 96, 3072, 0, 0, 0, 4, 1, V4>>},
};
constexpr int NC_ = sizeof(cands) / sizeof(cands[0]);
int main(int argc, char** argv) {
  std::vector<std::array<long,3>> shapes;
  for (const char* e = getenv("SHAPES"); e && *e;) { long m = strtol(e, (char**)&e, 10); ++e; long n = strtol(e, (char**)&e, 10); ++e; long k = strtol(e, (char**)&e, 10); shapes.push_back({m, n, k}); if (*e == ',') ++e; }
  std::vector<int> use; for (const char* e = getenv("CANDS"); e && *e;) { use.push_back(strtol(e, (char**)&e, 10)); if (*e == ',') ++e; }
  if (use.empty()) for (int c = 0; c < NC_; ++c) use.push_back(c);
  const int S = shapes.size();
  int rounds = argc > 1 ? atoi(argv[1]) : 7;
  dietcode::CpuThreadPool pool({.threads = 1, .pin = true});
  pool.pin_caller();
  DietcodeCpuRuntime rt = pool.runtime();
  std::printf("%-28s", "kernel"); for (auto& s : shapes) std::printf(" %5ldx%4ldx%4ld", s[0], s[1], s[2]); std::printf("  (GFLOP/s, 1 thread, median of %d)\n", rounds);
  std::vector<std::vector<double>> g(NC_, std::vector<double>(S));
  for (int si = 0; si < S; ++si) {
    long M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
    float* x = (float*)aligned_alloc(64, M * K * 4); float* w = (float*)aligned_alloc(64, N * K * 4);
    float* y = (float*)aligned_alloc(64, M * N * 4); std::vector<float> bias(N, 0.5f);
    std::mt19937 rng(7); std::uniform_real_distribution<float> u(-1, 1);
    for (long i = 0; i < M * K; ++i) x[i] = u(rng); for (long i = 0; i < N * K; ++i) w[i] = u(rng);
    DietcodeArgs a{}; a.a = x; a.b = w; a.bias = bias.data(); a.c = y; a.batch = 1; a.m = M; a.n = N; a.k = K;
    std::vector<std::vector<double>> t(NC_);
    for (int c : use) cands[c].fn(&a, &rt);
    for (int r = 0; r < rounds; ++r)
      for (int c : use) {
        auto t0 = Clock::now(); cands[c].fn(&a, &rt);
        t[c].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      }
    for (int c : use) { std::sort(t[c].begin(), t[c].end()); g[c][si] = 2.0 * M * N * K / t[c][t[c].size() / 2] * 1e-9; }
    free(x); free(w); free(y);
  }
  for (int c : use) { std::printf("%-28s", cands[c].name); for (int si = 0; si < S; ++si) std::printf(" %15.1f", g[c][si]); std::printf("\n"); }
}
