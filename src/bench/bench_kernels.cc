#include "bench/bench_kernels.h"

#include <algorithm>

#include "bench/im2col_index.h"
#include "common/error.h"
#include "cuda/driver.h"
#include "cuda/l2_flush.h"

namespace dietcode {

namespace {

// Activation codes shared by the source below and epilogue().
constexpr int kActNone = 0, kActRelu = 1, kActGelu = 2;

const char kSourceHead[] =
    R"(// dietcode bench helpers (generated at bench time; no headers, any arch from sm_75).
__device__ __forceinline__ float dc_activate(float v, int act) {
  if (act == 1) return v > 0.0f ? v : 0.0f;
  if (act == 2) return 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
  return v;
}
__device__ __forceinline__ float dc_from_f16(unsigned short bits) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits));
  return f;
}
__device__ __forceinline__ unsigned short dc_to_f16(float f) {
  unsigned short bits;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(f));
  return bits;
}
__device__ __forceinline__ float dc_from_bf16(unsigned short bits) {
  return __uint_as_float(((unsigned)bits) << 16);
}
__device__ __forceinline__ unsigned short dc_to_bf16(float f) {  // round to nearest even
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
#define DC_EPILOGUE(NAME, T, LOAD, STORE)                                                     \
  extern "C" __global__ void NAME(T* y, const T* bias, long long rows, long long cols,        \
                                  int act) {                                                  \
    const long long n = rows * cols;                                                          \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;               \
         i += (long long)gridDim.x * blockDim.x) {                                            \
      float v = LOAD(y[i]);                                                                   \
      if (bias) v += LOAD(bias[i % cols]);                                                    \
      y[i] = STORE(dc_activate(v, act));                                                      \
    }                                                                                         \
  }
#define DC_SAME(x) (x)
DC_EPILOGUE(dietcode_bench_epilogue_f32, float, DC_SAME, DC_SAME)
DC_EPILOGUE(dietcode_bench_epilogue_f16, unsigned short, dc_from_f16, dc_to_f16)
DC_EPILOGUE(dietcode_bench_epilogue_bf16, unsigned short, dc_from_bf16, dc_to_bf16)
extern "C" __global__ void dietcode_bench_spin(long long nanoseconds) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < (unsigned long long)nanoseconds);
}
)";

// im2col for the cuBLAS conv2d fallback: a copy, so one kernel per element size (fp16 and bf16
// share the 16-bit one; +0.0 is all-zero bits in all three types).
const char kIm2colKernels[] = R"(
#define DC_IM2COL(NAME, T)                                                                    \
  extern "C" __global__ void NAME(const T* x, T* col, long long total, long long gemm_k,      \
                                  long long c, long long s, long long p, long long q,         \
                                  long long h, long long w, int stride_h, int stride_w,       \
                                  int pad_h, int pad_w, int dilation_h, int dilation_w) {     \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;           \
         i += (long long)gridDim.x * blockDim.x) {                                            \
      const long long from = dietcode_im2col_source(i, gemm_k, c, s, p, q, h, w, stride_h,    \
                                                    stride_w, pad_h, pad_w, dilation_h,       \
                                                    dilation_w);                              \
      col[i] = from >= 0 ? x[from] : (T)0;                                                    \
    }                                                                                         \
  }
DC_IM2COL(dietcode_bench_im2col_32, float)
DC_IM2COL(dietcode_bench_im2col_16, unsigned short)
)";

std::string full_source() {
  return std::string(kSourceHead) + "\n" +
         DIETCODE_STRINGIZE_EXPANDED(DIETCODE_IM2COL_INDEX_FUNCTION(__device__ __forceinline__)) +
         "\n" + kIm2colKernels;
}

constexpr int kThreads = 256;

void launch(CUfunction f, CUstream stream, int64_t work, int blocks_cap, void** params,
            const char* what) {
  const int64_t blocks = std::clamp<int64_t>((work + kThreads - 1) / kThreads, 1, blocks_cap);
  check(driver().cuLaunchKernel(f, unsigned(blocks), 1, 1, kThreads, 1, 1, 0, stream, params,
                                nullptr),
        what);
}

}  // namespace

std::string bench_kernels_source() { return full_source(); }

CompileRequest bench_kernels_request(const std::string& arch) {
  CompileRequest request;
  request.name = "dietcode_bench_kernels.cu";
  request.source = full_source();
  request.archs = {arch};
  request.want_ptx = false;
  return request;
}

std::string bench_kernels_arch(int cc, const std::vector<int>& supported, bool* use_ptx) {
  int best = 0;
  for (int a : supported)
    if (a <= cc) best = std::max(best, a);
  *use_ptx = best != cc;
  return best ? "sm_" + std::to_string(best) : "";
}

BenchKernels::BenchKernels(Compiler& compiler, const std::vector<int>& supported, int cc_major,
                           int cc_minor) {
  const int cc = cc_major * 10 + cc_minor;
  bool use_ptx = false;
  arch_ = bench_kernels_arch(cc, supported, &use_ptx);
  if (arch_.empty())
    throw EnvironmentError("NVRTC cannot compile for this GPU (compute capability " +
                           std::to_string(cc_major) + "." + std::to_string(cc_minor) + ")");
  CompileRequest request = bench_kernels_request(arch_);
  request.want_ptx = use_ptx;
  CompileResult result = compiler.compile(request);
  if (!result.ok || (use_ptx ? result.ptx.empty() : result.binaries.empty()))
    throw EnvironmentError("compiling bench's helper kernels for " + arch_ +
                           " failed: " + result.log.substr(0, 300));
  module_ = Module(use_ptx ? result.ptx : result.binaries.front().cubin, "bench helper kernels");
  epilogue_f32_ = module_.function("dietcode_bench_epilogue_f32");
  epilogue_f16_ = module_.function("dietcode_bench_epilogue_f16");
  epilogue_bf16_ = module_.function("dietcode_bench_epilogue_bf16");
  // The flush is the tuner's own (cuda/l2_flush.h), so kernels are graded as they were chosen.
  flush_module_ = Module(std::string(l2_flush_ptx()), "L2 flush");
  flush_ = flush_module_.function(kL2FlushEntry);
  spin_ = module_.function("dietcode_bench_spin");
  im2col_32_ = module_.function("dietcode_bench_im2col_32");
  im2col_16_ = module_.function("dietcode_bench_im2col_16");
}

void BenchKernels::epilogue(CUstream stream, DType dtype, Epilogue epilogue, CUdeviceptr y,
                            CUdeviceptr bias, int64_t rows, int64_t cols) const {
  if (epilogue == Epilogue::kNone) return;
  int act = kActNone;
  if (epilogue == Epilogue::kRelu || epilogue == Epilogue::kBiasRelu) act = kActRelu;
  if (epilogue == Epilogue::kGelu || epilogue == Epilogue::kBiasGelu) act = kActGelu;
  CUdeviceptr bias_arg = epilogue_has_bias(epilogue) ? bias : 0;
  long long r = rows, c = cols;
  void* params[] = {&y, &bias_arg, &r, &c, &act};
  CUfunction f = dtype == DType::kFloat32   ? epilogue_f32_
                 : dtype == DType::kFloat16 ? epilogue_f16_
                                            : epilogue_bf16_;
  launch(f, stream, rows * cols, blocks_cap_, params, "launching bench's epilogue kernel");
}

void BenchKernels::im2col(CUstream stream, DType dtype, CUdeviceptr x, CUdeviceptr col,
                          const Conv2dShape& g) const {
  long long total = g.n * g.p * g.q * g.r * g.s * g.c, gemm_k = g.r * g.s * g.c;
  long long c = g.c, s = g.s, p = g.p, q = g.q, h = g.h, w = g.w;
  int stride_h = g.stride_h, stride_w = g.stride_w, pad_h = g.pad_h, pad_w = g.pad_w;
  int dilation_h = g.dilation_h, dilation_w = g.dilation_w;
  void* params[] = {&x, &col, &total,    &gemm_k,   &c,     &s,     &p,          &q,
                    &h, &w,   &stride_h, &stride_w, &pad_h, &pad_w, &dilation_h, &dilation_w};
  launch(dtype == DType::kFloat32 ? im2col_32_ : im2col_16_, stream, total, blocks_cap_, params,
         "launching bench's im2col kernel");
}

void BenchKernels::spin(CUstream stream, double microseconds) const {
  long long nanoseconds = static_cast<long long>(microseconds * 1e3);
  void* params[] = {&nanoseconds};
  check(driver().cuLaunchKernel(spin_, 1, 1, 1, 1, 1, 1, 0, stream, params, nullptr),
        "launching bench's spin kernel");
}

void BenchKernels::flush(CUstream stream, CUdeviceptr buffer, int64_t bytes) const {
  launch_l2_flush(flush_, stream, buffer, bytes, ++flush_value_);  // a new value each time
}

}  // namespace dietcode
