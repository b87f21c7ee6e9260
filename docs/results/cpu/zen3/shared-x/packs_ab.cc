// dietcode_launch of several packs (PACKS=a.so:b.so, op OP, M = 16 T, N given) against oneDNN's
// sgemm, caches evicted (64 MiB written) before every call, rounds interleaved in rotating order.
// Build: g++ -std=c++17 -O2 packs_ab.cc -ldl. Run: OP=qkv PACKS=a/liba.so:b/libb.so ./a.out ROUNDS M N
// K (default 768) from the environment; fc1 and fc2 get a bias, as their epilogue asks.
#include <dlfcn.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
typedef int (*launch_t)(const char*, void* const*, int, const int64_t*, int, void*);
typedef int (*sgemm_t)(char, char, long long, long long, long long, float, const float*, long long,
                       const float*, long long, float, float*, long long);
int main(int argc, char** argv) {
  int rounds = atoi(argv[1]); const long M = atol(argv[2]), N = atol(argv[3]), Kd = getenv("K") ? atol(getenv("K")) : 768;
  const char* op = getenv("OP");
  std::vector<std::string> names; std::vector<launch_t> fns;
  std::string libs = getenv("PACKS");
  for (size_t p = 0; p <= libs.size();) {
    size_t q = libs.find(':', p); if (q == std::string::npos) q = libs.size();
    std::string lib = libs.substr(p, q - p); p = q + 1;
    void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    names.push_back(lib); fns.push_back((launch_t)dlsym(h, "dietcode_launch"));
  }
  void* h = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  sgemm_t sg = (sgemm_t)dlsym(h, "dnnl_sgemm");
  auto mk = [](size_t n) { float* p = (float*)std::aligned_alloc(4096, (n * 4 + 4095) / 4096 * 4096); memset(p, 0, n * 4); return p; };
  float *x = mk(M * Kd), *w = mk(N * Kd), *c = mk(M * N), *bias = mk(N);
  const bool biased = !strcmp(op, "fc1") || !strcmp(op, "fc2");
  srand(1);
  for (long i = 0; i < M * Kd; ++i) x[i] = rand() / float(RAND_MAX) - 0.5f;
  for (long i = 0; i < N * Kd; ++i) w[i] = rand() / float(RAND_MAX) - 0.5f;
  const int nk = int(fns.size()) + 1;
  std::vector<std::vector<double>> t(nk);
  std::vector<float> ev((64 << 20) / 4);
  for (int rd = -1; rd < rounds; ++rd)
    for (int i0 = 0; i0 < nk; ++i0) {
      int i = (i0 + std::max(rd, 0)) % nk;
      for (size_t q = 0; q < ev.size(); q += 16) ev[q] += 1.0f;
      auto s = std::chrono::steady_clock::now();
      if (i == nk - 1) sg('N', 'T', M, N, Kd, 1.f, x, Kd, w, Kd, 0.f, c, N);
      else { void* args[4] = {x, w, biased ? (void*)bias : (void*)c, c}; int64_t T = M / 16; if (fns[i](op, args, biased ? 4 : 3, &T, 1, nullptr)) { fprintf(stderr, "launch failed\n"); return 1; } }
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s).count();
      if (rd >= 0) t[i].push_back(us);
    }
  double one = 0;
  for (int i = nk - 1; i >= 0; --i) {
    auto v = t[i]; std::sort(v.begin(), v.end()); double med = v[v.size() / 2];
    if (i == nk - 1) one = med;
    printf("%-30s %10.1f us %6.1f GFLOP/s  %.3f of oneDNN's time\n", i == nk - 1 ? "oneDNN sgemm" : names[i].c_str(), med, 2.0 * M * N * Kd / med / 1e3, med / one);
  }
}
