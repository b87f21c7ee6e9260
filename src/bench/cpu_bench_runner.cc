#include "bench/cpu_bench_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>

#include "bench/bench_runner.h"
#include "bench/cpu_baseline.h"
#include "bench/cpu_baseline_common.h"
#include "bench/cpu_cache_evictor.h"
#include "bench/cpu_peak_probe.h"
#include "bench/host_tensors.h"
#include "bench/process_threads.h"
#include "common/error.h"
#include "dietcode/pack_abi.h"
#include "measure/conv2d_shape.h"
#include "x86/cpu_thread_pool.h"

namespace dietcode {

std::vector<std::string> cpu_baselines_for_option(const std::string& option) {
  if (option == "auto") return cpu_baseline_names();
  if (option == "none") return {};
  for (const std::string& name : cpu_baseline_names())
    if (option == name) return {name};
  throw UserError("--baseline " + option +
                  ": not a baseline for a CPU pack (expected auto, onednn, openblas or none)");
}

namespace {

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm = {};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string mib(double bytes) { return fmt::format("{:.0f} MiB", bytes / (1 << 20)); }

double elapsed_us(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - since)
      .count();
}

// Page-aligned floats (the pack's kernels and oneDNN both prefer aligned operands).
class HostBuffer {
 public:
  explicit HostBuffer(int64_t count) : count_(std::max<int64_t>(count, 1)) {
    const size_t bytes = (size_t(count_) * sizeof(float) + 4095) / 4096 * 4096;
    data_ = static_cast<float*>(std::aligned_alloc(4096, bytes));
    if (!data_) throw EnvironmentError(fmt::format("out of memory for {} of operands", mib(bytes)));
  }
  ~HostBuffer() { std::free(data_); }
  HostBuffer(HostBuffer&& other) noexcept : data_(other.data_), count_(other.count_) {
    other.data_ = nullptr;
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  float* data() const { return data_; }
  void fill_nan(int64_t count) const { std::memset(data_, 0xff, size_t(count) * sizeof(float)); }

 private:
  float* data_ = nullptr;
  int64_t count_ = 0;
};

// One op's operands, sized for its largest instance: the pack's arguments (the last is its
// output) and one output per baseline.
struct CpuOperands {
  std::vector<HostBuffer> args;
  std::vector<void*> pointers;  // args as dietcode_launch takes them
  std::vector<HostBuffer> baseline_out;
};

CpuOperands allocate_operands(const BenchOp& op, const std::vector<BenchInstance>& instances,
                              size_t baselines, uint64_t seed) {
  std::vector<int64_t> largest(op.args.size(), 0);
  for (const BenchInstance& inst : instances) {
    const std::vector<int64_t> n = argument_elements(op, inst.dims);
    for (size_t i = 0; i < n.size(); ++i) largest[i] = std::max(largest[i], n[i]);
  }
  CpuOperands out;
  for (size_t i = 0; i < largest.size(); ++i) {
    out.args.emplace_back(largest[i]);
    if (i + 1 < largest.size()) {  // inputs get data; outputs are filled before each check
      const std::vector<unsigned char> bytes =
          random_tensor(DType::kFloat32, largest[i], seed * 1000003 + i);
      std::memcpy(out.args.back().data(), bytes.data(), bytes.size());
    }
    out.pointers.push_back(out.args.back().data());
  }
  for (size_t b = 0; b < baselines; ++b) out.baseline_out.emplace_back(largest.back());
  return out;
}

// The baseline's view of the operands: the pack's first two arguments, the bias if any, and
// the baseline's own output.
CpuGemmOperands baseline_operands(const BenchOp& op, const CpuOperands& operands, size_t b) {
  CpuGemmOperands g;
  g.a = operands.args[0].data();
  g.b = operands.args[1].data();
  for (size_t i = 0; i < op.args.size(); ++i)
    if (op.args[i] == "bias") g.bias = operands.args[i].data();
  g.y = operands.baseline_out[b].data();
  return g;
}

struct LoadedBaseline {
  std::string name;
  std::unique_ptr<CpuBaseline> impl;
};

class CpuInstanceBench {
 public:
  CpuInstanceBench(const PackLibrary& library, const CpuBenchOptions& options,
                   CpuCacheEvictor& evictor)
      : library_(library), options_(options), evictor_(evictor) {}

  // One row; `ready[b]` says whether baselines[b] is prepared for this instance.
  BenchRow run(const BenchOp& op, const BenchInstance& inst, CpuOperands& operands,
               const std::vector<LoadedBaseline>& baselines, const std::vector<bool>& ready) {
    op_ = &op, inst_ = &inst, operands_ = &operands;
    BenchRow row;
    row.op = op.spec.name;
    row.shape = inst.shape;
    row.weight = inst.weight;
    row.flops = inst.gemm.flops();

    // Contender 0 is the pack, 1.. the prepared baselines.
    std::vector<size_t> running;  // indices into baselines
    for (size_t b = 0; b < baselines.size(); ++b)
      if (ready[b]) running.push_back(b);
    auto run_contender = [&](size_t c) {
      if (c == 0)
        launch_pack();
      else
        baselines[running[c - 1]].impl->run();
    };
    const size_t contenders = 1 + running.size();

    check(baselines, running, row);
    for (int i = 0; i < options_.warmup; ++i)
      for (size_t c = 0; c < contenders; ++c) run_contender(c);
    std::vector<std::vector<double>> times(contenders);
    for (int r = 0; r < options_.repeats; ++r) {
      for (size_t k = 0; k < contenders; ++k) {
        const size_t c = (size_t(r) + k) % contenders;  // rotate who goes first
        if (options_.evict_caches) evictor_.evict();
        ++timed_runs_;
        if (!wait_for_other_threads_to_sleep(options_.quiet_wait_us)) ++noisy_runs_;
        const auto start = std::chrono::steady_clock::now();
        run_contender(c);
        times[c].push_back(elapsed_us(start));
      }
    }
    row.pack_us = median(times[0]);
    row.pack_samples = times[0];
    for (size_t k = 0; k < running.size(); ++k) {
      BaselineTiming& timing = row.baselines[k];
      timing.us = median(times[k + 1]);
      timing.samples = times[k + 1];
      timing.detail = baselines[running[k]].impl->instance_detail();
    }
    for (const BaselineTiming& b : row.baselines)
      if (b.us > 0) {
        row.baseline_us = b.us, row.baseline = b.label, row.baseline_detail = b.detail;
        row.baseline_samples = b.samples;
        break;
      }
    return row;
  }

  int timed_runs() const { return timed_runs_; }
  int noisy_runs() const { return noisy_runs_; }

 private:
  void launch_pack() const {
    const int rc =
        library_.launch(op_->spec.name, operands_->pointers.data(), int(operands_->pointers.size()),
                        inst_->values.data(), int(inst_->values.size()), nullptr);
    if (rc == DIETCODE_OK) return;
    const std::string message =
        fmt::format("{}: op {} at {}: dietcode_launch returned {}: {}", library_.path(),
                    op_->spec.name, inst_->shape, pack_status_name(rc), library_.last_error());
    if (rc == DIETCODE_ERR_INVALID_ARGUMENT || rc == DIETCODE_ERR_UNKNOWN_OP)
      throw UserError(message);
    throw EnvironmentError(message);
  }

  // Runs every contender once on NaN-filled outputs and compares the pack's output with each
  // baseline's; without a baseline, checks that the pack wrote every output with a finite value.
  void check(const std::vector<LoadedBaseline>& baselines, const std::vector<size_t>& running,
             BenchRow& row) {
    const int64_t n = argument_elements(*op_, inst_->dims).back();
    operands_->args.back().fill_nan(n);
    launch_pack();
    const float* got_data = operands_->args.back().data();
    const std::vector<float> got(got_data, got_data + n);
    if (running.empty()) {
      const int64_t bad =
          std::count_if(got.begin(), got.end(), [](float v) { return !std::isfinite(v); });
      row.check =
          bad ? fmt::format("mismatch: the pack left {} of {} outputs unwritten or not finite", bad,
                            n)
              : "unchecked (no baseline; all outputs written)";
      row.failed = bad > 0;
      return;
    }
    std::string mismatches;
    for (size_t b : running) {
      BaselineTiming timing;
      timing.name = baselines[b].name;
      timing.label = baselines[b].impl->label();
      operands_->baseline_out[b].fill_nan(n);
      baselines[b].impl->run();
      const float* want_data = operands_->baseline_out[b].data();
      const Agreement agreement =
          compare_outputs(got, std::vector<float>(want_data, want_data + n), inst_->gemm.K,
                          agreement_rtol(DType::kFloat32, false));
      timing.failed = !agreement.ok();
      timing.check = agreement.ok() ? "ok" : agreement.message(inst_->gemm.N);
      if (timing.failed)
        mismatches += (mismatches.empty() ? "" : "; ") + timing.name + ": " + timing.check;
      row.baselines.push_back(timing);
    }
    row.failed = !mismatches.empty();
    row.check = row.failed ? mismatches : "ok";
  }

  const PackLibrary& library_;
  const CpuBenchOptions& options_;
  CpuCacheEvictor& evictor_;
  const BenchOp* op_ = nullptr;
  const BenchInstance* inst_ = nullptr;
  CpuOperands* operands_ = nullptr;
  int timed_runs_ = 0, noisy_runs_ = 0;
};

// Sizes the pack's pool; a note when it cannot be sized or ends up another size.
void set_pack_threads(const PackLibrary& library, int threads, BenchReport& report) {
  if (!library.has_thread_control()) {
    report.notes.push_back(
        "the pack exports no dietcode_set_num_threads (pack ABI before 3): it ran on its own "
        "default thread count, not necessarily " +
        std::to_string(threads));
    return;
  }
  const int rc = library.set_num_threads(threads);
  if (rc != DIETCODE_OK)
    throw EnvironmentError(fmt::format("{}: dietcode_set_num_threads({}) returned {}: {}",
                                       library.path(), threads, pack_status_name(rc),
                                       library.last_error()));
  const int actual = library.num_threads();
  if (actual != threads)
    report.notes.push_back(fmt::format(
        "the pack's pool runs {} threads after dietcode_set_num_threads({})", actual, threads));
}

// Declares an op's weights constant to the pack for the scope of its instances.
class ConstantWeights {
 public:
  ConstantWeights(const PackLibrary& library, bool declare, const std::string& op, void* weights)
      : library_(library), op_(op), weights_(declare ? weights : nullptr) {
    if (!weights_) return;
    const int rc = library_.declare_constant(op_, 1, weights_);
    if (rc != DIETCODE_OK)
      throw UserError(fmt::format("{}: dietcode_declare_constant(\"{}\", 1) returned {}: {}",
                                  library_.path(), op_, pack_status_name(rc),
                                  library_.last_error()));
  }
  ~ConstantWeights() {
    if (weights_) library_.forget_constant(op_, 1, weights_);
  }
  ConstantWeights(const ConstantWeights&) = delete;
  ConstantWeights& operator=(const ConstantWeights&) = delete;

 private:
  const PackLibrary& library_;
  std::string op_;
  void* weights_;
};

std::string constant_weights_note(const PackLibrary& library) {
  return library.has_constants()
             ? "constant weights: dense and conv2d weights declared constant to the pack "
               "(dietcode_declare_constant), which packs them once, at the check run; oneDNN "
               "takes them in the layout it chooses, reordered once in its setup; OpenBLAS "
               "has no API to keep packed weights and packs them in every call"
             : "constant weights asked for, but the pack exports no dietcode_declare_constant "
               "(pack ABI before 4): it packed its weights in every call, while oneDNN took "
               "them in its own layout, reordered once";
}

// Which contenders had their threads bound to CPUs, from the environment each reads when its
// threads start: the pack's DIETCODE_CPU_BIND, and OMP_PROC_BIND for the OpenMP team that
// oneDNN and OpenBLAS share. Binding changes times by up to 2x on a busy host, so a report says.
std::string thread_binding_note() {
  auto value = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v && *v ? v : "";
  };
  // "NAME=value", or "NAME unset".
  auto setting = [&](const char* name) {
    const std::string v = value(name);
    return v.empty() ? std::string(name) + " unset" : std::string(name) + "=" + v;
  };
  const std::string omp = value("OMP_PROC_BIND");
  const bool pack_bound = CpuThreadPool::binding_requested_by_environment();
  const bool omp_bound = !omp.empty() && omp != "false";
  return fmt::format("thread binding: the pack's pool {} ({}); the baselines' OpenMP team {} ({})",
                     pack_bound ? "bound to CPUs" : "not bound", setting("DIETCODE_CPU_BIND"),
                     omp_bound ? "bound" : "not bound", setting("OMP_PROC_BIND"));
}

// What instructions each contender ran, as each says (a library may ignore a cap).
std::string instruction_set_note(const CpuBenchOptions& options,
                                 const std::vector<LoadedBaseline>& baselines) {
  std::string note = "instruction sets: the pack's " +
                     (options.pack_level.empty() ? std::string("own") : options.pack_level) +
                     " kernels";
  for (const LoadedBaseline& b : baselines) {
    const std::string isa = b.impl->instruction_set();
    note += ", " + b.name + " " + (isa.empty() ? "(does not say)" : isa);
  }
  if (options.isa_cap)
    note += fmt::format(" (every contender capped at x86-64-v{} by --arch)", options.isa_cap);
  return note;
}

}  // namespace

BenchReport run_cpu_bench(const PackLibrary& library, const BenchPack& pack,
                          const CpuBenchOptions& options_in) {
  CpuBenchOptions options = options_in;
  const std::vector<const BenchOp*> ops = select_ops(pack, options.ops);
  BenchReport report;
  report.target = "cpu";
  report.pack = library.path();
  report.date = utc_now();
  report.repeats = options.repeats;
  report.warmup = options.warmup;
  if (pack.dims_from != "the pack's manifest")
    report.notes.push_back("shapes and dimensions from " + pack.dims_from);

  if (options.threads <= 0) options.threads = default_cpu_threads();
  // Before any baseline's threads exist.
  ProbedPeak peak;
  peak.threads = options.threads;
  if (options.probe_peak_gflops) peak.before_gflops = options.probe_peak_gflops();
  std::vector<LoadedBaseline> baselines;
  for (const std::string& name : options.baselines) {
    try {
      baselines.push_back(
          {name, make_cpu_baseline(name, options.threads, options.constant_weights)});
    } catch (const EnvironmentError& e) {
      report.notes.push_back(name + " left out: " + e.what());
    }
  }
  set_pack_threads(library, options.threads, report);
  if (options.constant_weights) report.notes.push_back(constant_weights_note(library));
  report.notes.push_back(thread_binding_note());
  report.notes.push_back(instruction_set_note(options, baselines));
  report.threads = options.threads;
  report.device = fmt::format("{}, {} thread{}", options.cpu.empty() ? "this CPU" : options.cpu,
                              options.threads, options.threads == 1 ? "" : "s");
  for (const LoadedBaseline& b : baselines)
    report.baseline_columns.emplace_back(b.name, b.impl->label());
  report.baseline = "none";
  for (size_t i = 0; i < baselines.size(); ++i)
    report.baseline = (i ? report.baseline + ", " : "") + baselines[i].impl->label();

  CpuCacheEvictor evictor(options.evict_caches ? options.evict_bytes : 0, options.threads);
  report.l2 = options.evict_caches ? "flush" : "warm";
  report.l2_detail =
      options.evict_caches
          ? fmt::format("caches evicted before every timed run ({} written by {} threads)",
                        mib(double(evictor.bytes())), options.threads)
          : "caches warm: operands may stay cached between runs";
  report.method = fmt::format(
      "pack and baselines interleaved in rotating order on {} threads each, every other thread "
      "asleep when a timed run starts",
      options.threads);

  CpuInstanceBench bench(library, options, evictor);
  int unavailable = 0;
  int busiest_machine = 0;  // the most threads of other programs seen running
  for (size_t o = 0; o < ops.size(); ++o) {
    const BenchOp& op = *ops[o];
    const std::vector<BenchInstance> instances = bench_instances(pack, op, options.shapes);
    std::vector<bool> supported(baselines.size(), false);
    for (size_t b = 0; b < baselines.size(); ++b) {
      std::string what;
      supported[b] = baselines[b].impl->supports(op.spec, &what);
      report.baseline_per_op.emplace_back(op.spec.name, what);
    }
    if (baselines.empty()) report.baseline_per_op.emplace_back(op.spec.name, "none");
    if (options.progress)
      options.progress(fmt::format("{}: {} shape{}, {} {}", op.spec.name, instances.size(),
                                   instances.size() == 1 ? "" : "s", to_string(op.spec.kind),
                                   to_string(op.spec.dtype)));
    if (op.spec.dtype != DType::kFloat32)
      throw UserError(fmt::format("{}: op {} is {}; a CPU pack runs float32 only", pack.file,
                                  op.spec.name, to_string(op.spec.dtype)));
    CpuOperands operands =
        allocate_operands(op, instances, baselines.size(), options.seed * 131 + o);
    // Every instance of the op reads the same W (a prefix of the largest instance's operands
    // is the whole of W: its shape does not vary); the pack packs it on the first launch, the
    // check run, before any timing.
    ConstantWeights weights(library, options.constant_weights && library.has_constants() &&
                                         op.spec.kind != OpKind::kBatchMatmul,
                            op.spec.name, operands.pointers[1]);
    for (const BenchInstance& inst : instances) {
      // Only this thread of bench runs now: anything more is another program.
      busiest_machine = std::max(busiest_machine, machine_running_threads() - 1);
      std::vector<bool> ready = supported;
      for (size_t b = 0; b < baselines.size(); ++b) {
        if (!ready[b]) continue;
        try {
          Conv2dShape conv;
          if (op.spec.kind == OpKind::kConv2d) conv = conv2d_shape(op.spec, inst.values);
          baselines[b].impl->prepare(op.spec, inst.gemm,
                                     op.spec.kind == OpKind::kConv2d ? &conv : nullptr,
                                     baseline_operands(op, operands, b));
        } catch (const CpuBaselineUnavailable& e) {
          ready[b] = false;
          if (++unavailable <= 5)
            report.notes.push_back(op.spec.name + " " + inst.shape + ": " + e.what());
        }
      }
      report.rows.push_back(bench.run(op, inst, operands, baselines, ready));
    }
  }
  if (options.probe_peak_gflops) {
    wait_for_other_threads_to_sleep(options.quiet_wait_us);  // the last contender's pool
    peak.after_gflops = options.probe_peak_gflops();
  }
  hold_rows_against_peak(report, peak);
  if (unavailable > 5)
    report.notes.push_back(
        fmt::format("... and {} more instances without some baseline", unavailable - 5));
  if (busiest_machine > 0)
    report.notes.push_back(fmt::format(
        "other programs were running on this machine during the bench (up to {} runnable "
        "thread{} besides bench's): the times are not those of an idle machine",
        busiest_machine, busiest_machine == 1 ? "" : "s"));
  if (bench.noisy_runs() > 0)
    report.notes.push_back(fmt::format(
        "in {} of {} timed runs another thread of bench was still running after {:.0f} ms "
        "(a thread pool that never sleeps?): those runs may have shared cores",
        bench.noisy_runs(), bench.timed_runs(), options.quiet_wait_us / 1e3));
  return report;
}

}  // namespace dietcode
