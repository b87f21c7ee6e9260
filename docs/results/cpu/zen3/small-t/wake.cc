#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>
#include <algorithm>
#include <pthread.h>
using clk = std::chrono::steady_clock;
int main(int argc, char** argv) {
  int sleep_us = argc > 1 ? atoi(argv[1]) : 5000;
  std::mutex mu; std::condition_variable cv; int gen = 0; clk::time_point woke; std::atomic<int> ack{0};
  std::thread th([&] {
    cpu_set_t s; CPU_ZERO(&s); CPU_SET(1, &s); pthread_setaffinity_np(pthread_self(), sizeof s, &s);
    int seen = 0;
    for (;;) { std::unique_lock<std::mutex> l(mu); cv.wait(l, [&] { return gen != seen; }); seen = gen; woke = clk::now(); if (gen < 0) return; ack.store(seen); }
  });
  cpu_set_t s; CPU_ZERO(&s); CPU_SET(0, &s); pthread_setaffinity_np(pthread_self(), sizeof s, &s);
  std::vector<double> lat;
  for (int i = 1; i <= 200; ++i) {
    auto t = clk::now(); while (clk::now() - t < std::chrono::microseconds(sleep_us)) {}  // main busy, helper idle
    clk::time_point t0;
    { std::lock_guard<std::mutex> l(mu); gen = i; t0 = clk::now(); }
    cv.notify_one();
    while (ack.load() != i) {}
    lat.push_back(std::chrono::duration<double, std::micro>(woke - t0).count());
  }
  { std::lock_guard<std::mutex> l(mu); gen = -1; } cv.notify_one(); th.join();
  std::sort(lat.begin(), lat.end());
  printf("helper idle %d us: wake latency min %.1f p10 %.1f med %.1f p90 %.1f max %.1f us\n", sleep_us, lat[0], lat[20], lat[100], lat[180], lat.back());
}
