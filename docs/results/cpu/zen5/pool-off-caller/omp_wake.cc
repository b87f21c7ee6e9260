// omp_wake: the same as pool_wake.cc with an OpenMP parallel region (libgomp), for comparison:
//   OMP_WAIT_POLICY=passive omp_wake GAP_US TASK_US
#include <omp.h>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <chrono>
#include <vector>
#include <unistd.h>
using namespace std::chrono;
int main(int argc, char** argv) {
  long gap = atol(argv[1]); double task_us = atof(argv[2]);
  std::vector<double> t;
  for (int i = 0; i < 300; ++i) {
    if (gap) usleep(gap);
    auto t0 = steady_clock::now();
#pragma omp parallel num_threads(2)
    { auto end = steady_clock::now() + duration<double, std::micro>(task_us); while (steady_clock::now() < end) {} }
    t.push_back(duration<double, std::micro>(steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  printf("omp gap=%ld: median %.0f p10 %.0f p90 %.0f\n", gap, t[150], t[30], t[270]);
}
