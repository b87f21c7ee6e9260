// Tensor-core micro-kernels on a real GPU against the 16-bit CPU reference: sampled dense_tc
// (mma.sync) micro-kernels on any sm_80+ GPU and dense_wgmma micro-kernels on compute
// capability 9.0 (compiled for sm_90a), in float16 and bfloat16, on BERT's layers, Llama-7B's
// MLP layers (N=11008 K=4096 and N=4096 K=11008), an odd 1000 x 776 layer and a 1001 x 771
// layer (K not a multiple of 8: the scalar load path), for M = 1..17, 31, 33, 127, 128, 129,
// 1000 and every epilogue. Also: split-K results are bitwise reproducible, and the 16-bit
// reference kernel agrees with the CPU. Skipped when the CUDA driver cannot be loaded or
// initialised (src/cuda/driver.h).
#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "../../templates/dietcode_args.h"
#include "codegen/generated_kernel.h"
#include "cuda/driver.h"
#include "measure/cpu_reference_half.h"
#include "nvrtc/dense_f32_nvrtc.h"

namespace dietcode {
namespace {

// The GPU this test runs on: the driver, device 0's primary context, its compute capability
// and opt-in shared memory, or why there is none.
struct Gpu {
  std::string error;  // empty when usable
  GpuSpec spec;       // cc_major, cc_minor and smem_per_block_optin filled in
  const Driver* d = nullptr;
};

const Gpu& gpu() {
  static const Gpu g = [] {
    Gpu g;
    g.d = driver_or_null(&g.error);
    if (!g.d) return g;
    CUdevice dev;
    CUcontext ctx;
    if (g.d->cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        g.d->cuDeviceGetAttribute(&g.spec.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                  dev) != CUDA_SUCCESS ||
        g.d->cuDeviceGetAttribute(&g.spec.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                  dev) != CUDA_SUCCESS ||
        g.d->cuDeviceGetAttribute(&g.spec.smem_per_block_optin,
                                  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                  dev) != CUDA_SUCCESS ||
        g.d->cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        g.d->cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
      g.error = "no usable GPU 0";
      g.d = nullptr;
      return g;
    }
    if (g.spec.cc_major < 8)
      g.error = "tensor-core templates need sm_80 or newer, GPU is " + g.spec.arch();
    return g;
  }();
  return g;
}

const Driver& drv() { return *gpu().d; }
bool hopper() { return gpu().spec.cc_major == 9 && gpu().spec.cc_minor == 0; }

#define CU_OK(call)                                                        \
  do {                                                                     \
    const CUresult rc_ = (call);                                           \
    ASSERT_EQ(rc_, CUDA_SUCCESS) << #call << ": " << cuda_error_name(rc_); \
  } while (0)

struct DeviceBuffer {
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr) drv().cuMemFree(ptr);
  }
};

void alloc(DeviceBuffer& b, size_t bytes) {
  if (b.bytes >= bytes) return;
  if (b.ptr) drv().cuMemFree(b.ptr);
  b.ptr = 0;
  b.bytes = 0;
  CU_OK(drv().cuMemAlloc(&b.ptr, bytes));
  b.bytes = bytes;
}

OpSpec dense_op(int64_t n, int64_t k, bool static_dims, DType dtype, Epilogue epilogue) {
  OpSpec op;
  op.name = "dense";
  op.kind = OpKind::kDense;
  op.dtype = dtype;
  op.epilogue = epilogue;
  op.dims = {{"M", Expr::parse("M")},
             {"N", static_dims ? Expr::constant(n) : Expr::parse("N")},
             {"K", static_dims ? Expr::constant(k) : Expr::parse("K")}};
  op.vars = {"M"};
  return op;
}

struct Sample {
  std::string label;
  std::string tmpl;
  std::map<std::string, int> params;
};

std::map<std::string, int> tc(int warps_m, int warps_n, int wm, int wn, int bk, int stages,
                              int split) {
  return {{"WARPS_M", warps_m}, {"WARPS_N", warps_n}, {"WM", wm},       {"WN", wn},
          {"BK", bk},           {"STAGES", stages},   {"SPLITK", split}};
}

std::map<std::string, int> wg(int wg_m, int bn, int stages, int split) {
  return {{"WG_M", wg_m}, {"BN", bn}, {"STAGES", stages}, {"SPLITK", split}};
}

// The sampled micro-kernels: dense_tc everywhere, dense_wgmma on compute capability 9.0.
std::vector<Sample> samples() {
  std::vector<Sample> s = {
      {"tc defaults 128x64 bk32 3 stages", "dense_tc", {}},
      {"tc 16x8 one warp 2 stages", "dense_tc", tc(1, 1, 16, 8, 32, 2, 1)},
      {"tc 16x64 bk64 4 stages splitk4", "dense_tc", tc(1, 4, 16, 16, 64, 4, 4)},
      {"tc 64x48 odd n8 bk64 3 stages", "dense_tc", tc(2, 2, 32, 24, 64, 3, 1)},
      {"tc 256x128 bk64 4 stages", "dense_tc", tc(4, 2, 64, 64, 64, 4, 1)},
      {"tc 128x128 8 warps splitk3", "dense_tc", tc(2, 4, 64, 32, 32, 4, 3)},
      {"tc 128x32 one warp splitk16", "dense_tc", tc(1, 1, 128, 32, 32, 2, 16)},
  };
  if (hopper()) {
    s.push_back({"wgmma 128x128 4 stages", "dense_wgmma", {}});
    s.push_back({"wgmma 64x64 2 stages splitk4", "dense_wgmma", wg(1, 64, 2, 4)});
    s.push_back({"wgmma 128x256 4 stages", "dense_wgmma", wg(2, 256, 4, 1)});
    s.push_back({"wgmma 64x128 6 stages splitk2", "dense_wgmma", wg(1, 128, 6, 2)});
  }
  return s;
}

struct Layer {
  int64_t n, k;
  int64_t max_m;  // the largest M the layer is checked at
};
const Layer kLayers[] = {{768, 768, 1000},  {2304, 768, 1000},   {3072, 768, 1000},
                         {768, 3072, 1000}, {11008, 4096, 1000}, {4096, 11008, 1000},
                         {1000, 776, 1000}, {1001, 771, 1000}};
const int64_t kMs[] = {1,  2,  3,  4,  5,  6,  7,  8,   9,   10,  11,  12,
                       13, 14, 15, 16, 17, 31, 33, 127, 128, 129, 1000};

// One layer's 16-bit inputs on host and device, and its reference accumulation.
struct LayerData {
  Layer layer;
  DType dtype;
  std::vector<uint16_t> x, w, bias;
  DenseAccumulation acc;
  std::map<Epilogue, std::vector<float>> want;
  DeviceBuffer dx, dw, dbias;
};

class DenseTcGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu().error.empty()) GTEST_SKIP() << "no GPU for tensor-core kernels: " << gpu().error;
  }

 public:
  // Inputs and references are built once per (layer, type) and shared by the tests.
  static LayerData& data(const Layer& layer, DType dtype) {
    static std::map<std::tuple<int64_t, int64_t, int>, std::unique_ptr<LayerData>> cache;
    auto& slot = cache[{layer.n, layer.k, int(dtype)}];
    if (!slot) {
      slot = std::make_unique<LayerData>();
      LayerData& d = *slot;
      d.layer = layer;
      d.dtype = dtype;
      std::mt19937 rng(unsigned(layer.n * 31 + layer.k + int(dtype)));
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      auto random = [&](size_t count) {
        std::vector<float> v(count);
        for (auto& e : v) e = dist(rng);
        return floats_to_elements(v, dtype);
      };
      d.x = random(size_t(layer.max_m * layer.k));
      d.w = random(size_t(layer.n * layer.k));
      d.bias = random(size_t(layer.n));
      d.acc = dense_accumulate_16bit(d.x.data(), d.w.data(), layer.max_m, layer.n, layer.k, dtype);
      alloc(d.dx, d.x.size() * 2);
      alloc(d.dw, d.w.size() * 2);
      alloc(d.dbias, d.bias.size() * 2);
      drv().cuMemcpyHtoD(d.dx.ptr, d.x.data(), d.x.size() * 2);
      drv().cuMemcpyHtoD(d.dw.ptr, d.w.data(), d.w.size() * 2);
      drv().cuMemcpyHtoD(d.dbias.ptr, d.bias.data(), d.bias.size() * 2);
    }
    return *slot;
  }

  static const std::vector<float>& want(LayerData& d, Epilogue e) {
    auto it = d.want.find(e);
    if (it == d.want.end())
      it = d.want
               .emplace(e,
                        dense_apply_epilogue_16bit(d.acc, d.bias.data(), e, d.layer.max_m, d.dtype))
               .first;
    return it->second;
  }
};

struct Job {
  std::string label;
  Layer layer;
  DType dtype;
  Epilogue epilogue;
  GeneratedKernel kernel;
  testing::NvrtcBuild build;
};

// Generates and compiles every job at once (NVRTC compiles independent programs in parallel).
void compile_all(std::vector<Job>& jobs) {
  std::vector<std::future<testing::NvrtcBuild>> builds;
  for (const Job& job : jobs)
    builds.push_back(std::async(std::launch::async, [&job] {
      return testing::nvrtc_build(job.kernel.name + ".cu", job.kernel.source, job.kernel.options,
                                  compile_arch(job.kernel, gpu().spec));
    }));
  for (size_t i = 0; i < jobs.size(); ++i) jobs[i].build = builds[i].get();
}

Job make_job(const Sample& sample, Layer layer, DType dtype, Epilogue epilogue, bool static_dims) {
  Job job;
  job.label = sample.label + (static_dims ? " static " : " dynamic ") + to_string(dtype) + " " +
              std::to_string(layer.n) + "x" + std::to_string(layer.k) + " epilogue " +
              to_string(epilogue);
  job.layer = layer;
  job.dtype = dtype;
  job.epilogue = epilogue;
  job.kernel = generate_kernel(dense_op(layer.n, layer.k, static_dims, dtype, epilogue),
                               MicroKernel{sample.tmpl, sample.params});
  return job;
}

bool fits(const Job& job) {
  return job.kernel.plan.dynamic_smem_bytes <= gpu().spec.smem_per_block_optin;
}

struct Module {
  CUmodule module = nullptr;
  ~Module() {
    if (module) drv().cuModuleUnload(module);
  }
};

// Launches a compiled kernel (and its split-K reduction) for M rows of a layer into y.
void launch(const Job& job, CUmodule module, LayerData& d, int64_t M, CUdeviceptr y,
            CUdeviceptr ws) {
  const LaunchPlan& plan = job.kernel.plan;
  CUfunction main = nullptr, reduce = nullptr;
  CU_OK(drv().cuModuleGetFunction(&main, module, plan.entry.c_str()));
  if (plan.dynamic_smem_bytes > 48 * 1024)
    CU_OK(drv().cuFuncSetAttribute(main, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   plan.dynamic_smem_bytes));
  DietcodeArgs args;
  std::memset(&args, 0, sizeof(args));
  args.a = reinterpret_cast<const void*>(d.dx.ptr);
  args.b = reinterpret_cast<const void*>(d.dw.ptr);
  args.bias = reinterpret_cast<const void*>(d.dbias.ptr);
  args.c = reinterpret_cast<void*>(y);
  args.workspace = plan.split_k > 1 ? reinterpret_cast<void*>(ws) : nullptr;
  args.batch = 1, args.m = M, args.n = d.layer.n, args.k = d.layer.k;
  args.stride_a = M * d.layer.k, args.stride_b = d.layer.n * d.layer.k;
  args.stride_c = M * d.layer.n;
  void* params[] = {&args};
  const GemmShape shape{1, M, d.layer.n, d.layer.k};
  unsigned g[3];
  plan.grid(shape, g);
  CU_OK(drv().cuLaunchKernel(main, g[0], g[1], g[2], unsigned(plan.threads), 1, 1,
                             unsigned(plan.dynamic_smem_bytes), nullptr, params, nullptr));
  if (!plan.reduce_entry.empty()) {
    CU_OK(drv().cuModuleGetFunction(&reduce, module, plan.reduce_entry.c_str()));
    plan.reduce_grid(shape, g);
    CU_OK(drv().cuLaunchKernel(reduce, g[0], g[1], g[2], unsigned(plan.reduce_threads), 1, 1, 0,
                               nullptr, params, nullptr));
  }
  CU_OK(drv().cuCtxSynchronize());
}

// Every M of the list for one job; stops at the first wrong M to keep the report short.
void check_job(const Job& job) {
  SCOPED_TRACE(job.label);
  ASSERT_TRUE(job.build.ok) << job.build.log;
  LayerData& d = DenseTcGpu::data(job.layer, job.dtype);
  const auto& want = DenseTcGpu::want(d, job.epilogue);
  const uint16_t* bias = epilogue_has_bias(job.epilogue) ? d.bias.data() : nullptr;
  Module m;
  CU_OK(drv().cuModuleLoadData(&m.module, job.build.cubin.data()));
  static DeviceBuffer y, ws;
  const int64_t max_m = job.layer.max_m;
  alloc(y, size_t(max_m * d.layer.n) * 2 + 256);
  alloc(ws, size_t(std::max(job.kernel.plan.split_k, 1) * max_m * d.layer.n) * 4);
  std::vector<uint16_t> got(size_t(max_m * d.layer.n) + 128);
  for (const int64_t M : kMs) {
    if (M > max_m) continue;
    const size_t count = size_t(M * d.layer.n);
    CU_OK(drv().cuMemsetD8(y.ptr, 0xFF, (count + 128) * 2));  // NaN: unwritten outputs fail
    ASSERT_NO_FATAL_FAILURE(launch(job, m.module, d, M, y.ptr, ws.ptr));
    CU_OK(drv().cuMemcpyDtoH(got.data(), y.ptr, (count + 128) * 2));
    for (size_t i = count; i < count + 128; ++i)
      ASSERT_EQ(got[i], 0xFFFF) << "M=" << M << ": Y written past its end at " << i;
    const auto cmp = compare_dense_16bit(got.data(), want, d.acc, bias, M, job.dtype);
    ASSERT_TRUE(cmp.ok) << "M=" << M << ": " << cmp.message;
  }
}

}  // namespace

// Sample i on layer j uses epilogue (i + j) % 6 and type (i + j) % 2, so every epilogue and
// type meets every sample and every layer; samples 0 and 2 also run with runtime N and K.
TEST_F(DenseTcGpu, SampledMicroKernelsMatchTheReference) {
  std::vector<Job> jobs;
  const auto s = samples();
  for (size_t i = 0; i < s.size(); ++i)
    for (size_t j = 0; j < std::size(kLayers); ++j) {
      const auto epilogue = static_cast<Epilogue>((i + j) % 6);
      const DType dtype = (i + j) % 2 ? DType::kFloat16 : DType::kBFloat16;
      jobs.push_back(make_job(s[i], kLayers[j], dtype, epilogue, true));
      if (i == 0 || i == 2 || i == 7)
        jobs.push_back(make_job(s[i], kLayers[j], dtype, epilogue, false));
    }
  std::vector<Job> runnable;
  for (auto& job : jobs)
    if (fits(job)) runnable.push_back(std::move(job));
  compile_all(runnable);
  for (const Job& job : runnable) check_job(job);
}

TEST_F(DenseTcGpu, SplitKIsBitwiseReproducible) {
  std::vector<Job> jobs{
      make_job(samples()[5], {768, 3072, 1000}, DType::kBFloat16, Epilogue::kBias, true)};
  if (hopper())
    jobs.push_back(
        make_job(samples()[8], {768, 3072, 1000}, DType::kFloat16, Epilogue::kGelu, true));
  compile_all(jobs);
  for (const Job& job : jobs) {
    SCOPED_TRACE(job.label);
    ASSERT_TRUE(job.build.ok) << job.build.log;
    LayerData& d = data(job.layer, job.dtype);
    Module m;
    CU_OK(drv().cuModuleLoadData(&m.module, job.build.cubin.data()));
    DeviceBuffer y, ws;
    alloc(y, size_t(1000 * 768) * 2);
    alloc(ws, size_t(16 * 1000 * 768) * 4);
    std::vector<uint16_t> first(1000 * 768), again(1000 * 768);
    for (int run = 0; run < 3; ++run) {
      ASSERT_NO_FATAL_FAILURE(launch(job, m.module, d, 1000, y.ptr, ws.ptr));
      CU_OK(drv().cuMemcpyDtoH(run == 0 ? first.data() : again.data(), y.ptr, first.size() * 2));
      if (run > 0) EXPECT_EQ(std::memcmp(first.data(), again.data(), first.size() * 2), 0);
    }
  }
}

TEST_F(DenseTcGpu, ReferenceKernelMatchesTheCpu) {
  for (const DType dtype : {DType::kFloat16, DType::kBFloat16})
    for (const Epilogue e : {Epilogue::kNone, Epilogue::kBiasGelu}) {
      Job job;
      job.layer = {1001, 771, 1000};
      job.dtype = dtype;
      job.epilogue = e;
      job.label = std::string("reference_gemm ") + to_string(dtype) + " " + to_string(e);
      job.kernel = generate_reference_kernel(dense_op(1001, 771, false, dtype, e));
      job.build = testing::nvrtc_build("reference_gemm.cu", job.kernel.source, job.kernel.options,
                                       gpu().spec.arch());
      check_job(job);
    }
}

}  // namespace dietcode
