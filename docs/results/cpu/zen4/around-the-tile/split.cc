// Per-task timing of a 2-thread call: which worker ran which task, when it started and ended.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
#include "x86/cpu_thread_pool.h"
#include "x86/ops_x86.h"
using dc_x86::Epilogue; using dc_x86::OpKind; using dc_x86::Params;
using Clock = std::chrono::steady_clock;
template <class P> int dense(const DietcodeArgs* a, const DietcodeCpuRuntime* rt) {
  return dc_x86::run<OpKind::kDense, Epilogue::kBias, P>(a, rt);
}
struct Rec { int task, worker; double t0, t1; };
struct Wrap { DietcodeCpuRuntime real; Clock::time_point start; std::vector<Rec>* recs; };
struct Inner { DietcodeCpuTask task; void* ctx; Wrap* w; };
Wrap g_wrap;
static void wrapped_task(void* ctx, int i, int worker) {
  auto* in = static_cast<Inner*>(ctx);
  double a = std::chrono::duration<double, std::micro>(Clock::now() - in->w->start).count();
  in->task(in->ctx, i, worker);
  double b = std::chrono::duration<double, std::micro>(Clock::now() - in->w->start).count();
  in->w->recs[worker].push_back({i, worker, a, b});
}
static void wrapped_pf(void* pool, int n, DietcodeCpuTask task, void* ctx) {
  Inner in{task, ctx, &g_wrap};
  g_wrap.real.parallel_for(g_wrap.real.pool, n, wrapped_task, &in);
}
using K = int (*)(const DietcodeArgs*, const DietcodeCpuRuntime*);
int main(int argc, char** argv) {
  long M = 2048, N = atol(argv[1]), Kd = atol(argv[2]); int which = atoi(argv[3]);
  K kernels[] = {
    dense<Params<6, 64, 512, 96, 512, 0, 0, 0, 4, 1, dc_x86::Isa::kAvx512>>,       // seed, split auto
    dense<Params<6, 64, 512, 96, 512, 0, 0, 0, 4, 1, dc_x86::Isa::kAvx512, 0, 0, 1>>, // SHARE_B
    dense<Params<6, 64, 512, 96, 512, 0, 2, 0, 4, 1, dc_x86::Isa::kAvx512>>,       // split M
    dense<Params<6, 64, 512, 96, 512, 0, 1, 0, 4, 1, dc_x86::Isa::kAvx512>>,       // split N
  };
  K fn = kernels[which];
  long off = getenv("COFF") ? atol(getenv("COFF")) : 0;
  auto buf = [](long n) { return std::vector<float>(n); };
  float* xa = (float*)aligned_alloc(64, M * Kd * 4); float* wa = (float*)aligned_alloc(64, N * Kd * 4);
  float* ya = (float*)aligned_alloc(64, (M * N + 64) * 4);
  std::vector<float> x(M * Kd), w(N * Kd), bias(N);
  std::mt19937 rng(7); std::uniform_real_distribution<float> u(-1, 1);
  for (float& v : x) v = u(rng); for (float& v : w) v = u(rng); for (float& v : bias) v = u(rng);
  dietcode::CpuThreadPool pool({.threads = 2, .pin = true, .spin_microseconds = 1000000});
  pool.pin_caller();
  g_wrap.real = pool.runtime();
  std::vector<Rec> recs[2]; g_wrap.recs = recs;
  DietcodeCpuRuntime rt = g_wrap.real; rt.parallel_for = wrapped_pf;
  std::copy(x.begin(), x.end(), xa); std::copy(w.begin(), w.end(), wa);
  DietcodeArgs a{}; a.a = xa; a.b = wa; a.bias = bias.data(); a.c = ya + off;
  a.batch = 1; a.m = M; a.n = N; a.k = Kd;
  // one thread on the same call: runtime of 1 worker
  dietcode::CpuThreadPool pool1({.threads = 1, .pin = true});
  DietcodeCpuRuntime rt1 = pool1.runtime();
  std::vector<double> whole2, whole1, busy0, busy1, end_gap;
  for (int r = 0; r < 15; ++r) {
    recs[0].clear(); recs[1].clear();
    g_wrap.start = Clock::now();
    fn(&a, &rt);
    double t = std::chrono::duration<double, std::micro>(Clock::now() - g_wrap.start).count();
    whole2.push_back(t);
    double b0 = 0, b1 = 0, e0 = 0, e1 = 0;
    for (auto& q : recs[0]) b0 += q.t1 - q.t0, e0 = std::max(e0, q.t1);
    for (auto& q : recs[1]) b1 += q.t1 - q.t0, e1 = std::max(e1, q.t1);
    busy0.push_back(b0); busy1.push_back(b1); end_gap.push_back(std::abs(e0 - e1));
    if (r == 14 && getenv("TASKS")) {
      for (int wk = 0; wk < 2; ++wk) for (auto& q : recs[wk])
        std::printf("  task %d worker %d  %.0f..%.0f us\n", q.task, q.worker, q.t0, q.t1);
    }
    auto t0 = Clock::now(); fn(&a, &rt1);
    whole1.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  double fl = 2.0 * M * N * Kd;
  std::printf("M %ld N %ld K %ld kernel %d: 2 threads %.0f us (%.1f GF/s), busy %.0f / %.0f us, ends apart %.0f; 1 thread %.0f us (%.1f GF/s)\n",
              M, N, Kd, which, med(whole2), fl / med(whole2) * 1e-3, med(busy0), med(busy1), med(end_gap), med(whole1), fl / med(whole1) * 1e-3);
}
