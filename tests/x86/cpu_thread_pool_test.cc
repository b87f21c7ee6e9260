#include "x86/cpu_thread_pool.h"

#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace dietcode {
namespace {

struct Tally {
  std::vector<std::atomic<int>> runs;
  std::atomic<int> bad_worker{0};
  int threads = 0;
  explicit Tally(int n, int t) : runs(size_t(n)), threads(t) {}
};

void count_task(void* ctx, int task, int worker) {
  auto* tally = static_cast<Tally*>(ctx);
  tally->runs[size_t(task)].fetch_add(1);
  if (worker < 0 || worker >= tally->threads) tally->bad_worker.fetch_add(1);
}

void empty_task(void*, int, int) {}

double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

TEST(CpuThreadPool, EveryTaskRunsExactlyOnceWithAWorkerIdInRange) {
  for (int threads : {1, 2, 3}) {
    CpuThreadPool pool({threads});
    ASSERT_EQ(pool.threads(), threads);
    for (int n : {0, 1, 2, 3, 1000}) {
      for (int round = 0; round < 20; ++round) {  // again and again: sleepers and spinners alike
        Tally tally(n, threads);
        pool.parallel_for(n, count_task, &tally);
        for (int i = 0; i < n; ++i)
          ASSERT_EQ(tally.runs[size_t(i)].load(), 1)
              << "task " << i << " of " << n << " on " << threads << " threads";
        ASSERT_EQ(tally.bad_worker.load(), 0);
      }
    }
  }
}

TEST(CpuThreadPool, WorksThroughTheCContract) {
  CpuThreadPool pool({3});
  DietcodeCpuRuntime rt = pool.runtime();
  EXPECT_EQ(rt.threads, 3);
  EXPECT_EQ(rt.pool, &pool);
  Tally tally(100, 3);
  rt.parallel_for(rt.pool, 100, count_task, &tally);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(tally.runs[size_t(i)].load(), 1);
}

TEST(CpuThreadPool, TasksRunOnSeveralWorkers) {
  CpuThreadPool pool({2});
  struct Seen {
    std::atomic<int> by[2];
  } seen{};
  auto task = [](void* ctx, int, int worker) {
    static_cast<Seen*>(ctx)->by[worker].fetch_add(1);
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // let the other one in
  };
  pool.parallel_for(50, task, &seen);
  EXPECT_EQ(seen.by[0].load() + seen.by[1].load(), 50);
  EXPECT_GT(seen.by[1].load(), 0) << "the pool thread never took a task";
}

TEST(CpuThreadPool, ConcurrentCallersAreSerializedAndAllServed) {
  CpuThreadPool pool({3});
  constexpr int kCallers = 4, kCalls = 200, kTasks = 37;
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int c = 0; c < kCallers; ++c)
    callers.emplace_back([&] {
      for (int call = 0; call < kCalls; ++call) {
        Tally tally(kTasks, 3);
        pool.parallel_for(kTasks, count_task, &tally);
        for (int i = 0; i < kTasks; ++i)
          if (tally.runs[size_t(i)].load() != 1) failures.fetch_add(1);
        if (tally.bad_worker.load()) failures.fetch_add(1);
      }
    });
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(CpuThreadPool, DestroysCleanlyWhileIdle) {
  for (int threads : {1, 2, 3, 8}) {
    { CpuThreadPool fresh({threads}); }  // never used
    CpuThreadPool pool({threads});
    Tally tally(10, threads);
    pool.parallel_for(10, count_task, &tally);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // workers asleep by now
  }
  SUCCEED();
}

TEST(CpuThreadPool, AnIdlePoolBurnsNoCpu) {
  CpuThreadPool pool({3});
  Tally tally(10, 3);
  pool.parallel_for(10, count_task, &tally);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  double before = process_cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  double burnt = process_cpu_seconds() - before;
  EXPECT_LT(burnt, 0.010) << "an idle pool of 3 spent " << burnt << " s of CPU in 0.1 s";
}

TEST(CpuThreadPool, TellsWhenItsWorkersSleep) {
  CpuThreadPool pool({3});  // spins 20 us after a call
  Tally tally(10, 3);
  pool.parallel_for(10, count_task, &tally);
  EXPECT_TRUE(pool.wait_until_workers_sleep(1000000));
  CpuThreadPool one({1});  // no pool thread at all: asleep by definition
  EXPECT_TRUE(one.wait_until_workers_sleep(0));

  CpuThreadPool spinning({2, false, /*spin_microseconds=*/5000000});
  Tally more(10, 2);
  spinning.parallel_for(10, count_task, &more);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(spinning.wait_until_workers_sleep(2000)) << "a pool spinning 5 s slept at once";
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST(CpuThreadPool, ReadsAPacksSpinTimeFromTheEnvironment) {
  const char* saved = std::getenv("DIETCODE_CPU_SPIN_US");
  const std::string restore = saved ? saved : "";
  unsetenv("DIETCODE_CPU_SPIN_US");
  EXPECT_EQ(CpuThreadPool::spin_microseconds_from_environment(200), 200);
  const std::pair<const char*, int> cases[] = {
      {"0", 0},  {"35", 35},  {"1000000", 1000000}, {"1000001", 200}, {"99999999999999", 200},
      {"", 200}, {"-5", 200}, {"20us", 200},        {" 20", 200},     {"2e3", 200},
  };
  for (const auto& [text, want] : cases) {
    setenv("DIETCODE_CPU_SPIN_US", text, 1);
    EXPECT_EQ(CpuThreadPool::spin_microseconds_from_environment(200), want) << "'" << text << "'";
  }
  if (saved)
    setenv("DIETCODE_CPU_SPIN_US", restore.c_str(), 1);
  else
    unsetenv("DIETCODE_CPU_SPIN_US");
}

TEST(CpuThreadPool, PinsItsThreadsWhenAsked) {
  std::vector<int> cpus = CpuThreadPool::usable_cpus();
  ASSERT_FALSE(cpus.empty());
  // The placement follows the caller's CPU: the caller stays on one for the test.
  cpu_set_t saved, one;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved), 0);
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof(one), &one), 0);
  struct Restore {
    cpu_set_t mask;
    ~Restore() { pthread_setaffinity_np(pthread_self(), sizeof(mask), &mask); }
  } restore{saved};
  CpuThreadPool pool({int(cpus.size()), /*pin=*/true});
  struct Where {
    std::vector<std::atomic<int>> cpu;
    explicit Where(size_t n) : cpu(n) {
      for (auto& c : cpu) c.store(-1);
    }
  } where(cpus.size());
  auto task = [](void* ctx, int, int worker) {
    static_cast<Where*>(ctx)->cpu[size_t(worker)].store(sched_getcpu());
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  };
  for (int round = 0; round < 5; ++round) pool.parallel_for(64, task, &where);
  // "close" placement: the caller's mask, starting at the CPU the caller was on.
  std::vector<int> placed = pool.placement();
  ASSERT_EQ(placed.size(), cpus.size());
  std::sort(placed.begin(), placed.end());
  EXPECT_EQ(placed, cpus);
  for (size_t id = 1; id < cpus.size(); ++id)  // pool threads only; the caller is not pinned
    if (where.cpu[id].load() >= 0) {
      EXPECT_EQ(where.cpu[id].load(), pool.placement()[id]) << "worker " << id;
    }
}

// An OpenMP runtime with OMP_PROC_BIND binds its master thread to one CPU; a pool made on that
// thread must still spread its threads over the others, not pile them onto the caller's CPU.
TEST(CpuThreadPool, APoolMadeOnAThreadBoundToOneCpuSpreadsOverTheOthers) {
  const std::vector<int> cpus = CpuThreadPool::usable_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs";
  cpu_set_t saved, one;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved), 0);
  CPU_ZERO(&one);
  CPU_SET(cpus[0], &one);
  ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof(one), &one), 0);
  std::vector<int> placed;
  {
    CpuThreadPool pool({2, /*pin=*/true});
    placed = pool.placement();
  }
  pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
  ASSERT_GE(placed.size(), 2u);
  EXPECT_EQ(placed[0], cpus[0]);  // the caller's own CPU first
  EXPECT_NE(placed[1], cpus[0]) << "pool thread 1 would share the caller's only CPU";
}

// A pool's threads are placed off their caller's CPU, and follow the caller when it moves:
// pinned, each to the next CPUs after the caller's; not pinned (a pack's default), anywhere
// but there. Two failures this guards against: a pool made on a thread an OpenMP runtime bound
// to one CPU (OMP_PROC_BIND) whose threads inherited that one CPU, and, on KVM guests, workers
// woken from sleep queued behind their caller on its CPU. Both made a pack's calls take as long
// as running every task on the caller alone.
TEST(CpuThreadPool, APoolPlacesItsThreadsOffTheCallersCpuAndFollowsIt) {
  const std::vector<int> cpus = CpuThreadPool::usable_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs";
  cpu_set_t saved;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved), 0);
  auto bind_caller = [](int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0;
  };
  // Worker 1's mask, read inside its own task; the caller's, inside its.
  struct Masks {
    cpu_set_t of[2];
    std::atomic<bool> read[2] = {{false}, {false}};
    std::atomic<int> arrived{0};
  } masks;
  auto task = [](void* ctx, int, int worker) {
    auto* m = static_cast<Masks*>(ctx);
    if (sched_getaffinity(0, sizeof(m->of[worker]), &m->of[worker]) == 0) m->read[worker] = true;
    // Both workers take a task: wait a little for the other (bounded, as it may be asleep).
    m->arrived.fetch_add(1);
    for (int spin = 0; spin < 2000000 && m->arrived.load() < 2; ++spin) std::this_thread::yield();
  };
  auto call_until_worker_1_ran = [&](CpuThreadPool& pool) {
    masks.read[1] = false;
    for (int round = 0; round < 20 && !masks.read[1].load(); ++round) {
      masks.arrived.store(0);
      pool.parallel_for(2, task, &masks);
    }
    return masks.read[1].load();
  };
  for (bool pin : {false, true}) {
    SCOPED_TRACE(pin ? "pinned" : "not pinned");
    bool ran_first = false, ran_moved = false;
    cpu_set_t first, moved;
    ASSERT_TRUE(bind_caller(cpus[0]));
    {
      CpuThreadPool pool({2, pin});
      ran_first = call_until_worker_1_ran(pool);
      first = masks.of[1];
      // The caller moves to another CPU: the pool's threads follow it at its next call.
      if (bind_caller(cpus[1])) {
        ran_moved = call_until_worker_1_ran(pool);
        moved = masks.of[1];
      }
    }
    pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
    ASSERT_TRUE(ran_first) << "pool thread 1 never ran a task";
    EXPECT_FALSE(CPU_ISSET(cpus[0], &first)) << "pool thread 1 may run on its caller's CPU";
    EXPECT_TRUE(CPU_ISSET(cpus[1], &first)) << "pool thread 1 kept off the CPU after the caller's";
    EXPECT_EQ(CPU_COUNT(&masks.of[0]), 1) << "the caller's own mask is the caller's";
    ASSERT_TRUE(ran_moved) << "pool thread 1 never ran a task after the caller moved";
    EXPECT_FALSE(CPU_ISSET(cpus[1], &moved)) << "the pool's threads did not follow the caller";
    if (pin)
      EXPECT_EQ(CPU_COUNT(&moved), 1);
    else
      EXPECT_TRUE(CPU_ISSET(cpus[0], &moved));
  }
}

// Not an assertion (the machine is shared and noisy), a figure: what an empty parallel_for costs.
TEST(CpuThreadPool, OverheadOfAnEmptyParallelFor) {
  for (int threads : {1, 2, 3}) {
    CpuThreadPool pool({threads});
    auto per_call_us = [&](int n_tasks, int calls, std::chrono::microseconds gap) {
      std::vector<double> samples;
      for (int i = 0; i < calls; ++i) {
        if (gap.count()) std::this_thread::sleep_for(gap);
        auto t0 = std::chrono::steady_clock::now();
        pool.parallel_for(n_tasks, empty_task, nullptr);
        samples.push_back(
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                .count());
      }
      std::sort(samples.begin(), samples.end());
      return samples[samples.size() / 2];
    };
    per_call_us(threads, 1000, {});  // warm up
    double hot = per_call_us(threads, 20000, {});
    double zero = per_call_us(0, 20000, {});
    double one = per_call_us(1, 20000, {});
    double cold = per_call_us(threads, 200, std::chrono::microseconds(1000));
    std::printf(
        "[ figure   ] %d thread(s): empty parallel_for median %.3f us back-to-back "
        "(n_tasks = %d), %.3f us after 1 ms idle (workers asleep); n_tasks=0 %.3f us, "
        "n_tasks=1 %.3f us\n",
        threads, hot, threads, cold, zero, one);
    EXPECT_GT(hot, 0);
  }
}

// The same, when every worker must take part: each task waits until all have arrived, so the
// figure is a full fork-join round trip (wake, claim, barrier) rather than the caller running
// every empty task alone before anyone wakes. Only with no more threads than CPUs.
TEST(CpuThreadPool, OverheadOfAForkJoinOverEveryWorker) {
  const int cpus = int(CpuThreadPool::usable_cpus().size());
  for (int threads = 2; threads <= cpus && threads <= 4; ++threads) {
    CpuThreadPool pool({threads, /*pin=*/true});
    struct Barrier {
      std::atomic<int> arrived{0};
      int n = 0;
    };
    auto task = [](void* ctx, int, int) {
      auto* b = static_cast<Barrier*>(ctx);
      b->arrived.fetch_add(1);
      while (b->arrived.load() < b->n) {
      }
    };
    std::vector<double> samples;
    for (int i = 0; i < 20000; ++i) {
      Barrier barrier;
      barrier.n = threads;
      auto t0 = std::chrono::steady_clock::now();
      pool.parallel_for(threads, task, &barrier);
      samples.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(samples.begin(), samples.end());
    std::printf("[ figure   ] %d thread(s), pinned: fork-join over every worker median %.3f us, "
                "p90 %.3f us (back-to-back)\n",
                threads, samples[samples.size() / 2], samples[samples.size() * 9 / 10]);
  }
}

}  // namespace
}  // namespace dietcode
