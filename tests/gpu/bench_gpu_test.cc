// bench's GPU paths on a real GPU (skipped without one): the cuBLAS and cuBLASLt baselines
// compute what the pack ops define (row-major dense with every epilogue, batch_matmul with
// every transpose, fp16) for small odd shapes, checked against a CPU reference in double; the
// L2 flush kernel writes its whole buffer, the spin kernel holds the stream; and
// `dietcode bench` reaches the pack launch.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/baseline.h"
#include "bench/bench_kernels.h"
#include "bench/host_tensors.h"
#include "cuda/device_buffer.h"
#include "cuda/driver.h"
#include "cuda/event.h"
#include "cuda/primary_context.h"
#include "cuda/stream.h"
#include "nvrtc/nvrtc_compiler.h"

namespace dietcode {
namespace {

double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}
double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

class BenchGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!driver_or_null(&why)) GTEST_SKIP() << why;
    context_ = std::make_unique<PrimaryContext>(0);
    stream_ = std::make_unique<Stream>();
    int cc_major = 0, cc_minor = 0;
    CUdevice device = context_->device();
    check(driver().cuDeviceGetAttribute(&cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                        device),
          "cc");
    check(driver().cuDeviceGetAttribute(&cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                        device),
          "cc");
    kernels_ = std::make_unique<BenchKernels>(compiler_, NvrtcCompiler::supported_archs(), cc_major,
                                              cc_minor);
  }

  std::unique_ptr<Baseline> baseline(const std::string& name) {
    BaselineOptions options;
    options.stream = stream_->get();
    options.kernels = kernels_.get();
    return make_baseline(name, options);
  }

  // Runs `name` on the op at `shape` with seeded inputs; returns the output as floats and the
  // inputs as floats in *x, *w, *bias.
  std::vector<float> run(const std::string& name, const OpSpec& op, const GemmShape& s,
                         std::vector<float>* x, std::vector<float>* w, std::vector<float>* bias) {
    const int64_t nx = s.batch * s.M * s.K, nw = s.batch * s.N * s.K, ny = s.batch * s.M * s.N;
    const auto xb = random_tensor(op.dtype, nx, 11), wb = random_tensor(op.dtype, nw, 12);
    const auto bb = random_tensor(op.dtype, s.N, 13);
    *x = tensor_to_floats(op.dtype, xb.data(), nx);
    *w = tensor_to_floats(op.dtype, wb.data(), nw);
    *bias = tensor_to_floats(op.dtype, bb.data(), s.N);
    DeviceBuffer dx(xb.size()), dw(wb.size()), dbias(bb.size());
    DeviceBuffer dy(size_t(ny) * size_t(dtype_bytes(op.dtype)));
    dx.upload(xb), dw.upload(wb), dbias.upload(bb);
    dy.fill_bytes(0xff);
    context_->synchronize();
    std::unique_ptr<Baseline> b = baseline(name);
    std::string what;
    EXPECT_TRUE(b->supports(op, &what));
    b->prepare(op, s, GemmOperands{dx.ptr(), dw.ptr(), dbias.ptr(), dy.ptr()});
    b->run();
    stream_->synchronize();
    std::vector<unsigned char> out(dy.bytes());
    dy.download(out.data(), out.size());
    return tensor_to_floats(op.dtype, out.data(), ny);
  }

  NvrtcCompiler compiler_;
  std::unique_ptr<PrimaryContext> context_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<BenchKernels> kernels_;
};

// Y = act(X W^T + bias), row-major, in double; `gelu` picks the GELU formula.
std::vector<float> dense_reference(const GemmShape& s, const std::vector<float>& x,
                                   const std::vector<float>& w, const std::vector<float>& bias,
                                   Epilogue e, double (*gelu)(double)) {
  std::vector<float> y(size_t(s.M * s.N));
  for (int64_t m = 0; m < s.M; ++m)
    for (int64_t n = 0; n < s.N; ++n) {
      double v = 0;
      for (int64_t k = 0; k < s.K; ++k)
        v += double(x[size_t(m * s.K + k)]) * w[size_t(n * s.K + k)];
      if (epilogue_has_bias(e)) v += bias[size_t(n)];
      if (e == Epilogue::kRelu || e == Epilogue::kBiasRelu) v = v > 0 ? v : 0;
      if (e == Epilogue::kGelu || e == Epilogue::kBiasGelu) v = gelu(v);
      y[size_t(m * s.N + n)] = float(v);
    }
  return y;
}

TEST_F(BenchGpu, DenseBaselinesMatchTheCpuForEveryEpilogue) {
  const GemmShape s{1, 37, 29, 19};  // odd: no tile divides it
  for (const char* name : {"cublas", "cublaslt"})
    for (Epilogue e : {Epilogue::kNone, Epilogue::kBias, Epilogue::kRelu, Epilogue::kBiasRelu,
                       Epilogue::kGelu, Epilogue::kBiasGelu}) {
      SCOPED_TRACE(std::string(name) + " " + to_string(e));
      OpSpec op;
      op.name = "dense";
      op.epilogue = e;
      std::vector<float> x, w, bias;
      const std::vector<float> got = run(name, op, s, &x, &w, &bias);
      const double rtol = agreement_rtol(DType::kFloat32, false);
      const Agreement tanh_form =
          compare_outputs(got, dense_reference(s, x, w, bias, e, gelu_tanh), s.K, rtol);
      if (std::string(name) == "cublaslt" && (e == Epilogue::kGelu || e == Epilogue::kBiasGelu)) {
        // cublasLt.h does not say which GELU it computes: accept either form, and say which.
        const Agreement erf_form =
            compare_outputs(got, dense_reference(s, x, w, bias, e, gelu_erf), s.K, rtol / 20);
        const Agreement tight_tanh =
            compare_outputs(got, dense_reference(s, x, w, bias, e, gelu_tanh), s.K, rtol / 20);
        std::printf("cuBLASLt GELU matches the %s form\n", tight_tanh.ok() ? "tanh"
                                                           : erf_form.ok() ? "erf"
                                                                           : "(neither)");
        EXPECT_TRUE(tanh_form.ok() || erf_form.ok()) << tanh_form.message(s.N);
      } else {
        EXPECT_TRUE(tanh_form.ok()) << tanh_form.message(s.N);
      }
    }
}

TEST_F(BenchGpu, BatchMatmulBaselinesEveryTranspose) {
  const GemmShape s{3, 5, 7, 9};
  for (const char* name : {"cublas", "cublaslt"})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        SCOPED_TRACE(std::string(name) + (ta ? " A^T" : " A") + (tb ? " B^T" : " B"));
        OpSpec op;
        op.name = "bmm";
        op.kind = OpKind::kBatchMatmul;
        op.transpose_a = ta, op.transpose_b = tb;
        std::vector<float> a, b, unused;
        const std::vector<float> got = run(name, op, s, &a, &b, &unused);
        std::vector<float> want(got.size());
        for (int64_t bi = 0; bi < s.batch; ++bi)
          for (int64_t m = 0; m < s.M; ++m)
            for (int64_t n = 0; n < s.N; ++n) {
              double v = 0;
              for (int64_t k = 0; k < s.K; ++k) {
                const size_t a0 = size_t(bi * s.M * s.K), b0 = size_t(bi * s.K * s.N);
                const double av = ta ? a[a0 + size_t(k * s.M + m)] : a[a0 + size_t(m * s.K + k)];
                const double bv = tb ? b[b0 + size_t(n * s.K + k)] : b[b0 + size_t(k * s.N + n)];
                v += av * bv;
              }
              want[size_t((bi * s.M + m) * s.N + n)] = float(v);
            }
        const Agreement agreement =
            compare_outputs(got, want, s.K, agreement_rtol(DType::kFloat32, false));
        EXPECT_TRUE(agreement.ok()) << agreement.message(s.N);
      }
}

TEST_F(BenchGpu, HalfPrecisionDense) {
  const GemmShape s{1, 33, 40, 24};
  for (DType dtype : {DType::kFloat16, DType::kBFloat16})
    for (const char* name : {"cublas", "cublaslt"}) {
      SCOPED_TRACE(std::string(name) + " " + to_string(dtype));
      OpSpec op;
      op.name = "dense";
      op.dtype = dtype;
      op.epilogue = Epilogue::kBiasRelu;
      std::vector<float> x, w, bias;
      const std::vector<float> got = run(name, op, s, &x, &w, &bias);
      const Agreement agreement =
          compare_outputs(got, dense_reference(s, x, w, bias, op.epilogue, gelu_tanh), s.K,
                          agreement_rtol(dtype, false));
      EXPECT_TRUE(agreement.ok()) << agreement.message(s.N);
    }
}

TEST_F(BenchGpu, FlushWritesTheWholeBuffer) {
  DeviceBuffer buffer(size_t(3) << 20);
  buffer.fill_bytes(0);
  context_->synchronize();
  kernels_->flush(stream_->get(), buffer.ptr(), int64_t(buffer.bytes()));
  stream_->synchronize();
  const std::vector<uint32_t> words = buffer.download<uint32_t>();
  ASSERT_FALSE(words.empty());
  EXPECT_NE(words[0], 0u);
  for (uint32_t v : words) ASSERT_EQ(v, words[0]);
}

TEST_F(BenchGpu, SpinHoldsTheStream) {
  Event start, end;
  start.record(stream_->get());
  kernels_->spin(stream_->get(), 2000);
  end.record(stream_->get());
  const float ms = Event::elapsed_ms(start, end);
  EXPECT_GE(ms, 1.9f);
  EXPECT_LT(ms, 50.0f);
}

TEST_F(BenchGpu, CliReachesThePackLaunch) {
  // The stand-in pack (a test double) launches nothing: bench gets through context, helper
  // kernels, cuBLAS and allocation, then stops at the launch with the pack's own message.
  const std::string command = "'" DIETCODE_CLI_PATH "' bench '" DIETCODE_TEST_PACK_DIR
                              "/libtest_pack_dims.so' --shapes T=1 -q 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  const int status = pclose(pipe);
  EXPECT_EQ(WEXITSTATUS(status), 2) << out;
  EXPECT_NE(out.find("libtest_pack_dims.so: op qkv at T=1: dietcode_launch returned "
                     "DIETCODE_ERR_NO_DEVICE: test double: this pack launches nothing"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace dietcode
