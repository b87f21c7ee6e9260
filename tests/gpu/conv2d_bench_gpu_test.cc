// bench's conv2d baselines on a real GPU (skipped without one): cuDNN (when it loads) and the
// cuBLAS+im2col fallback compute what the pack's conv2d defines (NHWC input, KRSC weights,
// stride/pad/dilation, every epilogue, fp16) against a CPU reference in double; and a small
// conv2d pack built by `dietcode build` is benched end to end against both, with every
// instance agreeing.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/baseline.h"
#include "bench/bench_kernels.h"
#include "bench/cudnn_loader.h"
#include "bench/host_tensors.h"
#include "cuda/device_buffer.h"
#include "cuda/driver.h"
#include "cuda/primary_context.h"
#include "cuda/stream.h"
#include "measure/conv2d_shape.h"
#include "nvrtc/nvrtc_compiler.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;

class ConvBaselineGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!driver_or_null(&why)) GTEST_SKIP() << why;
    context_ = std::make_unique<PrimaryContext>(0);
    stream_ = std::make_unique<Stream>();
    int major = 0, minor = 0;
    check(driver().cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                        context_->device()),
          "cc");
    check(driver().cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                        context_->device()),
          "cc");
    kernels_ =
        std::make_unique<BenchKernels>(compiler_, NvrtcCompiler::supported_archs(), major, minor);
  }

  // The baseline's output for `op` at `g` on seeded inputs, and the CPU reference's.
  void run(const std::string& name, const OpSpec& op, const Conv2dShape& g, std::vector<float>* got,
           std::vector<float>* want) {
    const int64_t nx = g.n * g.h * g.w * g.c, nw = g.k * g.r * g.s * g.c;
    const int64_t ny = g.n * g.p * g.q * g.k;
    const auto xb = random_tensor(op.dtype, nx, 21), wb = random_tensor(op.dtype, nw, 22);
    const auto bb = random_tensor(op.dtype, g.k, 23);
    const std::vector<float> x = tensor_to_floats(op.dtype, xb.data(), nx);
    const std::vector<float> w = tensor_to_floats(op.dtype, wb.data(), nw);
    const std::vector<float> bias = tensor_to_floats(op.dtype, bb.data(), g.k);
    DeviceBuffer dx(xb.size()), dw(wb.size()), dbias(bb.size());
    DeviceBuffer dy(size_t(ny) * size_t(dtype_bytes(op.dtype)));
    dx.upload(xb), dw.upload(wb), dbias.upload(bb);
    dy.fill_bytes(0xff);
    context_->synchronize();
    BaselineOptions options;
    options.stream = stream_->get();
    options.kernels = kernels_.get();
    std::unique_ptr<Baseline> b = make_baseline(name, options);
    std::string what;
    ASSERT_TRUE(b->supports(op, &what)) << what;
    b->prepare_conv(op, g, GemmOperands{dx.ptr(), dw.ptr(), dbias.ptr(), dy.ptr()});
    b->run();
    stream_->synchronize();
    std::vector<unsigned char> out(dy.bytes());
    dy.download(out.data(), out.size());
    *got = tensor_to_floats(op.dtype, out.data(), ny);
    want->assign(size_t(ny), 0.0f);
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t p = 0; p < g.p; ++p)
        for (int64_t q = 0; q < g.q; ++q)
          for (int64_t k = 0; k < g.k; ++k) {
            double v = 0;
            for (int64_t r = 0; r < g.r; ++r)
              for (int64_t s = 0; s < g.s; ++s) {
                const int64_t h = p * g.stride_h - g.pad_h + r * g.dilation_h;
                const int64_t u = q * g.stride_w - g.pad_w + s * g.dilation_w;
                if (h < 0 || u < 0 || h >= g.h || u >= g.w) continue;
                for (int64_t c = 0; c < g.c; ++c)
                  v += double(x[size_t(((n * g.h + h) * g.w + u) * g.c + c)]) *
                       w[size_t(((k * g.r + r) * g.s + s) * g.c + c)];
              }
            const Epilogue e = op.epilogue;
            if (epilogue_has_bias(e)) v += bias[size_t(k)];
            if (e == Epilogue::kRelu || e == Epilogue::kBiasRelu) v = v > 0 ? v : 0;
            if (e == Epilogue::kGelu || e == Epilogue::kBiasGelu)
              v = 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
            (*want)[size_t(((n * g.p + p) * g.q + q) * g.k + k)] = float(v);
          }
  }

  std::vector<std::string> baselines() const {
    std::string why;
    std::vector<std::string> names = {"cublas+im2col"};
    if (cudnn_api_or_null(&why))
      names.push_back("cudnn");
    else
      std::printf("cuDNN not tested: %s\n", why.c_str());
    return names;
  }

  NvrtcCompiler compiler_;
  std::unique_ptr<PrimaryContext> context_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<BenchKernels> kernels_;
};

TEST_F(ConvBaselineGpu, EveryEpilogueAndGeometry) {
  const std::vector<Conv2dShape> shapes = {make_conv2d_shape(2, 9, 7, 5, 11, 3, 3, 1, 1),
                                           make_conv2d_shape(3, 13, 10, 4, 6, 3, 2, 2, 0, 2),
                                           make_conv2d_shape(1, 6, 6, 8, 16, 1, 1)};
  for (const std::string& name : baselines())
    for (const Conv2dShape& g : shapes)
      for (Epilogue e : {Epilogue::kNone, Epilogue::kBias, Epilogue::kRelu, Epilogue::kBiasRelu,
                         Epilogue::kGelu, Epilogue::kBiasGelu}) {
        SCOPED_TRACE(name + " " + to_string(e) + " C=" + std::to_string(g.c) +
                     " stride=" + std::to_string(g.stride_h));
        OpSpec op;
        op.name = "conv";
        op.kind = OpKind::kConv2d;
        op.epilogue = e;
        std::vector<float> got, want;
        run(name, op, g, &got, &want);
        const Agreement a =
            compare_outputs(got, want, g.r * g.s * g.c, agreement_rtol(DType::kFloat32, false));
        EXPECT_TRUE(a.ok()) << a.message(g.k);
      }
}

TEST_F(ConvBaselineGpu, HalfPrecision) {
  const Conv2dShape g = make_conv2d_shape(2, 8, 8, 16, 32, 3, 3, 1, 1);
  for (const std::string& name : baselines())
    for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
      SCOPED_TRACE(name + " " + to_string(dtype));
      OpSpec op;
      op.name = "conv";
      op.kind = OpKind::kConv2d;
      op.dtype = dtype;
      op.epilogue = Epilogue::kBiasRelu;
      std::vector<float> got, want;
      run(name, op, g, &got, &want);
      const Agreement a = compare_outputs(got, want, g.r * g.s * g.c, agreement_rtol(dtype, false));
      EXPECT_TRUE(a.ok()) << a.message(g.k);
    }
}

std::string run_command(const std::string& command, int* exit_code) {
  FILE* pipe = popen(command.c_str(), "r");
  std::string out;
  if (!pipe) return out;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  *exit_code = WEXITSTATUS(pclose(pipe));
  return out;
}

// A small conv2d pack from the cost model (no tuning), benched against cuDNN and the fallback.
TEST_F(ConvBaselineGpu, BenchAConvPackEndToEnd) {
  const fs::path dir =
      fs::temp_directory_path() / ("dietcode_conv_bench_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "convs.json") << R"({
  "name": "convs",
  "shape_vars": {"batch": {"values": [1, 3]}},
  "ops": [
    {"name": "c3", "op": "conv2d", "layout": "NHWC", "N": "batch", "H": 14, "W": 14, "C": 16,
     "K": 32, "R": 3, "S": 3, "stride": 1, "pad": 1, "dilation": 1, "epilogue": "bias_relu"},
    {"name": "c1", "op": "conv2d", "layout": "NHWC", "N": "batch", "H": 7, "W": 7, "C": 32,
     "K": 16, "R": 1, "S": 1, "stride": 2, "pad": 0, "dilation": 1}
  ]
})";
  const std::string cli = "'" DIETCODE_CLI_PATH "'";
  const std::string pack = (dir / "libconvs.so").string();
  int code = -1;
  std::string out = run_command(
      cli + " build '" + (dir / "convs.json").string() + "' -o '" + pack + "' -q 2>&1", &code);
  ASSERT_EQ(code, 0) << out;
  std::string why;
  const bool have_cudnn = cudnn_api_or_null(&why) != nullptr;
  for (const std::string option : {"auto", "cublas"}) {
    SCOPED_TRACE(option);
    out = run_command(cli + " bench '" + pack + "' --baseline " + option +
                          " --repeats 5 --warmup 1 -q --json - 2>/dev/null",
                      &code);
    ASSERT_EQ(code, 0) << out;
    const nlohmann::json report = nlohmann::json::parse(out);
    const bool cudnn = option == "auto" && have_cudnn;
    ASSERT_EQ(report["rows"].size(), 4u);
    for (const auto& row : report["rows"]) {
      const std::string baseline = row["baseline"].get<std::string>();
      if (cudnn)
        EXPECT_EQ(baseline.rfind("cudnn 9.", 0), 0u) << baseline;
      else
        EXPECT_EQ(baseline, "cublas+im2col");
      EXPECT_EQ(row["check"], "ok");
      EXPECT_GT(row["baseline_us"].get<double>(), 0);
      std::printf("%s %s %s: pack %.2f us, %s %.2f us\n", option.c_str(),
                  row["op"].get<std::string>().c_str(), row["shape"].get<std::string>().c_str(),
                  row["pack_us"].get<double>(), baseline.c_str(), row["baseline_us"].get<double>());
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dietcode
