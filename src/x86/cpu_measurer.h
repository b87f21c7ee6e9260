// CpuMeasurer: times x86-64 candidates (shared objects implementing the DietcodeCpuKernelFn
// contract of templates/x86/dietcode_cpu.h) on this machine's cores, in a worker process
// (measure/worker_process.h) so that a candidate that segfaults, executes an instruction this
// CPU lacks (SIGILL: AVX-512 code on an AVX2 machine) or never returns costs one result, never
// the tuning run. The CPU twin of measure/gpu_measurer.h, and it speaks the same protocol
// (measure/gpu_protocol.h's WorkerCandidate: the "image" is the .so's bytes).
//
// A batch goes through two phases, as on the GPU:
//   check  once per candidate (by id: micro-kernel, op and a hash of the .so), one request per
//          candidate with its own timeout: the worker loads the .so (memfd + dlopen), runs it on
//          up to three of its shapes (the first, the last and the first with a partial tile) and
//          compares with the CPU reference (measure/cpu_reference.h), into an output with guard
//          bands on both sides (measure/gpu_operands.h: guard_violation). The reference itself
//          is computed beforehand in a request of its own, under start_timeout_seconds, so a
//          slow double-precision reference never eats into the candidate's timeout.
//   time   every candidate that passed, in one request: `warmup` untimed rounds, then `repeats`
//          timed ones, round-robin over candidates and shapes (noise on these machines is
//          heavy and drifts: interleave, never time one candidate after another), steady_clock
//          around each call, the median per shape. If the worker dies or hangs on the group,
//          each candidate is timed alone so only the culprit is marked.
// Outcomes become statuses: killed by a signal -> kLaunchError "crashed with SIGILL (illegal
// instruction)"; exited -> kLaunchError; no answer in time -> kTimeout; the kernel returned
// nonzero -> kLaunchError; disagrees with the reference or wrote outside its output ->
// kWrongResult; the .so cannot be loaded or lacks the entry -> kCompileError. Either way the
// worker is restarted and measurement goes on with the others.
//
// Cache eviction (MeasureOptions::flush_l2, "flush" in the log): before every timed call the
// worker's pool writes one 64-byte line at a time (plain stores: glibc's memset goes
// non-temporal at this size and would evict nothing) over a buffer of 2x the last-level cache,
// capped at CpuMeasurerOptions::max_evict_bytes, split over all workers so every core's private
// L1/L2 is cleared too: operands come from memory, as for a layer of a model whose other
// layers ran in between. evict_bytes() says what was written.
//
// Threads and pinning: the worker owns one CpuThreadPool (x86/cpu_thread_pool.h, the very pool
// a kernel pack embeds) of `threads` workers, pool thread i pinned to the i-th CPU of the
// affinity mask and the worker's main thread (worker 0) to the first. Nothing else may run on
// those CPUs while timing: the tuner must not compile while a time request is in flight.
//
// Which worker process to start (worker_process.h):
//   exec'ed  std::make_unique<WorkerProcess>(cpu_worker_command()): the dietcode binary runs
//            itself as `dietcode __measure-cpu-worker` (the CLI serves cpu_worker_handler() on
//            kWorkerSocketFd for that subcommand). The rule for the dietcode binary (tune): the
//            tuner compiles candidates on several threads, and a fork copies only the forking
//            thread: a lock another thread holds at that moment (the dynamic loader's, taken
//            by every dlopen the worker makes; malloc's; stdio's) would stay held in the child
//            forever and every candidate would time out. An exec'ed worker starts clean, and
//            small, instead of inheriting the tuner's heap.
//   forked   std::make_unique<WorkerProcess>(cpu_worker_handler()): for programs that are not
//            the dietcode binary (tests), which should fork while single-threaded.
// Either way the worker's state (pool, operands, loaded candidates) is made in the worker, from
// requests: the handler object carries no configuration, so both modes behave alike.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "measure/environment_health.h"
#include "measure/gpu_protocol.h"
#include "measure/measurer.h"
#include "measure/worker_process.h"

namespace dietcode {

struct CpuMeasurerOptions {
  int threads = 0;                 // workers the kernels get (rt->threads); 0: every usable CPU
  bool pin = true;                 // pin worker i to the i-th CPU of the affinity mask
  std::string arch = "x86-64-v3";  // the ISA level the candidates are built for: the binary
                                   // measured, and DeviceIdentity::arch
  MeasureOptions measure;          // warmup, repeats, flush_l2 (evict the caches), timeout_seconds
                                   // per candidate, check_results, seed
  // The eviction buffer is 2x the last-level cache, but at most this: a VM can report the whole
  // socket's L3 (480 MiB on one of these guests) and writing ~1 GiB before every timed call
  // would cost far more than the calls. 64 MiB is 2x the 32 MB L3 of the target EPYC.
  int64_t max_evict_bytes = int64_t(64) << 20;
  double start_timeout_seconds = 120;  // first contact, restarts, and computing references
  // Weights taken as constant (DeviceIdentity::constant_weights): candidates whose plans name
  // constant-weights entries have their weights packed once per layout, outside the timing,
  // and are timed reading them, as a pack runs declared weights.
  bool constant_weights = false;
};

class CpuMeasurer : public Measurer {
 public:
  // Starts the worker and prepares it (pool, eviction buffer). Throws EnvironmentError when it
  // cannot.
  CpuMeasurer(std::unique_ptr<WorkerProcess> worker, CpuMeasurerOptions options);

  // {cpu_brand_string(), options.arch, simulated = false, l2 = "flush" or "warm"}.
  DeviceIdentity device() const override { return identity_; }
  std::vector<MeasureResult> measure(const std::vector<MeasureInput>& inputs) override;

  int threads() const { return threads_; }  // as the worker's pool has them
  int64_t last_level_cache_bytes() const { return llc_bytes_; }
  int64_t evict_bytes() const { return evict_bytes_; }  // written before each timed call; 0: warm
  double evict_microseconds() const { return evict_us_; }  // one eviction, as measured at start

 private:
  struct Pending {
    size_t input;
    WorkerCandidate candidate;
  };
  nlohmann::json request(const char* action) const;
  WorkerReply call(const nlohmann::json& request, double timeout_seconds);
  void prepare_worker();
  void check(Pending& pending, MeasureResult& result);
  void time(const std::vector<Pending*>& group, std::vector<MeasureResult>& results);
  double time_limit_seconds(const std::vector<Pending*>& group) const;

  std::unique_ptr<WorkerProcess> worker_;
  CpuMeasurerOptions options_;
  DeviceIdentity identity_;
  int threads_ = 0;
  int64_t llc_bytes_ = 0, evict_bytes_ = 0;
  double evict_us_ = 0;
  EnvironmentHealth health_;
  std::set<std::string> checked_;  // candidate ids whose result matched the reference
};

// The handler a CPU worker runs (cpu_worker.cc); requests:
//   {"action": "prepare", "threads": T, "pin": bool, "evict": bool, "max_evict_bytes": B}
//       -> {"threads", "llc_bytes", "evict_bytes", "evict_us"}: makes (or remakes) the pool and
//          the eviction buffer (and times one eviction); every other request needs it first.
//   {"action": "reference", "seed": S, "candidate": C} -> {}: computes (and keeps) the CPU
//          reference of C's check shapes.
//   {"action": "check", "seed": S, "candidate": C} -> {"status", "error"}
//   {"action": "time", "seed": S, "warmup": W, "repeats": R, "evict": bool,
//    "candidates": [C, ...]} -> {"results": [{"status", "error", "latency_us"}, ...]}
WorkerHandler cpu_worker_handler();

// The hidden subcommand of the dietcode binary that serves cpu_worker_handler() on
// kWorkerSocketFd, and the command that runs it (/proc/self/exe).
inline constexpr char kCpuMeasureWorkerSubcommand[] = "__measure-cpu-worker";
std::vector<std::string> cpu_worker_command();

// The CPU's marketing name ("AMD EPYC 7B13"): /proc/cpuinfo's "model name", else cpuid's brand
// string, else "unknown x86-64 CPU".
std::string cpu_brand_string();
// The size of the largest data or unified cache level of CPU 0 (sysfs, else sysconf), or 32 MiB
// when neither says.
int64_t last_level_cache_bytes();

// "crashed with SIGILL (illegal instruction)": how a worker's death reads in a result.
std::string crash_description(int signal);

}  // namespace dietcode
