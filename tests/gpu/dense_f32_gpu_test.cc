// dense_f32 micro-kernels on a real GPU against the CPU reference: sampled micro-kernels
// (every pipeline mode and vector width, small and large tiles, split-K, non-power-of-two
// thread tiles, static and dynamic N/K) on BERT's layers and an odd 1000 x 771 layer, for
// M = 1..17, 31, 33, 63, 127..129, 255, 1000, 2047, 2048 and every epilogue. Also: split-K
// results are bitwise reproducible, and the reference kernel agrees with the CPU.
// Skipped when the CUDA driver cannot be loaded or initialised (src/cuda/driver.h).
#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../../templates/dietcode_args.h"
#include "codegen/generated_kernel.h"
#include "cuda/driver.h"
#include "measure/cpu_reference.h"
#include "nvrtc/dense_f32_nvrtc.h"

namespace dietcode {
namespace {

// The GPU this test runs on: the driver (src/cuda), device 0's primary context and its arch,
// or why there is none.
struct Gpu {
  std::string error;  // empty when usable
  std::string arch;   // "sm_90"
  const Driver* d = nullptr;
};

const Gpu& gpu() {
  static const Gpu g = [] {
    Gpu g;
    g.d = driver_or_null(&g.error);
    if (!g.d) return g;
    CUdevice dev;
    CUcontext ctx;
    int major = 0, minor = 0;
    if (g.d->cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        g.d->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) !=
            CUDA_SUCCESS ||
        g.d->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) !=
            CUDA_SUCCESS ||
        g.d->cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        g.d->cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
      g.error = "no usable GPU 0";
      g.d = nullptr;
      return g;
    }
    g.arch = "sm_" + std::to_string(major) + std::to_string(minor);
    return g;
  }();
  return g;
}

const Driver& drv() { return *gpu().d; }

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

OpSpec dense_op(int64_t n, int64_t k, bool static_dims, Epilogue epilogue) {
  OpSpec op;
  op.name = "dense";
  op.kind = OpKind::kDense;
  op.dtype = DType::kFloat32;
  op.epilogue = epilogue;
  op.dims = {{"M", Expr::parse("M")},
             {"N", static_dims ? Expr::constant(n) : Expr::parse("N")},
             {"K", static_dims ? Expr::constant(k) : Expr::parse("K")}};
  op.vars = {"M"};
  return op;
}

std::map<std::string, int> tile(int wm, int wn, int thm, int tm, int tn, int bk, int vec,
                                int stages, int split) {
  return {{"WARPS_M", wm},    {"WARPS_N", wn},  {"THREADS_M", thm}, {"THREADS_N", 32 / thm},
          {"TM", tm},         {"TN", tn},       {"BK", bk},         {"VEC", vec},
          {"STAGES", stages}, {"SPLITK", split}};
}

// The sampled micro-kernels.
const std::vector<std::pair<std::string, std::map<std::string, int>>>& samples() {
  static const std::vector<std::pair<std::string, std::map<std::string, int>>> s = {
      {"defaults 128x128 stages2 vec4", {}},
      {"128x128 bk16 cp.async3", tile(4, 2, 4, 8, 8, 16, 1, 3, 1)},
      {"64x32 bk8 single-buffer vec2", tile(2, 2, 4, 8, 2, 8, 2, 1, 1)},
      {"16x64 bk16 vec4 splitk4", tile(1, 2, 4, 4, 4, 16, 4, 2, 4)},
      {"4x32 bk8 vec2 single splitk2", tile(1, 1, 2, 2, 2, 8, 2, 1, 2)},
      {"12x96 tm6 tn3 cp.async4 splitk3", tile(1, 2, 2, 6, 3, 16, 1, 4, 3)},
      {"256x128 512thr cp.async3", tile(4, 4, 8, 8, 8, 16, 1, 3, 1)},
      {"16x32 bk32 cp.async3 splitk16", tile(1, 1, 4, 4, 4, 32, 1, 3, 16)},
  };
  return s;
}

struct Layer {
  int64_t n, k;
};
const Layer kLayers[] = {{768, 768}, {2304, 768}, {3072, 768}, {768, 3072}, {1000, 771}};
const int64_t kMs[] = {1,  2,  3,  4,  5,  6,  7,   8,   9,   10,  11,   12,   13,  14,
                       15, 16, 17, 31, 33, 63, 127, 128, 129, 255, 1000, 2047, 2048};
constexpr int64_t kMaxM = 2048;

// One layer's inputs on host and device, and its reference for kMaxM rows.
struct LayerData {
  Layer layer;
  std::vector<float> x, w, bias;
  DenseAccumulation acc;
  std::map<Epilogue, std::vector<float>> want;
  DeviceBuffer dx, dw, dbias;
};

class DenseF32Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu().error.empty()) GTEST_SKIP() << "no GPU: " << gpu().error;
  }

 public:
  // Layer data and references are built once per process and shared by the tests.
  static LayerData& data(const Layer& layer) {
    static std::map<std::pair<int64_t, int64_t>, std::unique_ptr<LayerData>> cache;
    auto& slot = cache[{layer.n, layer.k}];
    if (!slot) {
      slot = std::make_unique<LayerData>();
      LayerData& d = *slot;
      d.layer = layer;
      std::mt19937 rng(unsigned(layer.n * 31 + layer.k));
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      d.x.resize(size_t(kMaxM * layer.k));
      d.w.resize(size_t(layer.n * layer.k));
      d.bias.resize(size_t(layer.n));
      for (auto& v : d.x) v = dist(rng);
      for (auto& v : d.w) v = dist(rng);
      for (auto& v : d.bias) v = dist(rng);
      d.acc = dense_accumulate(d.x.data(), d.w.data(), kMaxM, layer.n, layer.k);
      alloc(d.dx, d.x.size() * 4);
      alloc(d.dw, d.w.size() * 4);
      alloc(d.dbias, d.bias.size() * 4);
      drv().cuMemcpyHtoD(d.dx.ptr, d.x.data(), d.x.size() * 4);
      drv().cuMemcpyHtoD(d.dw.ptr, d.w.data(), d.w.size() * 4);
      drv().cuMemcpyHtoD(d.dbias.ptr, d.bias.data(), d.bias.size() * 4);
    }
    return *slot;
  }

  static const std::vector<float>& want(LayerData& d, Epilogue e) {
    auto it = d.want.find(e);
    if (it == d.want.end())
      it = d.want.emplace(e, dense_apply_epilogue(d.acc, d.bias.data(), e, kMaxM)).first;
    return it->second;
  }
};

struct Job {
  std::string label;
  Layer layer;
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
                                  gpu().arch);
    }));
  for (size_t i = 0; i < jobs.size(); ++i) jobs[i].build = builds[i].get();
}

Job make_job(const std::string& sample, const std::map<std::string, int>& params, Layer layer,
             Epilogue epilogue, bool static_dims) {
  Job job;
  job.label = sample + (static_dims ? " static " : " dynamic ") + std::to_string(layer.n) + "x" +
              std::to_string(layer.k) + " epilogue " + std::to_string(int(epilogue));
  job.layer = layer;
  job.epilogue = epilogue;
  job.kernel = generate_kernel(dense_op(layer.n, layer.k, static_dims, epilogue),
                               MicroKernel{"dense_f32", params});
  return job;
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
  LayerData& d = DenseF32Gpu::data(job.layer);
  const auto& want = DenseF32Gpu::want(d, job.epilogue);
  const bool with_bias = job.epilogue == Epilogue::kBias || job.epilogue == Epilogue::kBiasRelu ||
                         job.epilogue == Epilogue::kBiasGelu;
  Module m;
  CU_OK(drv().cuModuleLoadData(&m.module, job.build.cubin.data()));
  static DeviceBuffer y, ws;
  alloc(y, size_t(kMaxM * d.layer.n) * 4);
  alloc(ws, size_t(std::max(job.kernel.plan.split_k, 1) * kMaxM * d.layer.n) * 4);
  std::vector<float> got(size_t(kMaxM * d.layer.n));
  for (const int64_t M : kMs) {
    const size_t count = size_t(M * d.layer.n);
    CU_OK(drv().cuMemsetD32(y.ptr, 0x7fc00000u, count));  // NaN: unwritten outputs fail
    ASSERT_NO_FATAL_FAILURE(launch(job, m.module, d, M, y.ptr, ws.ptr));
    CU_OK(drv().cuMemcpyDtoH(got.data(), y.ptr, count * 4));
    const auto cmp = compare_dense(got.data(), want, d.acc, with_bias ? d.bias.data() : nullptr, M);
    ASSERT_TRUE(cmp.ok) << "M=" << M << ": " << cmp.message;
  }
}

}  // namespace

// Micro-kernel i on layer j uses epilogue (i + j) % 6, so every epilogue meets every sample
// and every layer; the defaults and the split-K sample also run with runtime N and K, and the
// defaults run every epilogue on two layers.
TEST_F(DenseF32Gpu, SampledMicroKernelsMatchTheReference) {
  std::vector<Job> jobs;
  const auto& s = samples();
  for (size_t i = 0; i < s.size(); ++i)
    for (size_t j = 0; j < std::size(kLayers); ++j) {
      const auto epilogue = static_cast<Epilogue>((i + j) % 6);
      jobs.push_back(make_job(s[i].first, s[i].second, kLayers[j], epilogue, true));
      if (i == 0 || i == 3)
        jobs.push_back(make_job(s[i].first, s[i].second, kLayers[j], epilogue, false));
    }
  for (const size_t j : {size_t(0), size_t(4)})
    for (int e = 0; e < 6; ++e)
      if (size_t(e) != j % 6)
        jobs.push_back(
            make_job(s[0].first, s[0].second, kLayers[j], static_cast<Epilogue>(e), true));
  compile_all(jobs);
  for (const Job& job : jobs) check_job(job);
}

TEST_F(DenseF32Gpu, SplitKIsBitwiseReproducible) {
  std::vector<Job> jobs{
      make_job(samples()[7].first, samples()[7].second, {768, 3072}, Epilogue::kBias, true)};
  compile_all(jobs);
  ASSERT_TRUE(jobs[0].build.ok) << jobs[0].build.log;
  LayerData& d = data({768, 3072});
  Module m;
  CU_OK(drv().cuModuleLoadData(&m.module, jobs[0].build.cubin.data()));
  DeviceBuffer y, ws;
  alloc(y, size_t(1000 * 768) * 4);
  alloc(ws, size_t(16 * 1000 * 768) * 4);
  std::vector<float> first(1000 * 768), again(1000 * 768);
  for (int run = 0; run < 3; ++run) {
    ASSERT_NO_FATAL_FAILURE(launch(jobs[0], m.module, d, 1000, y.ptr, ws.ptr));
    CU_OK(drv().cuMemcpyDtoH(run == 0 ? first.data() : again.data(), y.ptr, first.size() * 4));
    if (run > 0) EXPECT_EQ(std::memcmp(first.data(), again.data(), first.size() * 4), 0);
  }
}

TEST_F(DenseF32Gpu, ReferenceKernelMatchesTheCpu) {
  for (const Epilogue e : {Epilogue::kNone, Epilogue::kBiasGelu, Epilogue::kRelu}) {
    Job job;
    job.label = "reference_gemm epilogue " + std::to_string(int(e));
    job.layer = {1000, 771};
    job.epilogue = e;
    job.kernel = generate_reference_kernel(dense_op(1000, 771, false, e));
    job.build = testing::nvrtc_build("reference_gemm.cu", job.kernel.source, job.kernel.options,
                                     gpu().arch);
    check_job(job);
  }
}

}  // namespace dietcode
