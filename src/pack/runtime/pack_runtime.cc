/* The loader runtime of a dietcode kernel pack: the C ABI of SPEC §5 over the PackDesc that
 * the generated translation unit defines.
 *
 * Guided tour
 *   errors      a thread-local message buffer behind dietcode_last_error().
 *   checks      every argument is validated before any GPU work, so a bad call costs nothing
 *               and touches no device state.
 *   Driver      libcuda.so.1 opened with dlopen on first use and every entry point fetched
 *               with cuGetProcAddress (never dlsym of unsuffixed names, whose ABI is the
 *               oldest one); select() and manifest() never need it.
 *   Registry    per CUDA context: its device, a private memory pool for split-K workspaces,
 *               and the modules/functions loaded so far. Kernels load once per context, lazily.
 *   launch      fill DietcodeArgs, launch the main kernel with it as the single by-value
 *               parameter, then the split-K reduction if the plan has one.
 *
 * Threads and streams: the registry is guarded by one mutex held only to look up or load a
 * kernel, never while a kernel is launched. Split-K workspaces are stream-ordered allocations
 * (cuMemAllocFromPoolAsync / cuMemFreeAsync on the launch stream): each launch gets its own
 * buffer, freed in stream order after its reduction, so launches from any number of threads
 * and streams never share one, and stream capture works. The pool is the pack's own, with
 * no release threshold, so memory is reused across launches without touching the user's pools.
 * On a device without memory pools the workspace is a plain allocation freed after a stream
 * synchronisation: correct, slower, and only on such devices.
 */
#include "pack_runtime.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

namespace dietcode_pack {
namespace {

// ---- errors --------------------------------------------------------------------------------

// A fixed buffer rather than a std::string: trivially destructible thread-locals are safe in a
// library that may be dlclose'd.
thread_local char g_last_error[1024] = "";

int fail(int code, const char* format, ...) __attribute__((format(printf, 2, 3)));
int fail(int code, const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  std::vsnprintf(g_last_error, sizeof g_last_error, format, ap);
  va_end(ap);
  return code;
}

// ---- checks --------------------------------------------------------------------------------

const OpDesc* find_op(const char* name) {
  for (int i = 0; i < kPack.n_ops; ++i)
    if (std::strcmp(kPack.ops[i].name, name) == 0) return &kPack.ops[i];
  return nullptr;
}

int unknown_op(const char* name) {
  std::string known;
  for (int i = 0; i < kPack.n_ops; ++i) known += std::string(i ? ", " : "") + kPack.ops[i].name;
  return fail(DIETCODE_ERR_UNKNOWN_OP, "unknown op '%s' (pack %s has: %s)", name, kPack.name,
              known.c_str());
}

int check_values(const OpDesc& op, const int64_t* values, int n_values) {
  if (n_values != op.n_vars) {
    std::string names;
    for (int i = 0; i < op.n_vars; ++i) names += std::string(i ? ", " : "") + op.var_names[i];
    return fail(DIETCODE_ERR_INVALID_ARGUMENT, "op %s takes %d shape value(s) (%s), got %d",
                op.name, op.n_vars, names.c_str(), n_values);
  }
  if (op.n_vars > 0 && !values)
    return fail(DIETCODE_ERR_INVALID_ARGUMENT, "op %s: shape_values is NULL", op.name);
  for (int i = 0; i < op.n_vars; ++i)
    if (values[i] < 1)
      return fail(DIETCODE_ERR_INVALID_ARGUMENT, "op %s: shape value %s = %lld is below 1", op.name,
                  op.var_names[i], (long long)values[i]);
  return DIETCODE_OK;
}

// ---- the driver ----------------------------------------------------------------------------

// Entry points as of CUDA 12.0: every one used here has had this signature since then, so a
// 12.x driver serves the pack as well as a 13.x one.
constexpr int kDriverApi = 12000;

struct Driver {
  int status = DIETCODE_ERR_NO_DEVICE;
  std::string why;
  PFN_cuGetErrorName_v6000 GetErrorName = nullptr;
  PFN_cuGetErrorString_v6000 GetErrorString = nullptr;
  PFN_cuInit_v2000 Init = nullptr;
  PFN_cuDeviceGet_v2000 DeviceGet = nullptr;
  PFN_cuDeviceGetAttribute_v2000 DeviceGetAttribute = nullptr;
  PFN_cuDevicePrimaryCtxRetain_v7000 DevicePrimaryCtxRetain = nullptr;
  PFN_cuCtxGetCurrent_v4000 CtxGetCurrent = nullptr;
  PFN_cuCtxSetCurrent_v4000 CtxSetCurrent = nullptr;
  PFN_cuCtxGetDevice_v2000 CtxGetDevice = nullptr;
  PFN_cuCtxGetId_v12000 CtxGetId = nullptr;
  PFN_cuModuleLoadDataEx_v2010 ModuleLoadDataEx = nullptr;
  PFN_cuModuleGetFunction_v2000 ModuleGetFunction = nullptr;
  PFN_cuFuncSetAttribute_v9000 FuncSetAttribute = nullptr;
  PFN_cuLaunchKernel_v4000 LaunchKernel = nullptr;
  PFN_cuMemPoolCreate_v11020 MemPoolCreate = nullptr;
  PFN_cuMemPoolSetAttribute_v11020 MemPoolSetAttribute = nullptr;
  PFN_cuMemAllocFromPoolAsync_v11020 MemAllocFromPoolAsync = nullptr;
  PFN_cuMemFreeAsync_v11020 MemFreeAsync = nullptr;
  PFN_cuMemAlloc_v3020 MemAlloc = nullptr;
  PFN_cuMemFree_v3020 MemFree = nullptr;
  PFN_cuStreamSynchronize_v2000 StreamSynchronize = nullptr;
};

Driver load_driver() {
  Driver d;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    d.why = "no NVIDIA driver: cannot load libcuda.so.1";
    return d;
  }
  auto get_proc = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!get_proc) {
    d.why = "the NVIDIA driver is too old: libcuda.so.1 has no cuGetProcAddress_v2 (CUDA 12.0+)";
    return d;
  }
  bool ok = true;
  auto get = [&](const char* name, auto& fn) {
    void* p = nullptr;
    CUdriverProcAddressQueryResult found;
    if (get_proc(name, &p, kDriverApi, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found) != CUDA_SUCCESS ||
        !p) {
      if (ok) d.why = std::string("the NVIDIA driver lacks ") + name;
      ok = false;
      return;
    }
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
  };
  get("cuGetErrorName", d.GetErrorName);
  get("cuGetErrorString", d.GetErrorString);
  get("cuInit", d.Init);
  get("cuDeviceGet", d.DeviceGet);
  get("cuDeviceGetAttribute", d.DeviceGetAttribute);
  get("cuDevicePrimaryCtxRetain", d.DevicePrimaryCtxRetain);
  get("cuCtxGetCurrent", d.CtxGetCurrent);
  get("cuCtxSetCurrent", d.CtxSetCurrent);
  get("cuCtxGetDevice", d.CtxGetDevice);
  get("cuCtxGetId", d.CtxGetId);
  get("cuModuleLoadDataEx", d.ModuleLoadDataEx);
  get("cuModuleGetFunction", d.ModuleGetFunction);
  get("cuFuncSetAttribute", d.FuncSetAttribute);
  get("cuLaunchKernel", d.LaunchKernel);
  get("cuMemPoolCreate", d.MemPoolCreate);
  get("cuMemPoolSetAttribute", d.MemPoolSetAttribute);
  get("cuMemAllocFromPoolAsync", d.MemAllocFromPoolAsync);
  get("cuMemFreeAsync", d.MemFreeAsync);
  get("cuMemAlloc", d.MemAlloc);
  get("cuMemFree", d.MemFree);
  get("cuStreamSynchronize", d.StreamSynchronize);
  if (!ok) return d;
  CUresult r = d.Init(0);
  if (r == CUDA_ERROR_NO_DEVICE) {
    d.why = "no CUDA-capable GPU found (the driver is installed)";
    return d;
  }
  if (r != CUDA_SUCCESS) {
    const char* name = "?";
    d.GetErrorName(r, &name);
    d.why = std::string("cuInit failed: ") + name;
    return d;
  }
  d.status = DIETCODE_OK;
  return d;
}

// Loaded once per process: a driver does not appear or vanish while a program runs.
const Driver& driver() {
  static const Driver d = load_driver();
  return d;
}

int cuda_fail(CUresult r, const char* what, const char* op) {
  const char* name = "CUDA_ERROR_UNKNOWN";
  const char* text = "";
  driver().GetErrorName(r, &name);
  driver().GetErrorString(r, &text);
  return fail(DIETCODE_ERR_CUDA, "op %s: %s failed: %s (%s)", op, what, name, text);
}

// ---- per-context state ---------------------------------------------------------------------

struct LoadedKernel {
  bool loaded = false;
  CUfunction main = nullptr, reduce = nullptr;
};

struct ContextState {
  CUcontext ctx = nullptr;
  unsigned long long id = 0;  // unique per process, so a recycled handle is never confused
  int cc = 0;                 // 90 for compute capability 9.0
  CUmemoryPool pool = nullptr;
  bool pools = false;
  std::vector<std::vector<LoadedKernel>> kernels;  // [op][kernel]
};

struct Registry {
  std::mutex mu;
  std::vector<ContextState*> contexts;  // few: one per device in most programs
  CUcontext primary = nullptr;          // device 0's, retained when a thread has none
};

// Never destroyed: threads may still launch while static destructors run at exit, and the
// driver may already be gone then, so nothing is unloaded or freed.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

// The calling thread's context; device 0's primary context (made current) when it has none,
// as the CUDA runtime would do.
int current_context(const char* op, CUcontext* ctx) {
  const Driver& d = driver();
  CUresult r = d.CtxGetCurrent(ctx);
  if (r != CUDA_SUCCESS) return cuda_fail(r, "cuCtxGetCurrent", op);
  if (*ctx) return DIETCODE_OK;
  Registry& reg = registry();
  {
    std::lock_guard<std::mutex> lock(reg.mu);
    if (!reg.primary) {
      CUdevice dev;
      if ((r = d.DeviceGet(&dev, 0)) != CUDA_SUCCESS) return cuda_fail(r, "cuDeviceGet(0)", op);
      if ((r = d.DevicePrimaryCtxRetain(&reg.primary, dev)) != CUDA_SUCCESS)
        return cuda_fail(r, "cuDevicePrimaryCtxRetain", op);
    }
    *ctx = reg.primary;
  }
  if ((r = d.CtxSetCurrent(*ctx)) != CUDA_SUCCESS) return cuda_fail(r, "cuCtxSetCurrent", op);
  return DIETCODE_OK;
}

int context_state(CUcontext ctx, const char* op, ContextState** out) {
  const Driver& d = driver();
  unsigned long long id = 0;
  CUresult r = d.CtxGetId(ctx, &id);
  if (r != CUDA_SUCCESS) return cuda_fail(r, "cuCtxGetId", op);
  Registry& reg = registry();  // the caller holds reg.mu
  for (ContextState* s : reg.contexts)
    if (s->ctx == ctx && s->id == id) {
      *out = s;
      return DIETCODE_OK;
    }
  CUdevice dev;
  int major = 0, minor = 0, pools = 0;
  if ((r = d.CtxGetDevice(&dev)) != CUDA_SUCCESS) return cuda_fail(r, "cuCtxGetDevice", op);
  d.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  d.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  d.DeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, dev);
  auto* s = new ContextState;
  s->ctx = ctx;
  s->id = id;
  s->cc = major * 10 + minor;
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
  s->kernels.resize(kPack.n_ops);
  for (int i = 0; i < kPack.n_ops; ++i) s->kernels[i].resize(kPack.ops[i].n_kernels);
  reg.contexts.push_back(s);
  *out = s;
  return DIETCODE_OK;
}

std::string available_archs(const KernelDesc& k) {
  std::string out;
  for (int i = 0; i < k.n_cubins; ++i)
    out += (out.empty() ? "sm_" : ", sm_") + std::to_string(k.cubins[i].cc) +
           (k.cubins[i].arch_specific ? "a" : "");
  if (k.ptx) out += (out.empty() ? "PTX compute_" : " and PTX compute_") + std::to_string(k.ptx_cc);
  return out;
}

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
  if ((r = d.ModuleGetFunction(&out->main, module, k.entry)) != CUDA_SUCCESS)
    return cuda_fail(r, "cuModuleGetFunction", op.name);
  if (k.reduce_entry && *k.reduce_entry &&
      (r = d.ModuleGetFunction(&out->reduce, module, k.reduce_entry)) != CUDA_SUCCESS)
    return cuda_fail(r, "cuModuleGetFunction (reduce)", op.name);
  // Above 48 KB of dynamic shared memory a kernel must opt in.
  if (k.dynamic_smem_bytes > 48 * 1024 &&
      (r = d.FuncSetAttribute(out->main, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                              k.dynamic_smem_bytes)) != CUDA_SUCCESS)
    return cuda_fail(r, "cuFuncSetAttribute(max dynamic shared memory)", op.name);
  out->loaded = true;
  return DIETCODE_OK;
}

bool aligned(const void* p, int bytes) {
  return bytes <= 1 || uintptr_t(p) % uintptr_t(bytes) == 0;
}

// What kernel `index` asks of a call: pointer alignment and a grid that fits one launch.
int check_kernel_fit(const OpDesc& op, int index, void* const* args, const DietcodeArgs& a,
                     int64_t grid[3]) {
  const KernelDesc& k = op.kernels[index];
  for (int i = 0; i < op.n_args; ++i) {
    int need = i == op.bias_arg ? op.elem_bytes : k.min_alignment_bytes;
    if (!aligned(args[i], need))
      return fail(DIETCODE_ERR_INVALID_ARGUMENT,
                  "op %s: argument %s (%p) is not aligned to %d bytes, as kernel %d needs", op.name,
                  op.arg_names[i], args[i], need, index);
  }
  int64_t unused[3];
  if (!main_grid(k, a, grid) || (k.split_k > 1 && !reduce_grid(k, a, unused)))
    return fail(DIETCODE_ERR_INVALID_ARGUMENT,
                "op %s: the shape is too large for kernel %d (grid %lld x %lld x %lld)", op.name,
                index, (long long)grid[0], (long long)grid[1], (long long)grid[2]);
  return DIETCODE_OK;
}

int launch(const OpDesc& op, const LoadedKernel& fn, const KernelDesc& k, DietcodeArgs& a,
           const int64_t grid[3], CUstream stream, const ContextState& s) {
  const Driver& d = driver();
  void* params[] = {&a};
  int64_t bytes = workspace_bytes(k, a);
  CUdeviceptr workspace = 0;
  CUresult r;
  if (bytes > 0) {
    r = s.pools ? d.MemAllocFromPoolAsync(&workspace, size_t(bytes), s.pool, stream)
                : d.MemAlloc(&workspace, size_t(bytes));
    if (r != CUDA_SUCCESS) return cuda_fail(r, "allocating the split-K workspace", op.name);
    a.workspace = reinterpret_cast<void*>(workspace);
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

}  // namespace

int launch_op(const OpDesc& op, void* const* args, int n_args, const int64_t* values, int n_values,
              void* stream) {
  try {
    // Everything about the call is checked before the driver is touched.
    if (!args) return fail(DIETCODE_ERR_INVALID_ARGUMENT, "op %s: args is NULL", op.name);
    if (n_args != op.n_args)
      return fail(DIETCODE_ERR_INVALID_ARGUMENT, "op %s takes %d arguments, got %d", op.name,
                  op.n_args, n_args);
    for (int i = 0; i < n_args; ++i)
      if (!args[i])
        return fail(DIETCODE_ERR_INVALID_ARGUMENT, "op %s: argument %s is NULL", op.name,
                    op.arg_names[i]);
    if (int status = check_values(op, values, n_values)) return status;

    DietcodeArgs a;
    std::memset(&a, 0, sizeof a);
    op.fill_shape(values, &a);
    if (a.batch < 0 || a.m < 0 || a.n < 0 || a.k < 0)
      return fail(DIETCODE_ERR_INVALID_ARGUMENT,
                  "op %s: these shape values give a negative "
                  "dimension (batch %lld, M %lld, N %lld, K %lld)",
                  op.name, a.batch, a.m, a.n, a.k);
    if (a.batch == 0 || a.m == 0 || a.n == 0) return DIETCODE_OK;  // an empty output

    // The newest arch's dispatcher chooses first, so that a call wrong for its kernel fails
    // before the driver is touched; a GPU served by another dispatcher chooses again below.
    int index = op.selects[0].select(values);
    int64_t grid[3];
    if (int status = check_kernel_fit(op, index, args, a, grid)) return status;
    a.a = args[0];
    a.b = args[1];
    a.bias = op.bias_arg >= 0 ? args[op.bias_arg] : nullptr;
    a.c = args[n_args - 1];

    const Driver& d = driver();
    if (d.status != DIETCODE_OK) return fail(d.status, "%s", d.why.c_str());
    CUcontext ctx;
    if (int status = current_context(op.name, &ctx)) return status;
    LoadedKernel fn;
    const ContextState* state = nullptr;
    {
      Registry& reg = registry();
      std::lock_guard<std::mutex> lock(reg.mu);
      ContextState* s = nullptr;
      if (int status = context_state(ctx, op.name, &s)) return status;
      const ArchSelect& chosen = op.selects[pick_dispatcher(op, s->cc)];
      if (chosen.select != op.selects[0].select) {
        index = chosen.select(values);
        if (int status = check_kernel_fit(op, index, args, a, grid)) return status;
      }
      LoadedKernel& slot = s->kernels[&op - kPack.ops][index];
      if (!slot.loaded)
        if (int status = load_kernel(op, index, *s, &slot)) return status;
      fn = slot;
      state = s;
    }
    return launch(op, fn, op.kernels[index], a, grid, static_cast<CUstream>(stream), *state);
  } catch (...) {  // std::bad_alloc: nothing else here throws
    return fail(DIETCODE_ERR_CUDA, "op %s: out of host memory", op.name);
  }
}

}  // namespace dietcode_pack

using dietcode_pack::fail;
using dietcode_pack::kPack;

DIETCODE_PACK_EXPORT int dietcode_abi_version(void) { return DIETCODE_ABI_VERSION; }

DIETCODE_PACK_EXPORT const char* dietcode_manifest(void) { return kPack.manifest; }

DIETCODE_PACK_EXPORT const char* dietcode_last_error(void) { return dietcode_pack::g_last_error; }

DIETCODE_PACK_EXPORT int dietcode_select(const char* op, const int64_t* shape_values,
                                         int n_values) {
  if (!op) return -fail(DIETCODE_ERR_INVALID_ARGUMENT, "op is NULL");
  const dietcode_pack::OpDesc* d = dietcode_pack::find_op(op);
  if (!d) return -dietcode_pack::unknown_op(op);
  if (int status = dietcode_pack::check_values(*d, shape_values, n_values)) return -status;
  return d->selects[0].select(shape_values);
}

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

DIETCODE_PACK_EXPORT int dietcode_launch(const char* op, void* const* args, int n_args,
                                         const int64_t* shape_values, int n_values, void* stream) {
  if (!op) return fail(DIETCODE_ERR_INVALID_ARGUMENT, "op is NULL");
  const dietcode_pack::OpDesc* d = dietcode_pack::find_op(op);
  if (!d) return dietcode_pack::unknown_op(op);
  return dietcode_pack::launch_op(*d, args, n_args, shape_values, n_values, stream);
}
