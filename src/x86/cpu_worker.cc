// The CPU side of measurement, run inside a worker process (worker_process.h): loads candidate
// shared objects, checks them against the CPU reference and times them on the worker's own
// thread pool. Requests and replies are listed in cpu_measurer.h.
//
// Loading: a candidate's bytes go to a file of a name never used before in this process
// (in /dev/shm when it can be written, else the temporary folder), dlopen'ed with
// RTLD_LOCAL | RTLD_NOW (two candidates export the same entry name; a missing symbol fails at
// load, not mid-timing) and unlinked at once. Never reuse a path: glibc recognises an
// already-loaded library by its path, and dlclose does not always unload one (a candidate's
// thread_local scratch with a destructor keeps it loaded while the pool's threads live), so a
// reused path, such as a recycled /proc/self/fd/N, would hand back an older candidate's
// library. At most kMaxLoaded candidates stay loaded; the oldest is dlclose'd first.
//
// Constant weights (a plan with a prepacked_entry, tune --constant-weights): the worker packs the
// op's weights once per layout (panel width, K block, B's N and K) with the candidate's
// prepack entry, outside any timing, keeps the panels within kPanelBudgetBytes (shared by every
// candidate of that layout: the panels depend on the weights and the layout alone), and calls
// the prepacked entry on them, in the check as in the timing. Such a candidate has no per-call
// entry: the tuner compiled it without.
//
// Nothing is compiled here: the tuner hands over finished binaries.
#include <dlfcn.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>

#include "common/error.h"
#include "measure/cpu_reference.h"
#include "measure/gpu_operands.h"
#include "x86/cpu_measurer.h"
#include "x86/cpu_thread_pool.h"

namespace dietcode {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr size_t kMaxLoaded = 64;                            // candidates kept dlopen'ed
constexpr size_t kReferenceBudgetBytes = size_t(512) << 20;  // kept reference results
constexpr size_t kPanelBudgetBytes = size_t(1) << 30;        // kept prepacked weights
constexpr size_t kAlignment = 4096;  // operands and output (after its guard band) page-aligned
constexpr unsigned char kOutputFill = 0xFF;  // NaN as float, and the canary
constexpr int kPoolSleepWaitUs = 5000;  // a pool thread spins 20 us after a call, then sleeps

// A candidate that cannot even be loaded: the compiler's product is unusable.
class LoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct AlignedBuffer {
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<unsigned char, Free> data;
  size_t bytes = 0;

  explicit AlignedBuffer(size_t n = 0) : bytes(n) {
    if (n == 0) return;
    size_t rounded = (n + kAlignment - 1) / kAlignment * kAlignment;
    data.reset(static_cast<unsigned char*>(std::aligned_alloc(kAlignment, rounded)));
    if (!data) throw EnvironmentError(fmt::format("out of memory for {} bytes of operands", n));
  }
  unsigned char* get() const { return data.get(); }
};

using PrepackFn = long long (*)(const DietcodeArgs*, float*);
using PrepackedFn = int (*)(const DietcodeArgs*, const DietcodeCpuRuntime*, const float*);

// A loaded candidate's entries: `fn`, or with constant weights `prepack` and `run_prepacked`.
struct KernelEntries {
  DietcodeCpuKernelFn fn = nullptr;
  PrepackFn prepack = nullptr;
  PrepackedFn run_prepacked = nullptr;
  int panel_nr = 0, panel_kc = 0;

  explicit operator bool() const { return fn != nullptr || run_prepacked != nullptr; }
  // panels: the weights prepacked for this call, or null to call fn (which a constant-weights
  // candidate does not have: kNoPerCallEntry).
  int operator()(const DietcodeArgs* a, const DietcodeCpuRuntime* rt, const float* panels) const {
    if (panels) return run_prepacked(a, rt, panels);
    return fn ? fn(a, rt) : kNoPerCallEntry;
  }
  static constexpr int kNoPerCallEntry = -1;
};

// One dlopen'ed candidate; dlclose and the memfd's close on destruction.
class Library {
 public:
  Library(const std::string& image, const LaunchPlan& plan) {
    const std::string& entry = plan.entry;
    static std::atomic<uint64_t> loads{0};
    static const std::string dir = ::access("/dev/shm", W_OK) == 0
                                       ? std::string("/dev/shm")
                                       : std::filesystem::temp_directory_path().string();
    const std::string path =
        fmt::format("{}/dietcode-candidate-{}-{}.so", dir, ::getpid(), loads++);
    {
      std::ofstream out(path, std::ios::binary);
      out.write(image.data(), std::streamsize(image.size()));
      if (!out.flush())
        throw EnvironmentError(fmt::format("writing {}: {}", path, std::strerror(errno)));
    }
    handle_ = ::dlopen(path.c_str(), RTLD_LOCAL | RTLD_NOW);
    ::unlink(path.c_str());  // the mapping outlives the name
    if (!handle_) {
      const char* why = ::dlerror();
      throw LoadError(
          fmt::format("cannot load the shared object: {}", why ? why : "dlopen failed"));
    }
    ::dlerror();
    // A constant-weights plan (tune --constant-weights) is timed on prepacked weights alone,
    // and its candidate is compiled without the per-call entry (compile_step.cc).
    if (plan.prepacked_entry.empty()) {
      entries_.fn = reinterpret_cast<DietcodeCpuKernelFn>(::dlsym(handle_, entry.c_str()));
      if (!entries_.fn)
        throw LoadError(fmt::format("the shared object has no entry \"{}\"", entry));
      return;
    }
    entries_.prepack = reinterpret_cast<PrepackFn>(::dlsym(handle_, plan.prepack_entry.c_str()));
    entries_.run_prepacked =
        reinterpret_cast<PrepackedFn>(::dlsym(handle_, plan.prepacked_entry.c_str()));
    if (!entries_.prepack || !entries_.run_prepacked)
      throw LoadError(fmt::format("the shared object has no constant-weights entries \"{}\"",
                                  plan.prepacked_entry));
    entries_.panel_nr = plan.panel_nr;
    entries_.panel_kc = plan.panel_kc;
  }
  ~Library() {
    if (handle_) ::dlclose(handle_);
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  const KernelEntries& entries() const { return entries_; }

 private:
  void* handle_ = nullptr;
  KernelEntries entries_;
};

// One op's operands, sized for the largest shape seen so far. Contents depend on (seed, element
// index) only, so growing keeps what earlier shapes saw.
struct Operands {
  uint64_t seed = 0;
  OperandSizes sizes;
  AlignedBuffer a, b, bias;
  AlignedBuffer c;  // the output with kOutputGuardBytes of guard band on each side
};

struct Reference {
  DenseAccumulation acc;
  std::vector<float> want;
  size_t bytes() const { return acc.sum.size() * 16 + want.size() * 4; }
};

double median(std::vector<double> samples) {
  if (samples.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(samples.begin(), samples.end());
  size_t mid = samples.size() / 2;
  return samples.size() % 2 ? samples[mid] : (samples[mid - 1] + samples[mid]) / 2;
}

std::string shape_text(const GemmShape& s) {
  return fmt::format("M={}, N={}, K={}, batch={}", s.M, s.N, s.K, s.batch);
}

const Conv2dShape* conv_of(const WorkerCandidate& c, size_t i) {
  return i < c.conv.size() ? &c.conv[i] : nullptr;
}

class CpuWorker {
 public:
  json handle(const json& request) {
    const std::string action = request.at("action").get<std::string>();
    if (action == "prepare") return prepare_worker(request);
    if (!pool_)
      throw std::logic_error("the CPU worker was asked to \"" + action + "\" before \"prepare\"");
    const uint64_t seed = request.at("seed").get<uint64_t>();
    if (action == "reference") {
      WorkerCandidate c = candidate_from_json(request.at("candidate"));
      Operands& o = operands(c, seed);
      for (int index : c.check_shapes) reference(c, size_t(index), o);
      return json::object();
    }
    if (action == "check") return check(candidate_from_json(request.at("candidate")), seed);
    if (action == "time") return time(request, seed);
    throw std::invalid_argument("unknown request \"" + action + "\"");
  }

 private:
  json prepare_worker(const json& request) {
    const int threads = request.at("threads").get<int>();
    const bool pin = request.at("pin").get<bool>();
    const int want = threads > 0 ? threads : int(CpuThreadPool::usable_cpus().size());
    if (!pool_ || pool_->threads() != want || pin != pin_) {
      pool_.reset();
      pool_ = std::make_unique<CpuThreadPool>(CpuThreadPoolOptions{threads, pin});
      pin_ = pin;
      pool_->pin_caller();
    }
    llc_bytes_ = last_level_cache_bytes();
    const int64_t evict =
        request.at("evict").get<bool>()
            ? std::min(2 * llc_bytes_, request.at("max_evict_bytes").get<int64_t>())
            : 0;
    if (int64_t(evict_.bytes) != evict) {
      evict_ = AlignedBuffer(size_t(evict));
      if (evict > 0) std::memset(evict_.get(), 0, evict_.bytes);  // fault the pages in now
    }
    // What one eviction costs: the tuner's time per timed call grows by this.
    std::vector<double> evict_us;
    for (int round = 0; round < (evict > 0 ? 3 : 0); ++round) {
      const auto start = Clock::now();
      evict_caches(round);
      evict_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    }
    return {{"threads", pool_->threads()},
            {"llc_bytes", llc_bytes_},
            {"evict_bytes", evict},
            {"evict_us", evict_us.empty() ? 0.0 : median(evict_us)}};
  }

  // Writes every line of the eviction buffer, each worker its own slice, so that every core's
  // private caches and the shared one hold eviction data and no operand.
  void evict_caches(int round) {
    struct Job {
      unsigned char* base;
      size_t slice, bytes;
      int value;
    } job{evict_.get(), 0, evict_.bytes, round};
    const int parts = pool_->threads();
    job.slice = (evict_.bytes / size_t(parts) + 63) / 64 * 64;
    pool_->parallel_for(
        parts,
        [](void* ctx, int task, int) {
          auto* j = static_cast<Job*>(ctx);
          size_t begin = size_t(task) * j->slice, end = std::min(j->bytes, begin + j->slice);
          volatile unsigned char* p = j->base;
          for (size_t at = begin; at < end; at += 64) p[at] = static_cast<unsigned char>(j->value);
        },
        &job);
  }

  KernelEntries load(const WorkerKernel& kernel) {
    auto it = loaded_.find(kernel.id);
    if (it != loaded_.end()) return it->second->entries();
    while (loaded_.size() >= kMaxLoaded) {
      loaded_.erase(load_order_.front());
      load_order_.pop_front();
    }
    auto library = std::make_unique<Library>(kernel.image, kernel.plan);
    KernelEntries entries = library->entries();
    loaded_.emplace(kernel.id, std::move(library));
    load_order_.push_back(kernel.id);
    return entries;
  }

  // The weights of `a` prepacked for k's layout (packed now when new, outside any timing), or
  // null when k packs them in every call. Throws EnvironmentError when out of memory.
  std::shared_ptr<AlignedBuffer> panels(const KernelEntries& k, const WorkerCandidate& c,
                                        const DietcodeArgs& a, uint64_t seed) {
    if (!k.run_prepacked) return nullptr;
    const long long kc = std::min<long long>(k.panel_kc, a.k);
    const std::string key =
        fmt::format("{}|{}|{}|{}|{}|{}", c.op.name, seed, k.panel_nr, kc, a.n, a.k);
    if (auto it = panels_.find(key); it != panels_.end()) return it->second;
    const long long floats = k.prepack(&a, nullptr);
    if (floats <= 0) return nullptr;
    auto buffer = std::make_shared<AlignedBuffer>(size_t(floats) * sizeof(float));
    k.prepack(&a, reinterpret_cast<float*>(buffer->get()));
    // Older panels go first; a request still holding some keeps them alive until it ends.
    while (!panel_order_.empty() && panel_bytes_ + buffer->bytes > kPanelBudgetBytes) {
      panel_bytes_ -= panels_.at(panel_order_.front())->bytes;
      panels_.erase(panel_order_.front());
      panel_order_.pop_front();
    }
    panel_bytes_ += buffer->bytes;
    panel_order_.push_back(key);
    return panels_.emplace(key, std::move(buffer)).first->second;
  }

  Operands& operands(const WorkerCandidate& c, uint64_t seed) {
    if (c.op.dtype != DType::kFloat32)
      throw std::invalid_argument("the CPU worker measures float32 ops only");
    Operands& o = operands_[c.op.name];
    if (o.seed != seed) {
      o = Operands();
      o.seed = seed;
    }
    OperandSizes need;
    for (size_t i = 0; i < c.shapes.size(); ++i) {
      OperandSizes z = operand_sizes(c.op.kind, c.shapes[i], conv_of(c, i));
      need = {std::max(need.a, z.a), std::max(need.b, z.b), std::max(need.bias, z.bias),
              std::max(need.c, z.c)};
    }
    auto grow = [&](AlignedBuffer& buffer, int64_t& have, int64_t want, int tag) {
      if (want <= have) return;
      std::string bytes = operand_bytes(seed, tag, want, DType::kFloat32);
      buffer = AlignedBuffer(bytes.size());
      std::memcpy(buffer.get(), bytes.data(), bytes.size());
      have = want;
    };
    grow(o.a, o.sizes.a, need.a, 0);
    grow(o.b, o.sizes.b, need.b, 1);
    grow(o.bias, o.sizes.bias, need.bias, 2);
    if (need.c > o.sizes.c) {
      o.c = AlignedBuffer(size_t(need.c) * sizeof(float) + 2 * kOutputGuardBytes);
      std::memset(o.c.get(), kOutputFill, o.c.bytes);
      o.sizes.c = need.c;
    }
    return o;
  }

  static DietcodeArgs args(const Operands& o, const WorkerCandidate& c, size_t shape) {
    DietcodeArgs a{};
    a.a = o.a.get();
    a.b = o.b.get();
    a.bias = epilogue_has_bias(c.op.epilogue) ? o.bias.get() : nullptr;
    a.c = o.c.get() + kOutputGuardBytes;
    a.workspace = nullptr;
    set_shape_args(c.op.kind, c.shapes[shape], conv_of(c, shape), &a);
    return a;
  }

  // The reference for a shape, computed once per (op, seed, shape) and kept within a budget.
  const Reference& reference(const WorkerCandidate& c, size_t shape, const Operands& o) {
    const GemmShape& s = c.shapes[shape];
    std::string key = fmt::format("{}|{}|{},{},{},{}", c.op.name, o.seed, s.batch, s.M, s.N, s.K);
    if (const Conv2dShape* g = conv_of(c, shape))
      key += fmt::format("|{},{},{},{},{},{},{},{}", g->n, g->h, g->w, g->c, g->r, g->s,
                         g->stride_h, g->pad_h);
    if (auto it = references_.find(key); it != references_.end()) return it->second;
    const auto* x = reinterpret_cast<const float*>(o.a.get());
    const auto* w = reinterpret_cast<const float*>(o.b.get());
    const float* bias =
        epilogue_has_bias(c.op.epilogue) ? reinterpret_cast<const float*>(o.bias.get()) : nullptr;
    Reference ref;
    switch (c.op.kind) {
      case OpKind::kDense:  // W is shared by the batch: one GEMM of batch * M rows
        ref.acc = c.op.weight_layout == WeightLayout::kKN
                      ? batch_matmul_accumulate(x, w, 1, s.batch * s.M, s.N, s.K, false, false)
                      : dense_accumulate(x, w, s.batch * s.M, s.N, s.K);
        break;
      case OpKind::kBatchMatmul:
        ref.acc = batch_matmul_accumulate(x, w, s.batch, s.M, s.N, s.K, c.op.transpose_a,
                                          c.op.transpose_b);
        break;
      case OpKind::kConv2d:
        ref.acc = conv2d_accumulate(x, w, *conv_of(c, shape));
        break;
    }
    ref.want = dense_apply_epilogue(ref.acc, bias, c.op.epilogue, ref.acc.M);
    while (!reference_order_.empty() && reference_bytes_ + ref.bytes() > kReferenceBudgetBytes) {
      reference_bytes_ -= references_.at(reference_order_.front()).bytes();
      references_.erase(reference_order_.front());
      reference_order_.pop_front();
    }
    reference_bytes_ += ref.bytes();
    reference_order_.push_back(key);
    return references_.emplace(key, std::move(ref)).first->second;
  }

  static json reply(MeasureStatus status, const std::string& error) {
    WorkerResult r;
    r.status = status;
    r.error = error;
    return to_json(r);
  }

  json check(const WorkerCandidate& c, uint64_t seed) {
    KernelEntries fn;
    try {
      fn = load(c.kernel);
    } catch (const LoadError& e) {
      return reply(MeasureStatus::kCompileError, e.what());
    }
    Operands& o = operands(c, seed);
    DietcodeCpuRuntime rt = pool_->runtime();
    for (int index : c.check_shapes) {
      const GemmShape& s = c.shapes[size_t(index)];
      const Reference& ref = reference(c, size_t(index), o);
      std::memset(o.c.get(), kOutputFill, o.c.bytes);  // NaN: an element never written fails
      DietcodeArgs a = args(o, c, size_t(index));
      const std::shared_ptr<AlignedBuffer> weights = panels(fn, c, a, seed);
      if (int rc = fn(&a, &rt, weights ? reinterpret_cast<const float*>(weights->get()) : nullptr);
          rc != 0)
        return reply(MeasureStatus::kLaunchError,
                     fmt::format("the kernel returned {} ({})", rc, shape_text(s)));
      const size_t out_bytes = size_t(s.batch * s.M * s.N) * sizeof(float);
      std::string guarded(reinterpret_cast<const char*>(o.c.get()), o.c.bytes);
      std::string stray = guard_violation(guarded, kOutputGuardBytes, out_bytes, kOutputFill);
      if (!stray.empty())
        return reply(MeasureStatus::kWrongResult, fmt::format("{} ({})", stray, shape_text(s)));
      DenseComparison cmp = compare_dense(static_cast<const float*>(a.c), ref.want, ref.acc,
                                          static_cast<const float*>(a.bias), ref.acc.M);
      if (!cmp.ok)
        return reply(MeasureStatus::kWrongResult,
                     fmt::format("{} ({})", cmp.message, shape_text(s)));
    }
    return reply(MeasureStatus::kOk, "");
  }

  json time(const json& request, uint64_t seed) {
    std::vector<WorkerCandidate> cands;
    for (const json& c : request.at("candidates")) cands.push_back(candidate_from_json(c));
    const int warmup = request.at("warmup").get<int>();
    const int repeats = request.at("repeats").get<int>();
    const bool evict = request.at("evict").get<bool>() && evict_.bytes > 0;
    const size_t n = cands.size();
    std::vector<WorkerResult> results(n);
    std::vector<KernelEntries> fns(n);
    for (size_t i = 0; i < n; ++i) {
      try {
        fns[i] = load(cands[i].kernel);
        operands(cands[i], seed);
      } catch (const LoadError& e) {
        results[i].status = MeasureStatus::kCompileError;
        results[i].error = e.what();
      }
    }
    // Operands are final now (growing them moves them): take every call's arguments up front.
    std::vector<std::vector<DietcodeArgs>> call_args(n);
    std::vector<std::vector<std::shared_ptr<AlignedBuffer>>> call_panels(n);
    std::vector<std::vector<std::vector<double>>> samples(n);
    std::vector<std::pair<size_t, size_t>> order;  // (candidate, shape), one round
    for (size_t i = 0; i < n; ++i) {
      samples[i].resize(cands[i].shapes.size());
      if (!fns[i]) continue;
      const Operands& o = operands_.at(cands[i].op.name);
      for (size_t s = 0; s < cands[i].shapes.size(); ++s) {
        call_args[i].push_back(args(o, cands[i], s));
        call_panels[i].push_back(panels(fns[i], cands[i], call_args[i].back(), seed));
        order.emplace_back(i, s);
      }
    }
    DietcodeCpuRuntime rt = pool_->runtime();
    for (int round = 0; round < warmup + repeats; ++round) {
      for (const auto& [i, s] : order) {
        if (!fns[i]) continue;  // failed earlier
        if (evict && round >= warmup) evict_caches(round);  // warm-up runs need no eviction
        // bench starts every timed run with the pack's pool asleep; time kernels from that
        // state too, or the tuner would rank small kernels by a cost bench then adds.
        pool_->wait_until_workers_sleep(kPoolSleepWaitUs);
        const float* weights =
            call_panels[i][s] ? reinterpret_cast<const float*>(call_panels[i][s]->get()) : nullptr;
        const auto start = Clock::now();
        const int rc = fns[i](&call_args[i][s], &rt, weights);
        const auto end = Clock::now();
        if (rc != 0) {
          results[i].status = MeasureStatus::kLaunchError;
          results[i].error =
              fmt::format("the kernel returned {} ({})", rc, shape_text(cands[i].shapes[s]));
          fns[i] = KernelEntries();
          continue;
        }
        if (round >= warmup)
          samples[i][s].push_back(std::chrono::duration<double, std::micro>(end - start).count());
      }
    }
    json replies = json::array();
    for (size_t i = 0; i < n; ++i) {
      if (fns[i])
        for (const auto& shape_samples : samples[i])
          results[i].latency_us.push_back(median(shape_samples));
      replies.push_back(to_json(results[i]));
    }
    return {{"results", replies}};
  }

  std::unique_ptr<CpuThreadPool> pool_;
  bool pin_ = false;
  int64_t llc_bytes_ = 0;
  AlignedBuffer evict_;
  std::map<std::string, std::unique_ptr<Library>> loaded_;
  std::deque<std::string> load_order_;
  std::map<std::string, Operands> operands_;
  std::map<std::string, Reference> references_;
  std::deque<std::string> reference_order_;
  size_t reference_bytes_ = 0;
  std::map<std::string, std::shared_ptr<AlignedBuffer>> panels_;
  std::deque<std::string> panel_order_;
  size_t panel_bytes_ = 0;
};

}  // namespace

WorkerHandler cpu_worker_handler() {
  // Built in the tuner's process, used in the worker's: the CpuWorker makes its pool and buffers
  // on the first request ("prepare"), which happens in the worker.
  auto worker = std::make_shared<CpuWorker>();
  return [worker](const json& request) { return worker->handle(request); };
}

}  // namespace dietcode
