// libgomp's entry points, taken from the OpenMP build of OpenBLAS (the same libgomp it and
// oneDNN run on), so that the OpenBLAS baseline's own work around sgemm (im2col, the epilogue
// pass, the batch loop) runs on OpenBLAS's OpenMP team and its threads, not on extra ones.
// All null when the library was not built with OpenMP: the work then runs on the calling thread.
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace dietcode {

struct GompTeam {
  void (*parallel)(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags) = nullptr;
  int (*thread_num)() = nullptr;
  int (*num_threads)() = nullptr;

  // From the already-loaded `library` (RTLD_NOLOAD: never loads a second copy).
  static GompTeam of_loaded(const std::string& library) {
    GompTeam g;
    void* h = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h) return g;
    g.parallel = reinterpret_cast<decltype(g.parallel)>(dlsym(h, "GOMP_parallel"));
    g.thread_num = reinterpret_cast<decltype(g.thread_num)>(dlsym(h, "omp_get_thread_num"));
    g.num_threads = reinterpret_cast<decltype(g.num_threads)>(dlsym(h, "omp_get_num_threads"));
    dlclose(h);  // RTLD_NOLOAD took a reference; the library stays loaded by its loader
    if (!g.parallel || !g.thread_num || !g.num_threads) g = GompTeam{};
    return g;
  }

  // body(begin, end) over [0, n), split in contiguous chunks over `threads` threads.
  template <typename Body>
  void parallel_for(int threads, int64_t n, const Body& body) const {
    if (!parallel || threads <= 1 || n <= 1) {
      body(int64_t(0), n);
      return;
    }
    struct Context {
      const GompTeam* team;
      const Body* body;
      int64_t n;
    } context{this, &body, n};
    parallel(
        [](void* data) {
          const Context& c = *static_cast<const Context*>(data);
          const int64_t t = c.team->thread_num(), nt = c.team->num_threads();
          const int64_t begin = c.n * t / nt, end = c.n * (t + 1) / nt;
          if (begin < end) (*c.body)(begin, end);
        },
        &context, unsigned(std::min<int64_t>(threads, n)), 0);
  }
};

}  // namespace dietcode
