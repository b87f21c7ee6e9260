// A kernel pack under stress, against the stand-in driver (a TEST DOUBLE: tests/data/fake_driver,
// FAKE_CUDA_KERNELS=1, on LD_LIBRARY_PATH as libcuda.so.1). Kernels run nothing there; what is
// checked is the pack's own work: which launches reach the driver, on which context and stream,
// and that it leaves nothing behind. tests/e2e/pack_stress_test.cc runs it (and its sanitizer
// builds) and checks its output.
//
//   pack_stress LIB OP MAX_T concurrent   16 threads x 2 contexts x 3 streams launch at once
//   pack_stress LIB OP MAX_T cycles N     N dlopen/dlclose cycles; no driver object may outlive one
//   pack_stress LIB OP MAX_T checks       bad arguments: prints "check NAME = CODE | MESSAGE"
//   pack_stress LIB OP MAX_T workspaces   split-K workspaces kept per stream, and when not
//   pack_stress LIB OP MAX_T bench [N]    ns per dietcode_launch and per direct cuLaunchKernel;
//                                         also on a real driver (a GPU host), where it times
//                                         the host-side cost of a launch
//   pack_stress LIB OP MAX_T exit [pack-first]   launches, then exits with the pack still
//                                         loaded: its destructor runs at exit, before or after
//                                         the driver's (which then refuses calls), depending on
//                                         which of the two was loaded first
//
// OP is a dense op of one shape variable T (arguments X[M,K], W[N,K], Y[M,N]); launches use
// T in 1..MAX_T, and MAX_T / 2 picks a split-K kernel. Prints "ok SCENARIO" or "FAIL ..." lines;
// exits 0 when nothing failed.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "pack_stress/stress_env.h"

namespace stress {
namespace {

std::atomic<int> g_failures{0};
std::mutex g_print;

template <typename... Args>
void failure(const char* format, Args... args) {
  std::lock_guard<std::mutex> lock(g_print);
  if (++g_failures <= 20) {
    std::printf("FAIL ");
    std::printf(format, args...);
    std::printf("\n");
  }
}

// Device addresses far apart (16 TiB), never dereferenced: the pack and the driver double only
// look at them, so a tensor of any checked size fits between two of them.
void* address(int i) { return reinterpret_cast<void*>(uintptr_t(i + 1) << 44); }

// Streams per context that keep a split-K workspace (the pack runtime's kStreamWorkspaces).
constexpr long long kKeptWorkspaces = 16;

struct Run {
  Driver& d;
  Pack& pack;
  std::string path, op;
  int max_t;

  int launch(int64_t t, void* stream, void* x = address(0), void* w = address(1),
             void* y = address(2)) {
    void* args[] = {x, w, y};
    return pack.launch(op.c_str(), args, 3, &t, 1, stream);
  }

  // Contexts to launch in: the primary contexts of devices 0 and 1 (or 0 alone).
  std::vector<CUcontext> retain_contexts() {
    std::vector<CUcontext> out;
    for (int dev = 0; dev < 2; ++dev) {
      CUcontext c;
      if (d.PrimaryCtxRetain(&c, dev) == CUDA_SUCCESS) out.push_back(c);
    }
    return out;
  }
  void release_contexts(size_t n) {
    for (size_t dev = 0; dev < n; ++dev) d.PrimaryCtxRelease(int(dev));
  }

  // Driver launches one dietcode_launch makes at each T in context c (1, or 2 with split-K).
  std::vector<long long> kernels_per_launch(CUcontext c) {
    d.CtxSetCurrent(c);
    CUstream s;
    d.StreamCreate(&s, 0);
    std::vector<long long> out(max_t + 1, 0);
    for (int t = 1; t <= max_t; ++t) {
      long long before = d.stream_launches(s);
      if (int code = launch(t, s)) failure("calibrate T=%d: %d %s", t, code, pack.last_error());
      out[t] = d.stream_launches(s) - before;
    }
    d.StreamDestroy(s);
    return out;
  }

  // The threads start together on a pack that has loaded nothing yet, so context states and
  // kernels are created under contention; what each stream should have received is worked out
  // afterwards, from the T of every launch made on it.
  void concurrent() {
    constexpr int kThreads = 16, kStreams = 3, kRounds = 300;
    std::vector<CUcontext> contexts = retain_contexts();
    std::printf("contexts %zu\n", contexts.size());
    FakeCudaStats before = d.stats();
    struct Record {
      CUstream stream;
      size_t context;
      int t;
    };
    std::vector<std::vector<Record>> records(kThreads);
    std::vector<std::vector<CUstream>> all_streams(kThreads);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int id = 0; id < kThreads; ++id)
      threads.emplace_back([&, id] {
        std::vector<std::vector<CUstream>> streams(contexts.size());
        for (size_t c = 0; c < contexts.size(); ++c)
          for (int i = 0; i < kStreams; ++i) {
            d.CtxSetCurrent(contexts[c]);
            CUstream s;
            if (d.StreamCreate(&s, 0) != CUDA_SUCCESS) return failure("cuStreamCreate");
            streams[c].push_back(s);
            all_streams[size_t(id)].push_back(s);
          }
        ++ready;
        while (ready < kThreads) std::this_thread::yield();
        for (int i = 0; i < kRounds; ++i) {
          size_t c = size_t(i + id) % contexts.size();
          CUstream s = streams[c][size_t(i / 2) % kStreams];
          int t = 1 + (i * 7 + id) % max_t;
          d.CtxSetCurrent(contexts[c]);  // threads switch contexts between launches
          if (int code = launch(t, s))
            return failure("thread %d launch T=%d: %d %s", id, t, code, pack.last_error());
          records[size_t(id)].push_back({s, c, t});
        }
        d.CtxSetCurrent(nullptr);
      });
    for (std::thread& t : threads) t.join();
    FakeCudaStats after = d.stats();
    if (after.rejected_launches != before.rejected_launches)
      failure("the driver rejected %lld launches",
              (long long)(after.rejected_launches - before.rejected_launches));
    // Each stream keeps its split-K workspace until the pack is unloaded (main checks that
    // they go then), but a context keeps at most kKeptWorkspaces.
    if (after.live_allocations > kKeptWorkspaces * (long long)contexts.size())
      failure("%lld workspaces live, more than %lld contexts keep",
              (long long)after.live_allocations, (long long)contexts.size());
    std::printf("launches %lld\n", (long long)(after.launches - before.launches));
    std::vector<std::vector<long long>> per_t;
    for (CUcontext c : contexts) per_t.push_back(kernels_per_launch(c));
    for (int id = 0; id < kThreads; ++id) {
      std::map<CUstream, long long> expected;
      for (const Record& r : records[size_t(id)])
        expected[r.stream] += per_t[r.context][size_t(r.t)];
      for (CUstream s : all_streams[size_t(id)]) {
        d.StreamSynchronize(s);
        if (d.stream_launches(s) != expected[s])
          failure("thread %d: a stream got %lld kernels, expected %lld", id, d.stream_launches(s),
                  expected[s]);
        d.StreamDestroy(s);
      }
    }
    d.CtxSetCurrent(nullptr);
    release_contexts(contexts.size());
  }

  // One cycle's launches: from this thread and from a second one, which has no context (so the
  // pack retains device 0's primary one), on the default stream, split-K ones included.
  void launch_without_context(int cycle) {
    for (int t : {1 + cycle % max_t, max_t / 2, max_t})
      if (int code = launch(t, nullptr))
        failure("cycle %d T=%d: %d %s", cycle, t, code, pack.last_error());
    std::thread other([&] {
      for (int t = 1; t <= max_t; t += 5)
        if (int code = launch(t, nullptr))
          failure("cycle %d thread T=%d: %d %s", cycle, t, code, pack.last_error());
    });
    other.join();
  }

  // In the first half of the cycles this thread has no context of its own; in the second it
  // holds device 0's primary context, current, across all of them, so each load of the pack
  // meets the same context (handle and id) that the previous one cached.
  void cycles(int n) {
    CUcontext own = nullptr;
    for (int i = 0; i < n; ++i) {
      if (i == n / 2) {
        d.PrimaryCtxRetain(&own, 0);
        d.CtxSetCurrent(own);
      }
      const long long theirs = own ? 1 : 0;  // references the client holds
      if (!pack.open(path)) return failure("cycle %d: cannot load the pack", i);
      launch_without_context(i);
      FakeCudaStats during = d.stats();
      if (during.live_modules == 0 || during.retained_contexts != theirs + 1 ||
          during.live_pools != 1)
        failure("cycle %d, pack loaded: %lld modules, %lld contexts retained, %lld pools", i,
                (long long)during.live_modules, (long long)during.retained_contexts,
                (long long)during.live_pools);
      if (!pack.close()) return failure("cycle %d: dlclose failed", i);
      FakeCudaStats after = d.stats();
      CUcontext current = nullptr;
      d.CtxGetCurrent(&current);
      if (after.live_modules || after.live_allocations || after.live_pools ||
          after.retained_contexts != theirs || current != own)
        return failure(
            "cycle %d, pack unloaded: %lld modules, %lld allocations, %lld pools, %lld contexts "
            "retained, current context %p",
            i, (long long)after.live_modules, (long long)after.live_allocations,
            (long long)after.live_pools, (long long)after.retained_contexts,
            static_cast<void*>(current));
    }
    if (own) {
      d.CtxSetCurrent(nullptr);
      d.PrimaryCtxRelease(0);
    }
    std::printf("modules loaded %lld\n", (long long)d.stats().modules_loaded);
  }

  // Split-K workspaces: a stream keeps one across its launches; a recycled stream handle is a
  // new stream; a captured stream and the streams past the table's size allocate per launch.
  // Prints "workspaces SCENE allocations A live L" (deltas from the start), checked by the test.
  void workspaces() {
    std::vector<CUcontext> contexts = retain_contexts();
    d.CtxSetCurrent(contexts[0]);
    const int split_t = max_t / 2;
    const FakeCudaStats start = d.stats();
    auto report = [&](const char* scene) {
      FakeCudaStats now = d.stats();
      std::printf("workspaces %s allocations %lld live %lld\n", scene,
                  (long long)(now.allocations - start.allocations),
                  (long long)(now.live_allocations - start.live_allocations));
    };
    auto launches = [&](CUstream s, int n) {
      for (int i = 0; i < n; ++i)
        if (int code = launch(split_t, s)) failure("T=%d: %d %s", split_t, code, pack.last_error());
    };
    CUstream first, second;
    d.StreamCreate(&first, 0);
    launches(first, 50);
    report("one_stream");
    d.StreamCreate(&second, 0);
    launches(second, 50);
    launches(nullptr, 50);
    report("three_streams");
    d.StreamDestroy(first);
    CUstream recycled;  // the double's allocator may hand back first's address
    d.StreamCreate(&recycled, 0);
    launches(recycled, 10);
    report("recycled_handle");
    setenv("FAKE_CUDA_CAPTURING", "1", 1);
    launches(second, 10);
    unsetenv("FAKE_CUDA_CAPTURING");
    report("captured");
    std::vector<CUstream> more(kKeptWorkspaces + 4);
    for (CUstream& s : more) {
      d.StreamCreate(&s, 0);
      launches(s, 3);
    }
    report("table_full");
    for (CUstream s : more) d.StreamDestroy(s);
    d.StreamDestroy(second);
    d.StreamDestroy(recycled);
    d.CtxSetCurrent(nullptr);
    release_contexts(contexts.size());
  }

  void check(const char* name, int code) {
    std::printf("check %s = %d | %s\n", name, code, code ? pack.last_error() : "");
  }

  void checks() {
    std::vector<CUcontext> contexts = retain_contexts();
    d.CtxSetCurrent(contexts[0]);
    char* x = static_cast<char*>(address(0));
    int64_t x_bytes = 4 * 8 * 32 * 4;  // X at T = 8: M = 32 rows of K = 32 floats
    check("ok", launch(8, nullptr));
    check("misaligned", launch(8, nullptr, x + 4));
    check("output_is_input", launch(8, nullptr, x, address(1), x));
    check("output_overlaps_end", launch(8, nullptr, x, address(1), x + x_bytes - 16));
    check("output_overlaps_weights", launch(8, nullptr, x, address(1), address(1)));
    check("output_right_after_input", launch(8, nullptr, x, address(1), x + x_bytes));
    check("null_pointer", launch(8, nullptr, nullptr));
    void* args[] = {address(0), address(1), address(2), address(3)};
    int64_t values[] = {8, 8};
    check("null_args", pack.launch(op.c_str(), nullptr, 3, values, 1, nullptr));
    check("four_args", pack.launch(op.c_str(), args, 4, values, 1, nullptr));
    check("two_values", pack.launch(op.c_str(), args, 3, values, 2, nullptr));
    check("null_values", pack.launch(op.c_str(), args, 3, nullptr, 1, nullptr));
    check("value_0", launch(0, nullptr));
    check("value_negative", launch(-5, nullptr));
    check("value_int64_min", launch(INT64_MIN, nullptr));
    check("value_1e9", launch(1000000000, nullptr));
    check("value_int32_max", launch(INT32_MAX, nullptr));
    check("value_2_pow_31", launch(int64_t(1) << 31, nullptr));
    check("value_int64_max", launch(INT64_MAX, nullptr));
    check("output_at_top_of_memory", launch(8, nullptr, x, address(1), (void*)(UINTPTR_MAX - 15)));
    // MAX_T / 2 is in the split-K kernel's band; with FAKE_CUDA_MAX_ALLOC small its workspace
    // does not fit.
    check("split_k_launch", launch(max_t / 2, nullptr));
    d.CtxSetCurrent(nullptr);
    release_contexts(contexts.size());
  }

  // ns per call of f, made by `threads` threads at once, each on its own stream: the time
  // spent inside the calls, per thread, averaged. Calls go in batches of 256 with the stream
  // synchronised (untimed) between batches, so on a real GPU the launch queue never fills and
  // what is timed is the host-side cost of a launch, not the kernels. The best of five tries,
  // the one least disturbed by other work on the machine.
  template <typename F>
  double time_calls(int threads, long calls, F f) {
    constexpr long kBatch = 256;
    std::vector<CUcontext> contexts = retain_contexts();
    double best = 1e300;
    for (int attempt = 0; attempt < 5; ++attempt) {
      std::atomic<int> ready{0};
      std::atomic<bool> go{false};
      std::vector<double> inside_ns(size_t(threads), 0.0);
      std::vector<std::thread> pool;
      for (int id = 0; id < threads; ++id)
        pool.emplace_back([&, id] {
          d.CtxSetCurrent(contexts[0]);
          CUstream s;
          d.StreamCreate(&s, 0);
          // Warm: kernels loaded, caches filled; a short run (the tests') warms as long as it times.
          for (long i = 0; i < std::min(calls, 1000L); ++i) f(s);
          d.StreamSynchronize(s);
          ++ready;
          while (!go) std::this_thread::yield();
          for (long done = 0; done < calls; done += kBatch) {
            auto start = std::chrono::steady_clock::now();
            for (long i = done; i < std::min(calls, done + kBatch); ++i) f(s);
            inside_ns[size_t(id)] +=
                std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start)
                    .count();
            d.StreamSynchronize(s);
          }
          d.StreamDestroy(s);
          d.CtxSetCurrent(nullptr);
        });
      while (ready < threads) std::this_thread::yield();
      go = true;
      for (std::thread& t : pool) t.join();
      double mean = 0;
      for (double ns : inside_ns) mean += ns / double(calls) / threads;
      best = std::min(best, mean);
    }
    release_contexts(contexts.size());
    return best;
  }

  // The pack's own cost per launch: dietcode_launch at T = MAX_T against cuLaunchKernel of an
  // empty kernel with a 128-byte parameter, as large as DietcodeArgs. On the stand-in driver
  // nothing runs (a CPU figure of the pack's own work); on a real driver (a GPU host) the
  // pack's kernel runs on device buffers of 256 MiB each, enough for any op whose tensors hold
  // up to 64M elements at that T.
  void bench(long calls) {
    int64_t t = max_t;
    std::vector<CUcontext> contexts = retain_contexts();
    d.CtxSetCurrent(contexts[0]);
    static const char kPtx[] =
        ".version 7.0\n.target sm_52\n.address_size 64\n"
        ".visible .entry bench_kernel(.param .align 8 .b8 args[128]) { ret; }\n";
    CUmodule module;
    CUfunction fn;
    if (d.ModuleLoadDataEx(&module, kPtx, 0, nullptr, nullptr) != CUDA_SUCCESS ||
        d.ModuleGetFunction(&fn, module, "bench_kernel") != CUDA_SUCCESS)
      return failure("cannot load the direct-launch module");
    void* tensors[3] = {address(0), address(1), address(2)};
    if (d.real)
      for (void*& p : tensors) {
        CUdeviceptr dp = 0;
        if (d.MemAlloc(&dp, size_t(256) << 20) != CUDA_SUCCESS)
          return failure("cannot allocate 256 MiB on the GPU");
        p = reinterpret_cast<void*>(dp);
      }
    unsigned char args_struct[128] = {};
    void* params[] = {args_struct};
    std::printf("%s (T=%" PRId64 ", %ld calls per thread)\n",
                d.real ? "real driver: host-side cost per launch on this GPU host"
                       : "fake driver, CPU only, NOT a GPU figure",
                t, calls);
    for (int threads : {1, 16}) {
      double pack_ns = time_calls(threads, calls, [&](CUstream s) {
        if (launch(t, s, tensors[0], tensors[1], tensors[2]))
          failure("bench launch: %s", pack.last_error());
      });
      double direct_ns = time_calls(threads, calls, [&](CUstream s) {
        d.LaunchKernel(fn, 1, 2, 1, 128, 1, 1, 0, s, params, nullptr);
      });
      std::printf(
          "threads %2d: dietcode_launch %.1f ns/call, direct cuLaunchKernel %.1f ns/call "
          "(time inside the calls, per thread)\n",
          threads, pack_ns, direct_ns);
    }
    if (d.real)
      for (void* p : tensors) d.MemFree(reinterpret_cast<CUdeviceptr>(p));
    d.ModuleUnload(module);
    d.CtxSetCurrent(nullptr);
    release_contexts(contexts.size());
  }
};

}  // namespace
}  // namespace stress

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s LIB OP MAX_T concurrent|cycles N|checks|bench [CALLS]|exit\n",
                 argv[0]);
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  stress::Driver d;
  stress::Pack pack;
  stress::Run run{d, pack, argv[1], argv[2], std::atoi(argv[3])};
  std::string scenario = argv[4];
  std::string arg = argc > 5 ? argv[5] : "";
  if (scenario == "exit") {
    // The order of loading decides the order of the two destructors at exit; one of the two
    // orders has the pack meet a driver that has already shut down.
    if (arg == "pack-first" && !pack.open(run.path)) return 2;
    if (!d.open() || (!pack.lib && !pack.open(run.path))) return 2;
    run.launch_without_context(0);
    int failures = stress::g_failures;
    std::printf("%s exit\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;  // the pack stays loaded
  }
  if (!d.open(scenario == "bench")) return 2;
  long n = std::atol(arg.c_str());
  if (scenario == "cycles") {
    run.cycles(int(n));
  } else {
    if (!pack.open(run.path)) return 2;
    if (scenario == "concurrent")
      run.concurrent();
    else if (scenario == "checks")
      run.checks();
    else if (scenario == "workspaces")
      run.workspaces();
    else if (scenario == "bench")
      run.bench(n > 0 ? n : 1000000);
    else
      return std::fprintf(stderr, "unknown scenario %s\n", scenario.c_str()), 2;
    if (!pack.close()) stress::failure("dlclose failed");
    if (!d.real && d.stats().live_allocations != 0)
      stress::failure("%lld workspaces outlive the pack", (long long)d.stats().live_allocations);
  }
  int failures = stress::g_failures;
  std::printf("%s %s\n", failures ? "FAILED" : "ok", scenario.c_str());
  return failures ? 1 : 0;
}
