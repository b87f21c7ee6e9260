// pool_wake: where a CpuThreadPool runs its workers woken from sleep. Two threads, each call two
// busy tasks of TASK_US, the caller sleeping GAP_US before each call (longer than the pool polls,
// so every call wakes it); prints the median call and how many tasks pool thread 1 ran.
//   pool_wake PIN GAP_US TASK_US   (built against src/x86/cpu_thread_pool.h of a revision)
#include "x86/cpu_thread_pool.h"
#include <cstdio>
#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>
#include <unistd.h>
using namespace std::chrono;
static double task_us = 300;
static void busy(void*, int, int) {
  auto end = steady_clock::now() + duration<double, std::micro>(task_us);
  while (steady_clock::now() < end) {}
}
struct Who { std::atomic<int> by_worker1{0}; };
int main(int argc, char** argv) {
  bool pin = atoi(argv[1]); long gap = atol(argv[2]); task_us = atof(argv[3]);
  dietcode::CpuThreadPool pool({2, pin, 200});
  std::vector<double> t; int worker1 = 0;
  static Who who;
  auto task = [](void* ctx, int i, int w) { busy(nullptr, i, w); if (w == 1) static_cast<Who*>(ctx)->by_worker1++; };
  for (int i = 0; i < 300; ++i) {
    if (gap) usleep(gap);
    auto t0 = steady_clock::now();
    pool.parallel_for(2, task, &who);
    t.push_back(duration<double, std::micro>(steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  printf("pin=%d gap=%ld task=%.0f: median %.0f us p10 %.0f p90 %.0f; tasks by worker 1: %d of 300\n", pin, gap, task_us, t[150], t[30], t[270], who.by_worker1.load());
}
