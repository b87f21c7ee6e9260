// Times one op of a pack: ./loop LIB T CALLS, prints every call's time in us.
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
typedef int (*launch_fn)(const char*, void* const*, int, const int64_t*, int, void*);
static double now_us(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
int main(int argc, char** argv) {
  void* h = dlopen(argv[1], RTLD_NOW);
  if (!h) { printf("%s\n", dlerror()); return 1; }
  launch_fn launch = (launch_fn)dlsym(h, "dietcode_launch");
  int64_t T = atoll(argv[2]); int calls = atoi(argv[3]);
  long M = 16 * (argc > 5 && atoll(argv[5]) > T ? atoll(argv[5]) : T), N = 2304, K = 768;
  float* x = aligned_alloc(4096, M * K * 4); float* w = aligned_alloc(4096, N * K * 4);
  float* b = aligned_alloc(4096, 4096 * 4); float* y = aligned_alloc(4096, M * N * 4);
  for (long i = 0; i < M * K; ++i) x[i] = (i % 7) * 0.1f;
  for (long i = 0; i < N * K; ++i) w[i] = (i % 5) * 0.1f;
  for (long i = 0; i < 4096; ++i) b[i] = 0;
  void* args[4] = {x, w, y, b};
  int n_args = argc > 4 ? atoi(argv[4]) : 3;
  int64_t T2 = argc > 5 ? atoll(argv[5]) : T;
  for (int c = 0; c < calls; ++c) {
    double t0 = now_us();
    int rc = launch("qkv", args, n_args, &T, 1, NULL);
    double t1 = now_us();
    rc |= launch("qkv", args, n_args, &T2, 1, NULL);
    double t2 = now_us();
    if (rc) { printf("rc %d\n", rc); return 1; }
    printf("%.0f/%.0f ", (t1 - t0) / 1000, (t2 - t1) / 1000);
  }
  printf("\n");
}
