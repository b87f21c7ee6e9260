/* A host program that loads an OpenMP runtime RTLD_LOCAL, as Python loads extension modules and
 * their libraries, with OMP_PROC_BIND=close in its environment: the runtime binds the main thread
 * to one CPU as it starts. Then it loads the CPU pack argv[1] and prints the CPUs the process
 * had, those the main thread is left with, and the pack's default thread count:
 *   "before N after M threads T"
 * tests/e2e/cpu_pack_test.cc runs it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

static int affinity_count(void) {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: pack_threads_probe PACK.so\n");
    return 2;
  }
  const int before = affinity_count();
  setenv("OMP_PROC_BIND", "close", 1); /* read by the runtime as it starts */
  void* omp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!omp) {
    fprintf(stderr, "cannot load libgomp.so.1: %s\n", dlerror());
    return 3;
  }
  const int after = affinity_count();
  void* pack = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!pack) {
    fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
    return 4;
  }
  int (*num_threads)(void) = (int (*)(void))dlsym(pack, "dietcode_num_threads");
  if (!num_threads) {
    fprintf(stderr, "%s exports no dietcode_num_threads\n", argv[1]);
    return 5;
  }
  printf("before %d after %d threads %d\n", before, after, num_threads());
  return 0;
}
