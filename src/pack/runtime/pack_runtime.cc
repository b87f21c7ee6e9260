/* The loader runtime of a dietcode GPU kernel pack: the C ABI of SPEC §5 over the PackDesc that
 * the generated translation unit defines. (A CPU pack compiles pack_runtime_cpu.cc instead.)
 *
 * Guided tour
 *   errors, checks   pack_runtime_checks.h: the message buffer behind dietcode_last_error()
 *               and the argument checks, all made before any GPU work.
 *   Driver      pack_runtime_driver.h: libcuda.so.1 opened with dlopen on first use, entry
 *               points by cuGetProcAddress; select() and manifest() never need it.
 *   Registry    per CUDA context: its device, a private memory pool for split-K workspaces,
 *               and the modules/functions loaded so far. Kernels load once per context, lazily.
 *   unloading   unload_pack gives it all back when the pack is dlclose'd.
 *   launch      fill DietcodeArgs, launch the main kernel with it as the single by-value
 *               parameter (followed, for a kernel with a TMA producer, by the tensor maps of
 *               A and B, encoded for the call), then the split-K reduction if the plan has one.
 *
 * Threads and streams: the registry is guarded by one mutex held only to create a context's
 * state or load a kernel. Launching an already-loaded kernel takes no lock: each thread keeps
 * a small cache of the context states it used (keyed by context handle and id), and each
 * state publishes its loaded kernels through atomic pointers.
 *
 * Split-K workspaces: a stream runs its work in order, so each stream keeps one workspace that
 * serves every split-K launch on it, grown in stream order when a launch needs more
 * (pack_runtime_workspaces.h). Launches on other streams never touch it. A stream being
 * captured into a graph, and streams past the first kStreamWorkspaces of a context, get a
 * buffer per launch instead: allocated and freed in stream order (cuMemAllocFromPoolAsync /
 * cuMemFreeAsync), so a graph carries its own allocation. All of it comes from the pack's own pool, which keeps
 * freed memory (no release threshold) and never touches the user's pools. On a device without
 * memory pools every workspace is a plain allocation freed after a stream synchronisation:
 * correct, slower, and only on such devices.
 *
 * Unloading: dlclose of the pack unloads its modules, destroys its pools, releases the primary
 * context it retained and closes the driver (unload_pack). Like any library, it must not be
 * unloaded while another thread is inside one of its calls.
 */
#include "pack_runtime.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "pack_runtime_checks.h"
#include "pack_runtime_driver.h"
#include "pack_runtime_workspaces.h"
#include "pack_tensor_maps.h"

namespace dietcode_pack {
namespace {

// ---- per-context state ---------------------------------------------------------------------

struct LoadedKernel {
  CUmodule module = nullptr;
  CUfunction main = nullptr, reduce = nullptr;
};

struct ContextState {
  CUcontext ctx = nullptr;
  unsigned long long id = 0;  // unique per process, so a recycled handle is never confused
  int cc = 0;                 // 90 for compute capability 9.0
  CUmemoryPool pool = nullptr;
  bool pools = false;
  // One slot per kernel of the pack, [op][kernel] flattened: null until loaded, then set once
  // (under the registry mutex) and read without a lock by every launch.
  std::unique_ptr<std::atomic<const LoadedKernel*>[]> kernels;
  std::atomic<const LoadedKernel*>& slot(const OpDesc& op, int index) {
    int first = 0;
    for (const OpDesc* o = kPack.ops; o != &op; ++o) first += o->n_kernels;
    return kernels[first + index];
  }
  StreamWorkspaces workspaces;  // split-K, one per stream (pack_runtime_workspaces.h)
};

struct Registry {
  std::mutex mu;
  std::vector<ContextState*> contexts;  // few: one per device in most programs
  CUcontext primary = nullptr;          // device 0's, retained when a thread has none
  CUdevice primary_device = 0;
};

// Created when the pack is loaded and freed by unload_pack when it is unloaded.
Registry* g_registry = new Registry;

// The calling thread's context; device 0's primary context (made current) when it has none,
// as the CUDA runtime would do.
int current_context(const char* op, CUcontext* ctx) {
  const Driver& d = driver();
  CUresult r = d.CtxGetCurrent(ctx);
  if (r != CUDA_SUCCESS) return cuda_fail(r, "cuCtxGetCurrent", op);
  if (*ctx) return DIETCODE_OK;
  Registry& reg = *g_registry;
  {
    std::lock_guard<std::mutex> lock(reg.mu);
    if (!reg.primary) {
      CUdevice dev;
      if ((r = d.DeviceGet(&dev, 0)) != CUDA_SUCCESS) return cuda_fail(r, "cuDeviceGet(0)", op);
      if ((r = d.DevicePrimaryCtxRetain(&reg.primary, dev)) != CUDA_SUCCESS)
        return cuda_fail(r, "cuDevicePrimaryCtxRetain", op);
      reg.primary_device = dev;
    }
    *ctx = reg.primary;
  }
  if ((r = d.CtxSetCurrent(*ctx)) != CUDA_SUCCESS) return cuda_fail(r, "cuCtxSetCurrent", op);
  return DIETCODE_OK;
}

// The state of context (ctx, id), created on first use; the caller holds the registry mutex.
int context_state(CUcontext ctx, unsigned long long id, const char* op, ContextState** out) {
  const Driver& d = driver();
  Registry& reg = *g_registry;
  for (ContextState* s : reg.contexts)
    if (s->ctx == ctx && s->id == id) {
      *out = s;
      return DIETCODE_OK;
    }
  CUdevice dev;
  int major = 0, minor = 0, pools = 0;
  CUresult r = d.CtxGetDevice(&dev);
  if (r != CUDA_SUCCESS) return cuda_fail(r, "cuCtxGetDevice", op);
  d.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  d.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  d.DeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, dev);
  int n_kernels = 0;
  for (int i = 0; i < kPack.n_ops; ++i) n_kernels += kPack.ops[i].n_kernels;
  auto s = std::make_unique<ContextState>();
  s->ctx = ctx;
  s->id = id;
  s->cc = major * 10 + minor;
  s->kernels.reset(new std::atomic<const LoadedKernel*>[n_kernels]());
  reg.contexts.reserve(reg.contexts.size() + 1);  // so push_back cannot throw past the pool
  if (pools) {
    CUmemPoolProps props;
    std::memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = int(dev);
    if (d.MemPoolCreate(&s->pool, &props) == CUDA_SUCCESS) {
      cuuint64_t keep = ~cuuint64_t(0);
      d.MemPoolSetAttribute(s->pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
      s->pools = true;
    }
  }
  reg.contexts.push_back(s.get());
  *out = s.release();
  return DIETCODE_OK;
}

// The lock-free side of context_state: each thread remembers the last few contexts it
// launched in. Trivially destructible (safe in a library that may be dlclose'd), and fresh for
// every load of the pack, since a thread-local of an unloaded library goes with it.
struct CachedContext {
  CUcontext ctx;
  unsigned long long id;
  ContextState* state;
};
constexpr int kCachedContexts = 4;
thread_local CachedContext t_contexts[kCachedContexts];
thread_local unsigned t_next_cached;

ContextState* cached_context(CUcontext ctx, unsigned long long id) {
  for (const CachedContext& c : t_contexts)
    if (c.state && c.ctx == ctx && c.id == id) return c.state;
  return nullptr;
}

void remember_context(ContextState* s) {
  t_contexts[t_next_cached++ % kCachedContexts] = {s->ctx, s->id, s};
}

std::string available_archs(const KernelDesc& k) {
  std::string out;
  for (int i = 0; i < k.n_cubins; ++i)
    out += (out.empty() ? "sm_" : ", sm_") + std::to_string(k.cubins[i].cc) +
           (k.cubins[i].arch_specific ? "a" : "");
  if (k.ptx) out += (out.empty() ? "PTX compute_" : " and PTX compute_") + std::to_string(k.ptx_cc);
  return out;
}

// Loads kernel `index` of op into the current context; on failure nothing stays loaded.
int load_kernel(const OpDesc& op, int index, const ContextState& s, LoadedKernel* out) {
  const Driver& d = driver();
  const KernelDesc& k = op.kernels[index];
  int pick = pick_image(k, s.cc);
  if (pick == kNoImage)
    return fail(DIETCODE_ERR_ARCH_MISMATCH,
                "op %s: kernel %d has no binary for this GPU (sm_%d); the pack has %s", op.name,
                index, s.cc, available_archs(k).c_str());
  const void* image = pick == kUsePtx ? static_cast<const void*>(k.ptx)
                                      : static_cast<const void*>(k.cubins[pick].data);
  char jit_log[2048] = "";
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {jit_log, reinterpret_cast<void*>(uintptr_t(sizeof jit_log))};
  CUmodule module;
  CUresult r = d.ModuleLoadDataEx(&module, image, 2, options, values);
  if (r != CUDA_SUCCESS) {
    int code = cuda_fail(r, pick == kUsePtx ? "compiling the PTX" : "loading the CUBIN", op.name);
    if (jit_log[0]) {
      size_t used = std::strlen(g_last_error);
      std::snprintf(g_last_error + used, sizeof g_last_error - used, ": %s", jit_log);
    }
    return code;
  }
  out->module = module;
  int status = DIETCODE_OK;
  if ((r = d.ModuleGetFunction(&out->main, module, k.entry)) != CUDA_SUCCESS)
    status = cuda_fail(r, "cuModuleGetFunction", op.name);
  else if (k.reduce_entry && *k.reduce_entry &&
           (r = d.ModuleGetFunction(&out->reduce, module, k.reduce_entry)) != CUDA_SUCCESS)
    status = cuda_fail(r, "cuModuleGetFunction (reduce)", op.name);
  // Above 48 KB of dynamic shared memory a kernel must opt in.
  else if (k.dynamic_smem_bytes > 48 * 1024 &&
           (r = d.FuncSetAttribute(out->main, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   k.dynamic_smem_bytes)) != CUDA_SUCCESS)
    status = cuda_fail(r, "cuFuncSetAttribute(max dynamic shared memory)", op.name);
  if (status != DIETCODE_OK) d.ModuleUnload(module);  // a later launch tries again
  return status;
}

// The state of the calling thread's context ctx: from the thread's cache without a lock, else
// found or created under the registry mutex. Kept apart from kernel_in so a launch can learn
// the context's compute capability before it picks a kernel.
int context_for(CUcontext ctx, const char* op, ContextState** out) {
  unsigned long long id = 0;
  CUresult r = driver().CtxGetId(ctx, &id);
  if (r != CUDA_SUCCESS) return cuda_fail(r, "cuCtxGetId", op);
  if ((*out = cached_context(ctx, id))) return DIETCODE_OK;
  std::lock_guard<std::mutex> lock(g_registry->mu);
  if (int status = context_state(ctx, id, op, out)) return status;
  remember_context(*out);
  return DIETCODE_OK;
}

// Kernel `index` of op in context s (current on this thread), loaded on first use: only that
// first launch takes the registry mutex; later ones read the slot lock-free.
int kernel_in(ContextState& s, const OpDesc& op, int index, const LoadedKernel** out) {
  std::atomic<const LoadedKernel*>& slot = s.slot(op, index);
  if ((*out = slot.load(std::memory_order_acquire))) return DIETCODE_OK;
  std::lock_guard<std::mutex> lock(g_registry->mu);
  if ((*out = slot.load(std::memory_order_relaxed))) return DIETCODE_OK;
  auto loaded = std::make_unique<LoadedKernel>();
  if (int status = load_kernel(op, index, s, loaded.get())) return status;
  *out = loaded.release();
  slot.store(*out, std::memory_order_release);
  return DIETCODE_OK;
}

// What kernel `index` asks of a call's pointers.
int check_alignment(const OpDesc& op, int index, void* const* args) {
  const KernelDesc& k = op.kernels[index];
  for (int i = 0; i < op.n_args; ++i) {
    int need = i == op.bias_arg ? op.elem_bytes : k.min_alignment_bytes;
    if (!aligned(args[i], need))
      return fail(DIETCODE_ERR_INVALID_ARGUMENT,
                  "op %s: argument %s (%p) is not aligned to %d bytes, as kernel %d needs", op.name,
                  op.arg_names[i], args[i], need, index);
  }
  return DIETCODE_OK;
}

// Kernel `index`'s grid for the shape, which must fit one launch (and its workspace size_t).
int check_grid(const OpDesc& op, int index, const DietcodeArgs& a, int64_t grid[3]) {
  const KernelDesc& k = op.kernels[index];
  int64_t unused[3];
  if (!main_grid(k, a, grid) || (k.split_k > 1 && !reduce_grid(k, a, unused)) ||
      workspace_bytes(k, a) < 0)
    return fail(DIETCODE_ERR_INVALID_ARGUMENT,
                "op %s: the shape is too large for kernel %d (grid %lld x %lld x %lld)", op.name,
                index, (long long)grid[0], (long long)grid[1], (long long)grid[2]);
  return DIETCODE_OK;
}

// The tensor maps of a TMA kernel's A and B for a call. Encoding costs a driver call per map,
// so each thread keeps the last maps it encoded for each operand and reuses one when the call
// has the same layout (pointer, extents, strides, box): a model serving the same shapes from
// the same buffers encodes nothing after its first launch. Thread-local, hence lock-free;
// trivially destructible, so safe in a library that is dlclose'd.
struct CachedTensorMap {
  bool valid;
  TensorMapLayout layout;
  CUtensorMap map;
};
thread_local CachedTensorMap t_tensor_maps[kTensorMaps];

bool same_layout(const TensorMapLayout& x, const TensorMapLayout& y) {
  return x.base == y.base && std::memcmp(x.dims, y.dims, sizeof x.dims) == 0 &&
         std::memcmp(x.strides, y.strides, sizeof x.strides) == 0 &&
         std::memcmp(x.box, y.box, sizeof x.box) == 0;
}

int tensor_maps(const OpDesc& op, const KernelDesc& k, const DietcodeArgs& a,
                CUtensorMap* maps[kTensorMaps]) {
  const Driver& d = driver();
  if (!d.TensorMapEncodeTiled)
    return fail(DIETCODE_ERR_NO_DEVICE,
                "op %s: the chosen kernel copies with the TMA, but the NVIDIA driver has no "
                "cuTensorMapEncodeTiled (a driver for CUDA 12.0 or newer is needed)",
                op.name);
  // Both layouts first, so a refused operand costs no driver call.
  TensorMapLayout layouts[kTensorMaps];
  int refused = 0;
  if (const char* why = gemm_tensor_map_layouts(a, k.tile_m, k.tile_n, k.tma_box_k, op.elem_bytes,
                                                layouts, &refused))
    return fail(DIETCODE_ERR_INVALID_ARGUMENT,
                "op %s: argument %s cannot be read by this kernel's TMA copies: %s", op.name,
                op.arg_names[refused == kTensorMapA ? 0 : 1], why);
  for (int which = 0; which < kTensorMaps; ++which) {
    CachedTensorMap& c = t_tensor_maps[which];
    if (!c.valid || !same_layout(c.layout, layouts[which])) {
      c.valid = false;
      CUresult r = encode_tensor_map(d.TensorMapEncodeTiled, layouts[which], &c.map);
      if (r != CUDA_SUCCESS)
        return cuda_fail(
            r, which == kTensorMapA ? "cuTensorMapEncodeTiled (A)" : "cuTensorMapEncodeTiled (B)",
            op.name);
      c.layout = layouts[which];
      c.valid = true;
    }
    maps[which] = &c.map;
  }
  return DIETCODE_OK;
}

int launch(const OpDesc& op, const LoadedKernel& fn, const KernelDesc& k, DietcodeArgs& a,
           const int64_t grid[3], CUstream stream, ContextState& s) {
  const Driver& d = driver();
  // A kernel with a TMA producer takes its tensor maps after the arguments; the reduction
  // never does. cuLaunchKernel copies the parameters, so the cached maps may change after it.
  CUtensorMap* maps[kTensorMaps] = {nullptr, nullptr};
  if (k.tma_box_k > 0)
    if (int status = tensor_maps(op, k, a, maps)) return status;
  void* params[] = {&a, maps[kTensorMapA], maps[kTensorMapB]};
  int64_t bytes = workspace_bytes(k, a);
  CUdeviceptr workspace = 0;  // this launch's own, freed below; 0 with a kept one
  std::unique_lock<std::mutex> kept_lock;
  CUresult r;
  if (bytes > 0) {
    StreamWorkspace* kept = s.pools ? s.workspaces.kept_for(stream, &kept_lock) : nullptr;
    if (kept) {
      r = grow_workspace(*kept, size_t(bytes), s.pool, stream);
      if (r != CUDA_SUCCESS) return cuda_fail(r, "allocating the split-K workspace", op.name);
      a.workspace = reinterpret_cast<void*>(kept->ptr);
    } else {
      r = s.pools ? d.MemAllocFromPoolAsync(&workspace, size_t(bytes), s.pool, stream)
                  : d.MemAlloc(&workspace, size_t(bytes));
      if (r != CUDA_SUCCESS) return cuda_fail(r, "allocating the split-K workspace", op.name);
      a.workspace = reinterpret_cast<void*>(workspace);
    }
  }
  r = d.LaunchKernel(fn.main, unsigned(grid[0]), unsigned(grid[1]), unsigned(grid[2]),
                     unsigned(k.threads), 1, 1, unsigned(k.dynamic_smem_bytes), stream, params,
                     nullptr);
  int status = r == CUDA_SUCCESS ? DIETCODE_OK : cuda_fail(r, "cuLaunchKernel", op.name);
  if (status == DIETCODE_OK && fn.reduce) {
    int64_t rg[3];
    reduce_grid(k, a, rg);
    r = d.LaunchKernel(fn.reduce, unsigned(rg[0]), unsigned(rg[1]), unsigned(rg[2]),
                       unsigned(k.reduce_threads), 1, 1, 0, stream, params, nullptr);
    if (r != CUDA_SUCCESS) status = cuda_fail(r, "cuLaunchKernel (split-K reduction)", op.name);
  }
  if (workspace) {
    if (s.pools) {
      r = d.MemFreeAsync(workspace, stream);
    } else {
      r = d.StreamSynchronize(stream);
      CUresult f = d.MemFree(workspace);
      if (r == CUDA_SUCCESS) r = f;
    }
    if (r != CUDA_SUCCESS && status == DIETCODE_OK)
      status = cuda_fail(r, "freeing the split-K workspace", op.name);
  }
  return status;
}

// ---- unloading -----------------------------------------------------------------------------

// Runs when the pack is unloaded (dlclose) and at exit: every module, pool and context
// reference the pack took goes back to the driver, and the driver is closed, so a program may
// load and unload a pack any number of times. At exit the driver may already be shutting down;
// it then answers CUDA_ERROR_DEINITIALIZED, having freed everything itself, so results are
// ignored.
__attribute__((destructor)) void unload_pack() {
  Registry* reg = g_registry;
  Driver* d = g_driver.load(std::memory_order_acquire);
  g_registry = nullptr;
  g_driver.store(nullptr, std::memory_order_release);
  bool live = d && d->status == DIETCODE_OK;
  int n_kernels = 0;
  for (int i = 0; i < kPack.n_ops; ++i) n_kernels += kPack.ops[i].n_kernels;
  if (reg) {
    for (ContextState* s : reg->contexts) {
      for (int i = 0; i < n_kernels; ++i)
        if (const LoadedKernel* k = s->kernels[i].load(std::memory_order_acquire)) {
          if (live) d->ModuleUnload(k->module);
          delete k;
        }
      if (live) s->workspaces.free_all(*d);
      if (live && s->pools) d->MemPoolDestroy(s->pool);
      delete s;
    }
    if (live && reg->primary) {
      d->DevicePrimaryCtxRelease(reg->primary_device);
      // When that was the last reference, the context is gone: it must not stay current on
      // this thread (the pack may have made it so). Anyone else's reference keeps it usable.
      CUcontext current = nullptr;
      unsigned flags = 0;
      int active = 1;
      if (d->CtxGetCurrent(&current) == CUDA_SUCCESS && current == reg->primary &&
          d->DevicePrimaryCtxGetState(reg->primary_device, &flags, &active) == CUDA_SUCCESS &&
          !active)
        d->CtxSetCurrent(nullptr);
    }
    delete reg;
  }
  if (d) {
    if (d->lib) dlclose(d->lib);
    delete d;
  }
  delete g_driver_mu;
  g_driver_mu = nullptr;
}

}  // namespace

int launch_op(const OpDesc& op, void* const* args, int n_args, const int64_t* values, int n_values,
              void* stream) {
  try {
    // Everything about the call is checked before the driver is touched.
    DietcodeArgs a;
    bool empty = false;
    if (int status = check_call(op, args, n_args, values, n_values, &a, &empty)) return status;
    if (empty) return DIETCODE_OK;  // an empty output

    // The newest arch's dispatcher chooses first, so that a call wrong for its kernel fails
    // before the driver is touched; a GPU served by another dispatcher chooses again below.
    int index = op.selects[0].select(values);
    if (int status = check_alignment(op, index, args)) return status;
    if (int status = check_conv_geometry(op, a)) return status;
    if (int status = check_extents(op, args, a)) return status;
    int64_t grid[3];
    if (int status = check_grid(op, index, a, grid)) return status;
    a.a = args[0];
    a.b = args[1];
    a.bias = op.bias_arg >= 0 ? args[op.bias_arg] : nullptr;
    a.c = args[n_args - 1];

    const Driver& d = driver();
    if (d.status != DIETCODE_OK) return fail(d.status, "%s", d.why.c_str());
    CUcontext ctx;
    if (int status = current_context(op.name, &ctx)) return status;
    ContextState* state = nullptr;
    if (int status = context_for(ctx, op.name, &state)) return status;
    const ArchSelect& chosen = op.selects[pick_dispatcher(op, state->cc)];
    if (chosen.select != op.selects[0].select) {
      index = chosen.select(values);
      if (int status = check_alignment(op, index, args)) return status;
      if (int status = check_grid(op, index, a, grid)) return status;
    }
    const LoadedKernel* fn = nullptr;
    if (int status = kernel_in(*state, op, index, &fn)) return status;
    return launch(op, *fn, op.kernels[index], a, grid, static_cast<CUstream>(stream), *state);
  } catch (...) {  // std::bad_alloc: nothing else here throws
    return fail(DIETCODE_ERR_CUDA, "op %s: out of host memory", op.name);
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
  if (cc < 10 || cc > 999)
    return -fail(DIETCODE_ERR_INVALID_ARGUMENT,
                 "compute capability %d is not major * 10 + minor (80 for 8.0, 90 for 9.0)", cc);
  if (int status = dietcode_pack::check_values(*d, shape_values, n_values)) return -status;
  int index = d->selects[dietcode_pack::pick_dispatcher(*d, cc)].select(shape_values);
  if (dietcode_pack::pick_image(d->kernels[index], cc) == dietcode_pack::kNoImage)
    return -fail(DIETCODE_ERR_ARCH_MISMATCH,
                 "op %s: kernel %d has no binary for sm_%d; the pack has %s", op, index, cc,
                 dietcode_pack::available_archs(d->kernels[index]).c_str());
  return index;
}

// ABI 3: the host thread pool of a CPU pack. A GPU pack runs its kernels on the GPU and has no
// pool, so it checks the argument like a CPU pack and otherwise ignores it; its size reads 0.
DIETCODE_PACK_EXPORT int dietcode_set_num_threads(int n) {
  if (n < 0)
    return fail(DIETCODE_ERR_INVALID_ARGUMENT,
                "dietcode_set_num_threads(%d): expected 1 or more, or 0 for every core", n);
  return DIETCODE_OK;
}

DIETCODE_PACK_EXPORT int dietcode_num_threads(void) { return 0; }
