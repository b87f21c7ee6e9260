// x86_gemm_bench: GFLOP/s of the x86 dense template (Y = GELU(X W^T + bias)) on BERT-base shapes,
// for a handful of parameter sets, 1 and 2 threads. Not a test: it asserts nothing.
//
// Built with -march=x86-64-v3 it times AVX2 candidates (c0..c17); with -march=x86-64-v4 also
// AVX-512 ones (c18..).
//
//   x86_gemm_bench [--threads 1,2] [--m 16,128,512,2048] [--cands 0,1,...] [--seconds 0.4]
//                  [--cold 1] [--evict 0|1] [--asleep 0|1] [--read 1] [--gap US] [--spin US]
//
// Candidates are interleaved round-robin per shape (one call each per round) and the median per
// candidate is reported, because timings on the shared 2-core machines drift by tens of percent.
// The kernels run on the packs' own pool (src/x86/cpu_thread_pool.h). By default operands stay
// warm in the caches between calls (W fits L3), as in a tuning loop without flush; --cold 1
// times every call as `dietcode bench` does: every cache level evicted first (64 MiB written by
// the pool's threads) and the pool's threads asleep when the call starts, which is what small
// M is sensitive to (W then streams from DRAM, and the woken thread starts late). --evict and
// --asleep take those two apart (--cold 1 is both): with --asleep 0 the pool's threads spin
// between calls, so only the caches are cold; with --evict 0 only the pool is. --read 1 adds a
// column: W read once by the pool's threads, each its share, in the same rotation (GB/s), which
// is what the memory gives a kernel that streams W at small M. With the pool asleep, a line
// after each thread count says how late its tasks start (the caller's and the woken threads').
// --gap US has the caller work US microseconds before each call, as a model runs its other
// layers between a pack's launches, and leaves the pool as the gap leaves it: asleep if the
// gap outlasts how long its threads poll after a call, --spin US (by default 20 with
// --asleep 1, as the tuner's pool, and a second otherwise; a pack's pool polls 200 us).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "x86/cpu_thread_pool.h"
#include "x86/ops_x86.h"

namespace {

using dc_x86::Epilogue;
using dc_x86::OpKind;
using dc_x86::Params;

template <class P>
int dense_gelu(const DietcodeArgs* a, const DietcodeCpuRuntime* rt) {
  return dc_x86::run<OpKind::kDense, Epilogue::kBiasGelu, P>(a, rt);
}

template <class P>
int dot_gelu(const DietcodeArgs* a, const DietcodeCpuRuntime* rt) {
  return dc_x86::run_dot<OpKind::kDense, Epilogue::kBiasGelu, P>(a, rt);
}

template <class P>
int wbcast_gelu(const DietcodeArgs* a, const DietcodeCpuRuntime* rt) {
  return dc_x86::run_wbcast<OpKind::kDense, Epilogue::kBiasGelu, P>(a, rt);
}

// Reads W (N x K floats) once, the pool's threads each a contiguous share, with vector loads.
// N x K is a multiple of 32 for every shape here, so the unrolled loop never reads past W.
int read_w(const DietcodeArgs* a, const DietcodeCpuRuntime* rt) {
  struct Read {
    const float* w;
    long floats, share;
    float* sums;
  } read{static_cast<const float*>(a->b), a->n * a->k, 0, static_cast<float*>(a->c)};
  read.share = (read.floats / rt->threads + 31) / 32 * 32;
  rt->parallel_for(
      rt->pool, rt->threads,
      [](void* ctx, int t, int) {
        const auto* r = static_cast<const Read*>(ctx);
        __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
        for (long i = t * r->share; i < std::min(r->floats, (t + 1) * r->share); i += 32) {
          s0 = _mm256_add_ps(s0, _mm256_loadu_ps(r->w + i));
          s1 = _mm256_add_ps(s1, _mm256_loadu_ps(r->w + i + 8));
          s2 = _mm256_add_ps(s2, _mm256_loadu_ps(r->w + i + 16));
          s3 = _mm256_add_ps(s3, _mm256_loadu_ps(r->w + i + 24));
        }
        _mm256_storeu_ps(r->sums + 8 * t,
                         _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
      },
      &read);
  return 0;
}

struct Candidate {
  const char* name;
  DietcodeCpuKernelFn fn;
};

//                 MR  NR   KC   MC    NC  LOOP TM PACKA PF UNROLL
const Candidate kCandidates[] = {
    {"6x16 kc256 mc72 nc3072 (default)", dense_gelu<Params<6, 16, 256, 72, 3072, 0, 0, 1, 0, 4>>},
    {"6x16 kc384 mc144 nc3072", dense_gelu<Params<6, 16, 384, 144, 3072, 0, 0, 1, 0, 4>>},
    {"6x16 kc256 mc72 loop1", dense_gelu<Params<6, 16, 256, 72, 3072, 1, 0, 1, 0, 4>>},
    {"4x24 kc256 mc64", dense_gelu<Params<4, 24, 256, 64, 3072, 0, 0, 1, 0, 4>>},
    {"6x16 kc256 mc72 directA", dense_gelu<Params<6, 16, 256, 72, 3072, 0, 0, 0, 0, 4>>},
    {"6x16 kc256 mc72 pf8", dense_gelu<Params<6, 16, 256, 72, 3072, 0, 0, 1, 8, 4>>},
    {"6x16 kc256 mc72 tm1 (split N)", dense_gelu<Params<6, 16, 256, 72, 3072, 0, 1, 1, 0, 4>>},
    {"6x16 kc256 mc72 tm2 (split M)", dense_gelu<Params<6, 16, 256, 72, 3072, 0, 2, 1, 0, 4>>},
    {"6x16 kc512 mc96 nc1536", dense_gelu<Params<6, 16, 512, 96, 1536, 0, 0, 1, 0, 4>>},
    {"4x24 kc384 mc128 directA", dense_gelu<Params<4, 24, 384, 128, 3072, 0, 0, 0, 0, 4>>},
    // The W-broadcast form at small M (c10..c15): blockings tunes chose for BERT at M = 16,
    // W's rows prefetched PREFETCH k steps ahead, and the same with the next tile's rows.
    {"wbcast 6x16 kc768 mc192 nc384 tm4 pf8",
     wbcast_gelu<Params<6, 16, 768, 192, 384, 0, 4, 0, 8, 4>>},
    {"wbcast 6x16 kc768 mc192 nc384 tm4 pf8 next tile",
     wbcast_gelu<Params<6, 16, 768, 192, 384, 0, 4, 0, 8, 4, dc_x86::Isa::kAvx2, 0, 1>>},
    {"wbcast 6x16 kc768 mc192 nc384 loop1 tm4 pf16",
     wbcast_gelu<Params<6, 16, 768, 192, 384, 1, 4, 0, 16, 2>>},
    {"wbcast 6x16 kc768 mc192 nc384 loop1 tm4 pf16 next tile",
     wbcast_gelu<Params<6, 16, 768, 192, 384, 1, 4, 0, 16, 2, dc_x86::Isa::kAvx2, 0, 1>>},
    {"wbcast 6x16 kc1024 mc144 nc96 loop1 tm4 pf8",
     wbcast_gelu<Params<6, 16, 1024, 144, 96, 1, 4, 0, 8, 2>>},
    {"wbcast 6x16 kc1024 mc144 nc96 loop1 tm4 pf8 next tile",
     wbcast_gelu<Params<6, 16, 1024, 144, 96, 1, 4, 0, 8, 2, dc_x86::Isa::kAvx2, 0, 1>>},
    // The BLIS form with the blockings tunes chose for qkv, proj and fc2 from T = 16 up (c16, c17).
    {"6x16 kc128 mc192 nc1024 directA pf4 unroll8",
     dense_gelu<Params<6, 16, 128, 192, 1024, 0, 0, 0, 4, 8>>},
    {"6x16 kc192 mc48 nc1536 directA tm1 pf8 unroll8",
     dense_gelu<Params<6, 16, 192, 48, 1536, 0, 1, 0, 8, 8>>},
#ifdef __AVX512F__  // built with -march=x86-64-v4: AVX-512 candidates too (c18..)
    {"avx512 14x32 kc256 mc112",
     dense_gelu<Params<14, 32, 256, 112, 3072, 0, 0, 1, 0, 4, dc_x86::Isa::kAvx512>>},
    {"avx512 14x32 kc384 mc56 loop1",
     dense_gelu<Params<14, 32, 384, 56, 3072, 1, 0, 1, 0, 4, dc_x86::Isa::kAvx512>>},
    {"avx512 6x64 kc256 mc96",
     dense_gelu<Params<6, 64, 256, 96, 3072, 0, 0, 1, 0, 4, dc_x86::Isa::kAvx512>>},
    {"avx512 6x64 kc512 mc96 nc512 directA pf4 (seed)",
     dense_gelu<Params<6, 64, 512, 96, 512, 0, 0, 0, 4, 1, dc_x86::Isa::kAvx512>>},
    {"avx512 6x64 kc512 mc96 nc512 packA pf4",
     dense_gelu<Params<6, 64, 512, 96, 512, 0, 0, 1, 4, 1, dc_x86::Isa::kAvx512>>},
    {"avx512 6x64 kc256 mc192 nc3072 directA pf4",
     dense_gelu<Params<6, 64, 256, 192, 3072, 0, 0, 0, 4, 1, dc_x86::Isa::kAvx512>>},
    {"avx512 8x48 kc384 mc96",
     dense_gelu<Params<8, 48, 384, 96, 3072, 0, 0, 1, 0, 4, dc_x86::Isa::kAvx512>>},
    {"avx512 dot 4x6 kc768", dot_gelu<dc_x86::DotParams<4, 6, 768, 1, 2, dc_x86::Isa::kAvx512>>},
    // The W-broadcast form (c23..): MR rows of W by NR rows of X.
    {"avx512 wbcast 28x16 kc768 mc168 nc768 pf8",
     wbcast_gelu<Params<28, 16, 768, 168, 768, 0, 0, 0, 8, 4, dc_x86::Isa::kAvx512>>},
    {"avx512 wbcast 14x32 kc768 mc168 nc768 pf8",
     wbcast_gelu<Params<14, 32, 768, 168, 768, 0, 0, 0, 8, 4, dc_x86::Isa::kAvx512>>},
    {"avx512 wbcast 14x32 kc768 loop1 pf8",
     wbcast_gelu<Params<14, 32, 768, 168, 768, 1, 0, 0, 8, 4, dc_x86::Isa::kAvx512>>},
    {"avx512 wbcast 6x64 kc768 loop1 pf8",
     wbcast_gelu<Params<6, 64, 768, 168, 768, 1, 0, 0, 8, 4, dc_x86::Isa::kAvx512>>},
    {"avx512 wbcast 8x48 kc768 loop1 pf0",
     wbcast_gelu<Params<8, 48, 768, 168, 768, 1, 0, 0, 0, 4, dc_x86::Isa::kAvx512>>},
#endif
};
constexpr int kNumCandidates = int(sizeof(kCandidates) / sizeof(kCandidates[0]));

std::vector<long> parse_list(const char* s) {
  std::vector<long> v;
  for (const char* p = s; *p;) {
    v.push_back(std::strtol(p, const_cast<char**>(&p), 10));
    if (*p == ',') ++p;
  }
  return v;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// With the pool asleep: how late a call's tasks start, from the call (us, medians over calls):
// the caller's first task, which waits for the wake-up it sends, and the woken threads'.
void print_wake_up(dietcode::CpuThreadPool& pool, int calls) {
  const DietcodeCpuRuntime rt = pool.runtime();
  struct Call {
    std::chrono::steady_clock::time_point t0;
    double start[64];
  } call;
  const int threads = std::min(rt.threads, 64);
  std::vector<double> caller, woken, whole;
  for (int i = 0; i < calls; ++i) {
    pool.wait_until_workers_sleep(100000);
    std::fill(call.start, call.start + threads, -1.0);
    call.t0 = std::chrono::steady_clock::now();
    rt.parallel_for(
        rt.pool, threads,
        [](void* ctx, int, int worker) {
          auto* c = static_cast<Call*>(ctx);
          const auto now = std::chrono::steady_clock::now();
          if (c->start[worker] < 0)
            c->start[worker] = std::chrono::duration<double, std::micro>(now - c->t0).count();
          while (std::chrono::steady_clock::now() - now < std::chrono::microseconds(20)) {
          }
        },
        &call);
    whole.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - call.t0)
            .count());
    caller.push_back(call.start[0]);
    for (int t = 1; t < threads; ++t)
      if (call.start[t] >= 0) woken.push_back(call.start[t]);
  }
  std::printf("wake-up, %d threads: a call of %d tasks of 20 us takes %.1f us;", threads, threads,
              median(whole));
  std::printf(" the caller's first task starts %.1f us in, a woken thread's %.1f us in",
              median(caller), median(woken));
  std::printf(" (medians of %d calls; %zu tasks ran on woken threads)\n", calls, woken.size());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<long> threads_list = {1, 2}, m_list = {16, 128, 512, 2048}, cands;
  double seconds = 0.4;         // per shape, thread count and candidate, spread over the rounds
  int evict = -1, asleep = -1;  // -1: as --cold says
  double gap_us = 0;
  int spin_us = -1;  // -1: as --asleep says
  bool cold = false, read = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--threads"))
      threads_list = parse_list(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--m"))
      m_list = parse_list(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--cands"))
      cands = parse_list(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--seconds"))
      seconds = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--cold"))
      cold = std::atoi(argv[i + 1]) != 0;
    else if (!std::strcmp(argv[i], "--evict"))
      evict = std::atoi(argv[i + 1]) != 0;
    else if (!std::strcmp(argv[i], "--asleep"))
      asleep = std::atoi(argv[i + 1]) != 0;
    else if (!std::strcmp(argv[i], "--gap"))
      gap_us = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--spin"))
      spin_us = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--read"))
      read = std::atoi(argv[i + 1]) != 0;
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 1;
    }
  }
  if (cands.empty())
    for (int c = 0; c < kNumCandidates; ++c) cands.push_back(c);
  for (long c : cands)
    if (c < 0 || c >= kNumCandidates) return std::fprintf(stderr, "no candidate %ld\n", c), 1;

  const long NK[][2] = {{2304, 768}, {768, 768}, {3072, 768}, {768, 3072}};
  const long max_m = *std::max_element(m_list.begin(), m_list.end());
  std::vector<float> x(size_t(max_m * 3072)), w(size_t(3072 * 768)), bias(3072),
      y(size_t(max_m * 3072));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  for (float& v : x) v = u(rng);
  for (float& v : w) v = u(rng);
  for (float& v : bias) v = u(rng);

  if (evict < 0) evict = cold;
  if (asleep < 0) asleep = cold;
  if (spin_us < 0) spin_us = asleep ? 20 : 1000000;
  std::printf(
      "%s; %s", evict ? "caches evicted before every call" : "operands in the caches",
      asleep ? "the pool asleep when a call starts" : "the pool left as the last call left it");
  std::printf("; its threads poll %d us after a call", spin_us);
  if (gap_us > 0) std::printf("; the caller works %.0f us before each call", gap_us);
  std::printf("\n");
  std::printf("candidates:\n");
  for (long c : cands) std::printf("  c%ld  %s\n", c, kCandidates[c].name);
  std::printf("\n%5s %5s %5s %3s", "M", "N", "K", "thr");
  for (long c : cands) std::printf(" %7s", ("c" + std::to_string(c)).c_str());
  std::printf("   best  (GFLOP/s, median)  rounds%s\n", read ? "  read W (GB/s, median)" : "");
  // The rotation: the candidates, then the read of W with --read.
  std::vector<DietcodeCpuKernelFn> rotation;
  for (long c : cands) rotation.push_back(kCandidates[c].fn);
  if (read) rotation.push_back(read_w);

  for (long threads : threads_list) {
    dietcode::CpuThreadPool pool(
        {.threads = int(threads), .pin = true, .spin_microseconds = spin_us});
    pool.pin_caller();
    const DietcodeCpuRuntime rt = pool.runtime();
    // --evict: what every call finds, as in `dietcode bench` (64 MiB written, each thread its
    // share, so the lines are dirty).
    std::vector<char> evict_buffer(evict ? size_t(64) << 20 : 0);
    struct Eviction {
      char* p;
      size_t bytes;
      int threads;
    } eviction{evict_buffer.data(), evict_buffer.size(), int(threads)};
    auto before_call = [&] {
      if (evict)
        rt.parallel_for(
            rt.pool, int(threads),
            [](void* ctx, int t, int) {
              const auto* e = static_cast<const Eviction*>(ctx);
              const size_t share = e->bytes / size_t(e->threads);
              for (size_t i = size_t(t) * share; i < size_t(t + 1) * share; i += 64) ++e->p[i];
            },
            &eviction);
      if (asleep) pool.wait_until_workers_sleep(100000);
      // Other work on the caller: a spin on the clock, which the pool's polling does not slow.
      const auto gap_end =
          std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(gap_us);
      while (gap_us > 0 && std::chrono::steady_clock::now() < gap_end) {
      }
    };
    for (long M : m_list)
      for (const auto& nk : NK) {
        const long N = nk[0], K = nk[1];
        DietcodeArgs a{};
        a.a = x.data(), a.b = w.data(), a.bias = bias.data(), a.c = y.data();
        a.batch = 1, a.m = M, a.n = N, a.k = K;
        const double flops = 2.0 * M * N * K;
        // Warm up (scratch allocation, page faults, caches) and estimate the rounds.
        double est = 1e-9;
        for (DietcodeCpuKernelFn fn : rotation) {
          fn(&a, &rt);
          before_call();
          const auto t0 = std::chrono::steady_clock::now();
          if (fn(&a, &rt)) return std::fprintf(stderr, "kernel failed\n"), 1;
          est = std::max(
              est, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        const int rounds = int(std::clamp(seconds / est, 7.0, 400.0));
        std::vector<std::vector<double>> times(rotation.size());
        for (int r = 0; r < rounds; ++r)
          for (size_t i = 0; i < rotation.size(); ++i) {
            before_call();
            const auto t0 = std::chrono::steady_clock::now();
            rotation[i](&a, &rt);
            times[i].push_back(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
          }
        std::printf("%5ld %5ld %5ld %3ld", M, N, K, threads);
        double best = 0;
        for (size_t i = 0; i < cands.size(); ++i) {
          const double g = flops / median(times[i]) * 1e-9;
          best = std::max(best, g);
          std::printf(" %7.1f", g);
        }
        std::printf("  %6.1f  %6d", best, rounds);
        if (read)
          std::printf("  %21.1f", double(N * K * sizeof(float)) / median(times.back()) * 1e-9);
        std::printf("\n");
        std::fflush(stdout);
      }
    if (asleep && threads > 1) print_wake_up(pool, 200);
  }
  return 0;
}
