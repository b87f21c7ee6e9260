// pack_gap: calls one op of a BERT dense pack GAP_US after the last call returned, as a model
// runs other layers between them; prints the median of 300 calls.
//   pack_gap LIB SYMBOL N K T GAP_US
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
#include <string.h>
#include <unistd.h>
typedef int (*Fn)(const float*, const float*, float*, int64_t, void*);
static double now_us(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
static int cmp(const void* a, const void* b) { double x = *(const double*)a, y = *(const double*)b; return x < y ? -1 : x > y; }
int main(int argc, char** argv) {
  const char* lib = argv[1]; const char* sym = argv[2]; long N = atol(argv[3]), K = atol(argv[4]);
  int64_t T = atol(argv[5]); long gap_us = atol(argv[6]); int calls = 300;
  void* h = dlopen(lib, RTLD_NOW); if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
  Fn f = (Fn)dlsym(h, sym);
  long M = 16 * T;
  float* x = malloc(sizeof(float) * M * K); float* w = malloc(sizeof(float) * N * K); float* y = malloc(sizeof(float) * M * N);
  for (long i = 0; i < M * K; ++i) x[i] = (i % 7) * 0.1f;
  for (long i = 0; i < N * K; ++i) w[i] = (i % 5) * 0.1f;
  double* t = malloc(sizeof(double) * calls);
  for (int i = 0; i < calls; ++i) {
    if (gap_us) usleep(gap_us);
    double t0 = now_us(); if (f(x, w, y, T, NULL)) return 2; t[i] = now_us() - t0;
  }
  qsort(t, calls, sizeof(double), cmp);
  printf("%s T=%ld gap %ld us: median %.1f us (p10 %.1f, p90 %.1f)\n", sym, (long)T, gap_us, t[calls / 2], t[calls / 10], t[calls * 9 / 10]);
  return 0;
}
