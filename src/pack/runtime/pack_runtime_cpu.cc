/* The loader runtime of a dietcode CPU (x86-64) kernel pack: the C ABI of SPEC §5 over the
 * PackDesc that the generated translation unit defines, with kernels that run on the host.
 *
 * Guided tour
 *   checks      pack_runtime_checks.h, shared with the GPU runtime: every argument is checked
 *               the same way before a kernel runs.
 *   ISA level   pack_cpu_level.h: the CPU's x86-64 level by cpuid, read once. The pack has one
 *               dispatcher per group of levels (AVX-512 kernels only in the v4 one); a launch
 *               uses the dispatcher of the highest level the CPU has (pick_level_dispatcher).
 *               The kernels were linked in from objects compiled for their own level, so
 *               nothing of a level runs before that check.
 *   pool        one CpuThreadPool (cpu_thread_pool.h, the tuner's own pool, so tuned timings
 *               hold) of dietcode_set_num_threads threads, every usable core by default,
 *               created on the first launch. Launches take a reference to the pool of the
 *               moment; a resize replaces it for later launches while running ones finish on
 *               theirs. Launches from several threads share the pool: its parallel_for takes
 *               one call at a time, each caller working as worker 0 of its own call, and every
 *               kernel keeps its packing buffers per thread, so concurrent launches never share
 *               memory. The pool's threads float over the process's CPUs but the caller's
 *               unless the environment sets DIETCODE_CPU_BIND=1 (read when the pool is
 *               created), which binds pool thread i to the i-th CPU after the caller's, as
 *               OMP_PROC_BIND=close does for an OpenMP team; either way the placement follows
 *               the caller from launch to launch (cpu_thread_pool.h, "Placement"). Binding is
 *               off by default: two packs in one process would bind their threads to the same
 *               CPUs. After a launch the pool's threads poll for the next one
 *               for kSpinMicroseconds before they sleep, or as DIETCODE_CPU_SPIN_US says (read
 *               when the pool is created).
 *   constants   weights declared constant (dietcode_declare_constant, pack_constants.h) are
 *               packed once per layout of the kernels that read them (the kernel's prepack)
 *               by the first launch that needs that layout, and read from there by every
 *               later launch (run_prepacked): the packing of B leaves the call.
 *   unloading   unload_pack stops the pool's threads when the pack is dlclose'd.
 */
#include "pack_runtime_cpu.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "cpu_thread_pool.h"
#include "pack_constants.h"
#include "pack_cpu_level.h"
#include "pack_runtime_checks.h"

namespace dietcode_pack {
namespace {

using dietcode::CpuThreadPool;
using dietcode::CpuThreadPoolOptions;

// ---- the pool ------------------------------------------------------------------------------

struct PoolState {
  std::mutex mu;
  int wanted = 0;  // dietcode_set_num_threads: 0 = every usable core
  std::shared_ptr<CpuThreadPool> pool;
};

// How long the pool's threads poll after a launch before they sleep. A launch that finds them
// asleep spends tens of microseconds waking them on a virtual machine (the woken thread starts
// 22-25 us into the call on the 2-core guest of docs/results/cpu, section X), 10-30% of a T=1
// call of BERT's dense layers. Between a model's layers the caller runs other work (attention,
// layer norm) for microseconds to hundreds of microseconds; polling 200 us bridges most of it,
// as OpenMP runtimes do by default (libgomp polls 300,000 times, Intel's runtime 200 ms), and
// holds a core for at most that long after the last launch. DIETCODE_CPU_SPIN_US=0 gives the
// core back at once.
constexpr int kSpinMicroseconds = 200;

// Created when the pack is loaded and freed by unload_pack when it is unloaded.
PoolState* g_pool = new PoolState;

int threads_for(int wanted) {
  return wanted > 0 ? wanted : int(CpuThreadPool::usable_cpus().size());
}

// The pool launches run on now, created on first use. Throws std::system_error when no thread
// can be started, std::bad_alloc.
std::shared_ptr<CpuThreadPool> current_pool() {
  std::lock_guard<std::mutex> lock(g_pool->mu);
  if (!g_pool->pool) {
    CpuThreadPoolOptions options;
    options.threads = threads_for(g_pool->wanted);
    options.pin = CpuThreadPool::binding_requested_by_environment();
    options.spin_microseconds =
        CpuThreadPool::spin_microseconds_from_environment(kSpinMicroseconds);
    g_pool->pool = std::make_shared<CpuThreadPool>(options);
  }
  return g_pool->pool;
}

__attribute__((destructor)) void unload_pack() {
  PoolState* state = g_pool;
  g_pool = nullptr;
  delete state;  // joins the pool's threads
}

// ---- levels --------------------------------------------------------------------------------

std::string level_name(int level) {
  return level <= 1 ? "x86-64" : "x86-64-v" + std::to_string(level);
}

std::string pack_levels(const OpDesc& op) {
  std::string out;
  for (int i = 0; i < op.n_selects; ++i)
    out += (i ? ", " : "") + level_name(op.selects[i].cc);
  return out;
}

// At launch the level is this CPU's; for dietcode_select_arch the one asked about.
int arch_mismatch(const OpDesc& op, int level, bool this_cpu) {
  return fail(DIETCODE_ERR_ARCH_MISMATCH, "op %s: %s %s; the pack's kernels need %s", op.name,
              this_cpu ? "this CPU is" : "no dispatcher runs on", level_name(level).c_str(),
              pack_levels(op).c_str());
}

// ---- launch --------------------------------------------------------------------------------

int check_alignment(const OpDesc& op, int index, void* const* args) {
  const KernelDesc& k = op.kernels[index];
  int need = k.min_alignment_bytes > op.elem_bytes ? k.min_alignment_bytes : op.elem_bytes;
  for (int i = 0; i < op.n_args; ++i) {
    int want = i == op.bias_arg ? op.elem_bytes : need;
    if (!aligned(args[i], want))
      return fail(DIETCODE_ERR_INVALID_ARGUMENT,
                  "op %s: argument %s (%p) is not aligned to %d bytes, as kernel %d needs", op.name,
                  op.arg_names[i], args[i], want, index);
  }
  return DIETCODE_OK;
}

// ---- constant weights -----------------------------------------------------------------------

// The packed copy of the launch's weights for kernel `k`, filled; null when the weights are
// not declared constant or the kernel reads them in place anyway. Throws std::bad_alloc.
std::shared_ptr<PackedConstant> packed_weights(const OpDesc& op, const KernelDesc& k,
                                               const DietcodeArgs& a) {
  if (!k.prepack || op.weights_arg < 0 || !constants().any()) return nullptr;
  // B's GEMM dimensions (conv2d: filters x R*S*C, check_conv_geometry made sure). A K block
  // past K packs as K, so kernels whose K blocks both cover K share one copy.
  const int64_t kc = k.panel_kc < a.k ? k.panel_kc : a.k;
  const ConstantLayout layout{k.panel_nr, int(kc), a.n, a.k};
  std::shared_ptr<PackedConstant> c = constants().copy(op, a.b, layout);
  if (!c) return nullptr;
  std::lock_guard<std::mutex> lock(c->mu);
  if (!c->ready) {
    const long long floats = k.prepack(&a, nullptr);
    if (floats <= 0) return nullptr;
    const size_t bytes = (size_t(floats) * sizeof(float) + 63) / 64 * 64;
    c->panels = static_cast<float*>(std::aligned_alloc(64, bytes));
    if (!c->panels) throw std::bad_alloc();
    k.prepack(&a, c->panels);
    c->ready = true;
  }
  return c;
}

int run_kernel(const OpDesc& op, int index, const DietcodeArgs& a) {
  const KernelDesc& k = op.kernels[index];
  // Held until the kernel returns, so a concurrent forget cannot free what it reads.
  const std::shared_ptr<PackedConstant> weights = packed_weights(op, k, a);
  std::shared_ptr<CpuThreadPool> pool = current_pool();
  DietcodeCpuRuntime rt = pool->runtime();
  int code = weights ? k.run_prepacked(&a, &rt, weights->panels) : k.entry(&a, &rt);
  if (code == 0) return DIETCODE_OK;
  if (code == 1)
    return fail(DIETCODE_ERR_CUDA, "op %s: kernel %d could not allocate its packing buffers",
                op.name, index);
  // 2 and 3 (a static dimension or a problem the checks above let through) would be a bug.
  return fail(DIETCODE_ERR_INVALID_ARGUMENT, "op %s: kernel %d refused the problem (code %d)",
              op.name, index, code);
}

}  // namespace

int launch_op(const OpDesc& op, void* const* args, int n_args, const int64_t* values, int n_values,
              void* stream) {
  try {
    DietcodeArgs a;
    bool empty = false;
    if (int status = check_call(op, args, n_args, values, n_values, &a, &empty)) return status;
    if (stream)
      return fail(DIETCODE_ERR_INVALID_ARGUMENT,
                  "op %s: stream must be NULL: this is a CPU pack, it runs on the host", op.name);
    if (empty) return DIETCODE_OK;  // an empty output
    int dispatcher = pick_level_dispatcher(op, host_x86_level());
    if (dispatcher < 0) return arch_mismatch(op, host_x86_level(), true);
    int index = op.selects[dispatcher].select(values);
    if (int status = check_alignment(op, index, args)) return status;
    if (int status = check_conv_geometry(op, a)) return status;
    if (int status = check_extents(op, args, a)) return status;
    a.a = args[0];
    a.b = args[1];
    a.bias = op.bias_arg >= 0 ? args[op.bias_arg] : nullptr;
    a.c = args[n_args - 1];
    return run_kernel(op, index, a);
  } catch (...) {  // std::bad_alloc, or std::system_error when no thread can be started
    return fail(DIETCODE_ERR_CUDA, "op %s: out of host memory or threads", op.name);
  }
}

}  // namespace dietcode_pack

using dietcode_pack::fail;

#include "pack_abi_common.h"  // abi_version, manifest, last_error, select, launch

DIETCODE_PACK_EXPORT int dietcode_select_arch(const char* op, int cc, const int64_t* shape_values,
                                              int n_values) {
  if (!op) return -fail(DIETCODE_ERR_INVALID_ARGUMENT, "op is NULL");
  const dietcode_pack::OpDesc* d = dietcode_pack::find_op(op);
  if (!d) return -dietcode_pack::unknown_op(op);
  if (cc < 1 || cc > 4)
    return -fail(DIETCODE_ERR_INVALID_ARGUMENT,
                 "%d is not an x86-64 level: a CPU pack takes 1 to 4 (3 for x86-64-v3, 4 for "
                 "x86-64-v4)",
                 cc);
  if (int status = dietcode_pack::check_values(*d, shape_values, n_values)) return -status;
  int dispatcher = dietcode_pack::pick_level_dispatcher(*d, cc);
  if (dispatcher < 0) return -dietcode_pack::arch_mismatch(*d, cc, false);
  return d->selects[dispatcher].select(shape_values);
}

DIETCODE_PACK_EXPORT int dietcode_set_num_threads(int n) {
  if (n < 0)
    return fail(DIETCODE_ERR_INVALID_ARGUMENT,
                "dietcode_set_num_threads(%d): expected 1 or more, or 0 for every core", n);
  try {
    dietcode_pack::PoolState& s = *dietcode_pack::g_pool;
    std::lock_guard<std::mutex> lock(s.mu);
    s.wanted = n;
    // Launches running on the old pool keep it alive until they return.
    if (s.pool && s.pool->threads() != dietcode_pack::threads_for(n)) s.pool.reset();
    return DIETCODE_OK;
  } catch (...) {
    return fail(DIETCODE_ERR_CUDA, "dietcode_set_num_threads: out of host memory");
  }
}

DIETCODE_PACK_EXPORT int dietcode_num_threads(void) {
  try {
    dietcode_pack::PoolState& s = *dietcode_pack::g_pool;
    std::lock_guard<std::mutex> lock(s.mu);
    return s.pool ? s.pool->threads() : dietcode_pack::threads_for(s.wanted);
  } catch (...) {
    return 1;
  }
}
