/* bench_select: how long the pack's dispatcher takes per call (dietcode_select), measured over
 * every value of a range. Not a test: a figure for people.
 *
 *   bench_select libNAME.so OP LO HI [ROUNDS]      e.g.  bench_select libbert_dense.so qkv 1 128
 *
 * Single-variable ops; prints ns per call and the kernels picked over the range.
 */
#define _POSIX_C_SOURCE 199309L
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s libNAME.so OP LO HI [ROUNDS]\n", argv[0]);
    return 1;
  }
  void* pack = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!pack) return fprintf(stderr, "%s\n", dlerror()), 1;
  int (*select)(const char*, const int64_t*, int) =
      (int (*)(const char*, const int64_t*, int))dlsym(pack, "dietcode_select");
  if (!select) return fprintf(stderr, "not a dietcode pack\n"), 1;
  const char* op = argv[2];
  int64_t lo = atoll(argv[3]), hi = atoll(argv[4]);
  long rounds = argc > 5 ? atol(argv[5]) : 100000;
  volatile int sink = 0;
  double start = now_ns();
  for (long r = 0; r < rounds; ++r)
    for (int64_t v = lo; v <= hi; ++v) sink += select(op, &v, 1);
  double ns = (now_ns() - start) / ((double)rounds * (double)(hi - lo + 1));
  printf("dietcode_select(\"%s\", {%lld..%lld}): %.1f ns per call over %ld rounds\n", op,
         (long long)lo, (long long)hi, ns, rounds);
  int last = -1;
  for (int64_t v = lo; v <= hi; ++v) {
    int k = select(op, &v, 1);
    if (k != last) printf("  from %lld: kernel %d\n", (long long)v, k);
    last = k;
  }
  return sink < 0 ? 1 : 0;
}
