#include "gpu/gemm_gpu_util.h"

#include <cmath>
#include <cstring>
#include <future>
#include <random>

#include "pack/runtime/pack_tensor_maps.h"

namespace dietcode::testing {

const TestGpu& test_gpu() {
  static const TestGpu g = [] {
    TestGpu g;
    g.d = driver_or_null(&g.error);
    if (!g.d) return g;
    CUdevice dev;
    CUcontext ctx;
    int major = 0, minor = 0;
    if (g.d->cuInit(0) != CUDA_SUCCESS || g.d->cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        g.d->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) !=
            CUDA_SUCCESS ||
        g.d->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) !=
            CUDA_SUCCESS ||
        g.d->cuDeviceGetAttribute(&g.spec.smem_per_block_optin,
                                  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                  dev) != CUDA_SUCCESS ||
        g.d->cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        g.d->cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
      g.error = "no usable GPU 0";
      g.d = nullptr;
      return g;
    }
    g.spec.cc_major = major;
    g.spec.cc_minor = minor;
    g.arch = g.spec.arch();
    return g;
  }();
  return g;
}

namespace {

std::string check(CUresult rc, const char* what) {
  return rc == CUDA_SUCCESS ? std::string() : std::string(what) + ": " + cuda_error_name(rc);
}

}  // namespace

GpuBuffer::~GpuBuffer() {
  if (ptr_) test_gpu().d->cuMemFree(ptr_);
}

std::string GpuBuffer::reserve(size_t bytes) {
  if (bytes <= bytes_) return "";
  const Driver& d = *test_gpu().d;
  if (ptr_) d.cuMemFree(ptr_);
  ptr_ = 0;
  bytes_ = 0;
  if (auto e = check(d.cuMemAlloc(&ptr_, bytes), "cuMemAlloc"); !e.empty()) return e;
  bytes_ = bytes;
  return "";
}

std::string GpuBuffer::upload_bytes(const void* host, size_t bytes) {
  if (auto e = reserve(bytes); !e.empty()) return e;
  return check(test_gpu().d->cuMemcpyHtoD(ptr_, host, bytes), "cuMemcpyHtoD");
}

std::string GpuBuffer::download_bytes(void* host, size_t bytes) const {
  return check(test_gpu().d->cuMemcpyDtoH(host, ptr_, bytes), "cuMemcpyDtoH");
}

std::string GpuBuffer::fill_nan(size_t count) {
  if (auto e = reserve(count * 4); !e.empty()) return e;
  return check(test_gpu().d->cuMemsetD32(ptr_, 0x7fc00000u, count), "cuMemsetD32");
}

std::string GpuBuffer::fill_bytes(unsigned char value, size_t bytes) {
  if (auto e = reserve(bytes); !e.empty()) return e;
  return check(test_gpu().d->cuMemsetD8(ptr_, value, bytes), "cuMemsetD8");
}

void compile_all(std::vector<CompiledKernel>& kernels) {
  std::vector<std::future<NvrtcBuild>> builds;
  for (const CompiledKernel& k : kernels)
    builds.push_back(std::async(std::launch::async, [&k] {
      return nvrtc_build(k.kernel.name + ".cu", k.kernel.source, k.kernel.options,
                         compile_arch(k.kernel, test_gpu().spec));
    }));
  for (size_t i = 0; i < kernels.size(); ++i) kernels[i].build = builds[i].get();
}

// The tensor maps of a kernel with a TMA producer, as a kernel pack encodes them (operands are
// 16-bit: the only types of the templates that have one). Empty, or the error text.
static std::string encode_maps(const Driver& d, const LaunchPlan& plan, const DietcodeArgs& args,
                               CUtensorMap maps[dietcode_pack::kTensorMaps]) {
  if (!d.cuTensorMapEncodeTiled) return "the driver has no cuTensorMapEncodeTiled";
  dietcode_pack::TensorMapLayout layouts[dietcode_pack::kTensorMaps];
  int refused = 0;
  if (const char* why = dietcode_pack::gemm_tensor_map_layouts(
          args, plan.tile_m, plan.tile_n, plan.tma_box_k, 2, layouts, &refused))
    return std::string("tensor map of ") + (refused == dietcode_pack::kTensorMapA ? "A" : "B") +
           ": " + why;
  for (int which = 0; which < dietcode_pack::kTensorMaps; ++which)
    if (auto e = check(dietcode_pack::encode_tensor_map(d.cuTensorMapEncodeTiled, layouts[which],
                                                        &maps[which]),
                       "cuTensorMapEncodeTiled");
        !e.empty())
      return e;
  return "";
}

std::string launch_and_wait(const CompiledKernel& k, DietcodeArgs args, const GemmShape& shape) {
  const Driver& d = *test_gpu().d;
  const LaunchPlan& plan = k.kernel.plan;
  if (!k.build.ok) return "the kernel did not compile: " + k.build.log;
  CUmodule module = nullptr;
  if (auto e = check(d.cuModuleLoadData(&module, k.build.cubin.data()), "cuModuleLoadData");
      !e.empty())
    return e;
  std::string error;
  static GpuBuffer workspace;  // one test thread: shared by every launch
  CUfunction main = nullptr, reduce = nullptr;
  error = check(d.cuModuleGetFunction(&main, module, plan.entry.c_str()), "cuModuleGetFunction");
  if (error.empty() && plan.dynamic_smem_bytes > 48 * 1024)
    error = check(d.cuFuncSetAttribute(main, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                       plan.dynamic_smem_bytes),
                  "cuFuncSetAttribute");
  if (error.empty() && plan.workspace_bytes(shape) > 0) {
    error = workspace.reserve(size_t(plan.workspace_bytes(shape)));
    args.workspace = workspace.as_arg();
  }
  CUtensorMap maps[dietcode_pack::kTensorMaps];
  if (error.empty() && plan.tma_box_k > 0) error = encode_maps(d, plan, args, maps);
  void* params[] = {&args, &maps[0], &maps[1]};  // only a TMA kernel reads the maps
  unsigned g[3];
  if (error.empty()) {
    plan.grid(shape, g);
    error = check(d.cuLaunchKernel(main, g[0], g[1], g[2], unsigned(plan.threads), 1, 1,
                                   unsigned(plan.dynamic_smem_bytes), nullptr, params, nullptr),
                  "cuLaunchKernel");
  }
  if (error.empty() && !plan.reduce_entry.empty()) {
    error = check(d.cuModuleGetFunction(&reduce, module, plan.reduce_entry.c_str()),
                  "cuModuleGetFunction(reduce)");
    if (error.empty()) {
      plan.reduce_grid(shape, g);
      error = check(d.cuLaunchKernel(reduce, g[0], g[1], g[2], unsigned(plan.reduce_threads), 1, 1,
                                     0, nullptr, params, nullptr),
                    "cuLaunchKernel(reduce)");
    }
  }
  if (error.empty()) error = check(d.cuCtxSynchronize(), "cuCtxSynchronize");
  d.cuModuleUnload(module);
  return error;
}

std::string launch_dense(const CompiledKernel& k, const GpuBuffer& x, const GpuBuffer& w,
                         const GpuBuffer& bias, const GpuBuffer& y, int64_t M, int64_t N,
                         int64_t K) {
  DietcodeArgs args;
  std::memset(&args, 0, sizeof(args));
  args.a = x.as_arg();
  args.b = w.as_arg();
  args.bias = bias.as_arg();
  args.c = y.as_arg();
  args.batch = 1, args.m = M, args.n = N, args.k = K;
  args.stride_a = M * K, args.stride_b = N * K, args.stride_c = M * N;
  return launch_and_wait(k, args, GemmShape{1, M, N, K});
}

std::string dense_runs_agree_bitwise(const CompiledKernel& k, const GpuBuffer& x,
                                     const GpuBuffer& w, const GpuBuffer& bias, int64_t M,
                                     int64_t N, int64_t K, size_t element_bytes) {
  const size_t bytes = size_t(M * N) * element_bytes;
  GpuBuffer y;
  if (auto e = y.reserve(bytes); !e.empty()) return e;
  std::vector<unsigned char> first(bytes), again(bytes);
  for (int run = 0; run < 3; ++run) {
    if (auto e = launch_dense(k, x, w, bias, y, M, N, K); !e.empty()) return e;
    if (auto e = y.download_bytes(run == 0 ? first.data() : again.data(), bytes); !e.empty())
      return e;
    if (run > 0 && std::memcmp(first.data(), again.data(), bytes) != 0)
      return "run " + std::to_string(run) + " differs from run 0";
  }
  return "";
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

}  // namespace dietcode::testing
