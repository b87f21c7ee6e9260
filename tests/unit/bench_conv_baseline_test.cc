// The conv2d baseline's plan as plain data, without a GPU: cuDNN descriptor arguments and math
// policy from conv2d_shape (and cuDNN's own output extents for them, from the installed
// library: descriptors need no GPU), the epilogue's cuDNN calls, the im2col index math against
// a direct NHWC convolution, the im2col fallback's GEMM mapping, and which baseline
// `--baseline` runs for which op.
#include <gtest/gtest.h>

#include <vector>

#include "bench/baseline.h"
#include "bench/conv_mapping.h"
#include "bench/cudnn_loader.h"
#include "bench/gemm_mapping.h"
#include "bench/im2col_index.h"
#include "common/error.h"
#include "measure/conv2d_shape.h"
#include "workload/workload.h"

namespace dietcode {
namespace {

// A conv2d with every attribute off its default: stride (2, 1), pad (0, 1), dilation (1, 2),
// dynamic batch.
const char kWorkload[] = R"({
  "name": "convs",
  "shape_vars": {"batch": {"values": [1, 3]}},
  "ops": [
    {"name": "stem", "op": "conv2d", "layout": "NHWC", "N": "batch", "H": 11, "W": 9, "C": 5,
     "K": 7, "R": 3, "S": 2, "stride": [2, 1], "pad": [0, 1], "dilation": [1, 2],
     "epilogue": "bias_relu"}
  ]
})";

TEST(CudnnConvCall, DescriptorArgumentsFromConv2dShape) {
  const Workload w = parse_workload(kWorkload, "convs.json");
  const OpSpec& op = w.ops[0];
  for (int64_t batch : {1, 3}) {
    const Conv2dShape g = conv2d_shape(op, {batch});
    const CudnnConvCall call = cudnn_conv_call(g, DType::kFloat32, false);
    EXPECT_EQ(std::vector<int>(call.x_nchw, call.x_nchw + 4),
              (std::vector<int>{int(batch), 5, 11, 9}));
    EXPECT_EQ(std::vector<int>(call.w_kcrs, call.w_kcrs + 4), (std::vector<int>{7, 5, 3, 2}));
    // P = (11 + 0 - 1*(3-1) - 1)/2 + 1 = 5; Q = (9 + 2 - 2*(2-1) - 1)/1 + 1 = 9.
    EXPECT_EQ(std::vector<int>(call.y_nchw, call.y_nchw + 4),
              (std::vector<int>{int(batch), 7, 5, 9}));
    EXPECT_EQ(call.y_nchw[2], g.p);
    EXPECT_EQ(call.y_nchw[3], g.q);
    EXPECT_EQ(std::vector<int>(call.bias_nchw, call.bias_nchw + 4), (std::vector<int>{1, 7, 1, 1}));
    EXPECT_EQ(call.pad[0], 0);
    EXPECT_EQ(call.pad[1], 1);
    EXPECT_EQ(call.stride[0], 2);
    EXPECT_EQ(call.stride[1], 1);
    EXPECT_EQ(call.dilation[0], 1);
    EXPECT_EQ(call.dilation[1], 2);
    EXPECT_EQ(call.compute_type, cudnn::kDataFloat);
  }
}

TEST(CudnnConvCall, PrecisionPolicy) {
  const Conv2dShape g = make_conv2d_shape(2, 8, 8, 4, 4, 3, 3, 1, 1);
  CudnnConvCall fp32 = cudnn_conv_call(g, DType::kFloat32, false);
  EXPECT_EQ(fp32.data_type, cudnn::kDataFloat);
  EXPECT_EQ(fp32.math_type, cudnn::kFmaMath);
  EXPECT_TRUE(fp32.allows(cudnn::kFmaMath));
  EXPECT_TRUE(fp32.allows(cudnn::kDefaultMath));  // the descriptor stays FMA
  EXPECT_FALSE(fp32.allows(cudnn::kTensorOpMath));
  EXPECT_FALSE(fp32.allows(cudnn::kTensorOpMathAllowConversion));

  const CudnnConvCall tf32 = cudnn_conv_call(g, DType::kFloat32, true);
  EXPECT_EQ(tf32.math_type, cudnn::kDefaultMath);
  EXPECT_TRUE(tf32.allows(cudnn::kTensorOpMath));

  const CudnnConvCall fp16 = cudnn_conv_call(g, DType::kFloat16, false);
  EXPECT_EQ(fp16.data_type, cudnn::kDataHalf);
  EXPECT_EQ(fp16.compute_type, cudnn::kDataFloat);
  EXPECT_EQ(fp16.math_type, cudnn::kTensorOpMath);
  EXPECT_EQ(cudnn_conv_call(g, DType::kBFloat16, false).data_type, cudnn::kDataBFloat16);

  EXPECT_EQ(cudnn_math_text(DType::kFloat32, false), "fp32, CUDNN_FMA_MATH (no TF32)");
}

TEST(CudnnConvCall, SizesPastInt32AreUnavailable) {
  Conv2dShape g = make_conv2d_shape(1, 8, 8, 4, 4, 1, 1);
  g.n = int64_t(1) << 31;
  try {
    cudnn_conv_call(g, DType::kFloat32, false);
    FAIL() << "no exception";
  } catch (const BaselineUnavailable& e) {
    EXPECT_STREQ(e.what(), "cuDNN takes 32-bit tensor extents");
  }
  g.n = 1 << 24;  // 2^24 x 8 x 8 x 4 = 2^32 input elements
  try {
    cudnn_conv_call(g, DType::kFloat32, false);
    FAIL() << "no exception";
  } catch (const BaselineUnavailable& e) {
    EXPECT_STREQ(e.what(), "cuDNN's legacy API takes tensors below 2^31 elements");
  }
  g.n = 1 << 20;  // 2^28 elements: fine
  EXPECT_NO_THROW(cudnn_conv_call(g, DType::kFloat32, false));
}

// The installed cuDNN, given our descriptor arguments, computes the pack's P and Q.
TEST(CudnnConvCall, CudnnAgreesOnTheOutputExtents) {
  std::string why;
  const CudnnApi* api = cudnn_api_or_null(&why);
  if (!api) GTEST_SKIP() << why;
  cudnn::TensorDescriptor x = nullptr;
  cudnn::FilterDescriptor w = nullptr;
  cudnn::ConvolutionDescriptor conv = nullptr;
  check_cudnn(*api, api->cudnnCreateTensorDescriptor(&x), "x");
  check_cudnn(*api, api->cudnnCreateFilterDescriptor(&w), "w");
  check_cudnn(*api, api->cudnnCreateConvolutionDescriptor(&conv), "conv");
  const Workload workload = parse_workload(kWorkload, "convs.json");
  std::vector<Conv2dShape> shapes = {conv2d_shape(workload.ops[0], {3}),
                                     make_conv2d_shape(2, 56, 56, 64, 64, 3, 3, 1, 1),
                                     make_conv2d_shape(1, 224, 224, 3, 64, 7, 7, 2, 3),
                                     make_conv2d_shape(4, 17, 13, 8, 16, 3, 3, 2, 2, 2),
                                     make_conv2d_shape(8, 7, 7, 512, 2048, 1, 1)};
  for (const Conv2dShape& g : shapes) {
    const CudnnConvCall c = cudnn_conv_call(g, DType::kFloat32, false);
    check_cudnn(*api,
                api->cudnnSetTensor4dDescriptor(x, cudnn::kTensorNhwc, c.data_type, c.x_nchw[0],
                                                c.x_nchw[1], c.x_nchw[2], c.x_nchw[3]),
                "x");
    check_cudnn(*api,
                api->cudnnSetFilter4dDescriptor(w, c.data_type, cudnn::kTensorNhwc, c.w_kcrs[0],
                                                c.w_kcrs[1], c.w_kcrs[2], c.w_kcrs[3]),
                "w");
    check_cudnn(*api,
                api->cudnnSetConvolution2dDescriptor(conv, c.pad[0], c.pad[1], c.stride[0],
                                                     c.stride[1], c.dilation[0], c.dilation[1],
                                                     cudnn::kCrossCorrelation, c.compute_type),
                "conv");
    check_cudnn(*api, api->cudnnSetConvolutionMathType(conv, c.math_type), "math");
    int out[4] = {};
    check_cudnn(
        *api,
        api->cudnnGetConvolution2dForwardOutputDim(conv, x, w, &out[0], &out[1], &out[2], &out[3]),
        "output");
    EXPECT_EQ(std::vector<int>(out, out + 4), std::vector<int>(c.y_nchw, c.y_nchw + 4));
    EXPECT_EQ(out[2], g.p);
    EXPECT_EQ(out[3], g.q);
  }
  api->cudnnDestroyConvolutionDescriptor(conv);
  api->cudnnDestroyFilterDescriptor(w);
  api->cudnnDestroyTensorDescriptor(x);
}

TEST(ConvEpiloguePlan, EveryEpilogue) {
  EXPECT_EQ(conv_epilogue_plan(Epilogue::kNone).text(), "cudnnConvolutionForward");
  EXPECT_EQ(conv_epilogue_plan(Epilogue::kBias).text(),
            "cudnnConvolutionForward + cudnnAddTensor (bias)");
  EXPECT_EQ(conv_epilogue_plan(Epilogue::kRelu).text(),
            "cudnnConvolutionForward + cudnnActivationForward (relu)");
  const ConvEpiloguePlan fused = conv_epilogue_plan(Epilogue::kBiasRelu);
  EXPECT_TRUE(fused.fused_bias_relu);
  EXPECT_EQ(fused.text(), "cudnnConvolutionBiasActivationForward (bias + relu fused)");

  EXPECT_EQ(conv_epilogue_plan(Epilogue::kGelu).text(),
            "cudnnConvolutionForward + separate gelu kernel (cuDNN's legacy API has no GELU)");
  const ConvEpiloguePlan bias_gelu = conv_epilogue_plan(Epilogue::kBiasGelu);
  EXPECT_TRUE(bias_gelu.bench_kernel);
  EXPECT_FALSE(bias_gelu.add_bias);  // the kernel adds the bias in the same pass
  EXPECT_EQ(bias_gelu.text(),
            "cudnnConvolutionForward + separate bias_gelu kernel (cuDNN's legacy API has no GELU)");
}

// What the baseline falls back to when cuDNN refuses a call, in order.
TEST(ConvEpiloguePlan, AlternativesInOrder) {
  auto texts = [](Epilogue e) {
    std::vector<std::string> out;
    for (const ConvEpiloguePlan& p : conv_epilogue_plans(e)) out.push_back(p.text());
    return out;
  };
  EXPECT_EQ(texts(Epilogue::kNone), std::vector<std::string>{"cudnnConvolutionForward"});
  EXPECT_EQ(texts(Epilogue::kBiasRelu),
            (std::vector<std::string>{
                "cudnnConvolutionBiasActivationForward (bias + relu fused)",
                "cudnnConvolutionForward + cudnnAddTensor (bias) + cudnnActivationForward (relu)",
                "cudnnConvolutionForward + separate bias_relu kernel"}));
  EXPECT_EQ(texts(Epilogue::kBias),
            (std::vector<std::string>{"cudnnConvolutionForward + cudnnAddTensor (bias)",
                                      "cudnnConvolutionForward + separate bias kernel"}));
  EXPECT_EQ(texts(Epilogue::kRelu),
            (std::vector<std::string>{"cudnnConvolutionForward + cudnnActivationForward (relu)",
                                      "cudnnConvolutionForward + separate relu kernel"}));
  EXPECT_EQ(texts(Epilogue::kGelu).size(), 1u);  // already on bench's kernel
  EXPECT_EQ(texts(Epilogue::kBiasGelu).size(), 1u);
}

TEST(ConvEpiloguePlan, AlgorithmNames) {
  EXPECT_EQ(cudnn_algo_name(0), "IMPLICIT_GEMM");
  EXPECT_EQ(cudnn_algo_name(1), "IMPLICIT_PRECOMP_GEMM");
  EXPECT_EQ(cudnn_algo_name(7), "WINOGRAD_NONFUSED");
  EXPECT_EQ(cudnn_algo_name(8), "algo 8");
}

// Direct NHWC/KRSC cross-correlation in double, written independently of im2col.
std::vector<double> direct_conv(const Conv2dShape& g, const std::vector<double>& x,
                                const std::vector<double>& w) {
  std::vector<double> y(size_t(g.n * g.p * g.q * g.k), 0.0);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t p = 0; p < g.p; ++p)
      for (int64_t q = 0; q < g.q; ++q)
        for (int64_t k = 0; k < g.k; ++k) {
          double sum = 0;
          for (int64_t r = 0; r < g.r; ++r)
            for (int64_t s = 0; s < g.s; ++s) {
              const int64_t h = p * g.stride_h + r * g.dilation_h - g.pad_h;
              const int64_t v = q * g.stride_w + s * g.dilation_w - g.pad_w;
              if (h < 0 || v < 0 || h >= g.h || v >= g.w) continue;
              for (int64_t c = 0; c < g.c; ++c)
                sum += x[size_t(((n * g.h + h) * g.w + v) * g.c + c)] *
                       w[size_t(((k * g.r + r) * g.s + s) * g.c + c)];
            }
          y[size_t(((n * g.p + p) * g.q + q) * g.k + k)] = sum;
        }
  return y;
}

// The index math the im2col kernel runs (im2col_index.h), then the fallback's GEMM through the
// same column-major mapping the cuBLAS baseline issues, equals the direct convolution.
TEST(Im2col, ThroughTheCublasMappingEqualsTheDirectConvolution) {
  const Workload workload = parse_workload(kWorkload, "convs.json");
  const std::vector<Conv2dShape> shapes = {
      conv2d_shape(workload.ops[0], {3}), make_conv2d_shape(2, 6, 5, 3, 4, 3, 3, 1, 1),
      make_conv2d_shape(1, 9, 9, 2, 3, 3, 3, 2, 2, 2), make_conv2d_shape(2, 4, 4, 8, 5, 1, 1)};
  for (const Conv2dShape& g : shapes) {
    SCOPED_TRACE(::testing::Message() << "N" << g.n << " H" << g.h << " W" << g.w << " C" << g.c
                                      << " K" << g.k << " R" << g.r << " S" << g.s);
    // Small integers: every product and sum is exact, so the comparison is exact.
    std::vector<double> x(size_t(g.n * g.h * g.w * g.c)), w(size_t(g.k * g.r * g.s * g.c));
    for (size_t i = 0; i < x.size(); ++i) x[i] = double(int(i * 7 % 11) - 5);
    for (size_t i = 0; i < w.size(); ++i) w[i] = double(int(i * 5 % 7) - 3);
    const GemmShape gemm = g.gemm();
    std::vector<float> col(size_t(gemm.M * gemm.K));
    int padding = 0;
    for (int64_t i = 0; i < int64_t(col.size()); ++i) {
      const long long from =
          dietcode_im2col_source(i, gemm.K, g.c, g.s, g.p, g.q, g.h, g.w, g.stride_h, g.stride_w,
                                 g.pad_h, g.pad_w, g.dilation_h, g.dilation_w);
      padding += from < 0;
      col[size_t(i)] = from >= 0 ? float(x[size_t(from)]) : 0.0f;
    }
    if (g.pad_h || g.pad_w) EXPECT_GT(padding, 0);

    OpSpec conv;
    conv.name = "c";
    conv.kind = OpKind::kConv2d;
    conv.epilogue = Epilogue::kBiasRelu;
    const OpSpec dense = im2col_dense_op(conv);
    EXPECT_EQ(dense.kind, OpKind::kDense);
    EXPECT_EQ(dense.epilogue, Epilogue::kBiasRelu);
    const ColumnMajorGemm cm = column_major_gemm(dense, gemm);
    EXPECT_EQ(cm.m, g.k);  // column-major C is Y^T: K filters by N*P*Q pixels
    EXPECT_EQ(cm.n, g.n * g.p * g.q);
    EXPECT_EQ(cm.k, g.r * g.s * g.c);
    const std::vector<float> wf(w.begin(), w.end());
    std::vector<double> y(size_t(gemm.M * gemm.N));
    host_column_major_gemm(cm, wf.data(), col.data(), y.data());
    EXPECT_EQ(y, direct_conv(g, x, w));
  }
}

TEST(BaselinePlan, EveryOption) {
  const std::string missing = "no cuDNN: libcudnn.so.9: cannot open shared object file";
  auto plan = [](const std::string& option, bool conv, const std::string& why) {
    const BaselinePlan p = plan_baselines(option, conv, why);
    return p.gemm + " | " + p.conv;
  };
  EXPECT_EQ(plan("auto", true, ""), "cublas | cudnn");
  EXPECT_EQ(plan("auto", false, missing), "cublas | ");
  EXPECT_EQ(plan("auto", true, missing), "cublas | cublas+im2col");
  EXPECT_EQ(plan("cublas", true, ""), "cublas | cublas+im2col");
  EXPECT_EQ(plan("cublaslt", true, ""), "cublaslt | cudnn");
  EXPECT_EQ(plan("cublaslt", true, missing), "cublaslt | cublas+im2col");
  EXPECT_EQ(plan("cudnn", true, ""), "cublas | cudnn");
  EXPECT_EQ(plan("cudnn", false, missing), "cublas | ");  // no conv2d: cuDNN not needed
  EXPECT_EQ(plan("none", true, ""), " | ");

  EXPECT_EQ(plan_baselines("auto", true, missing).note,
            "conv2d baseline is cuBLAS on an explicit im2col, since cuDNN did not load (" +
                missing + "); set DIETCODE_CUDNN_LIBRARY to a libcudnn.so.9 to use cuDNN");
  EXPECT_EQ(plan_baselines("auto", true, "").note, "");
  try {
    plan_baselines("cudnn", true, missing);
    FAIL() << "no exception";
  } catch (const EnvironmentError& e) {
    EXPECT_EQ(std::string(e.what()),
              missing +
                  "; run with --baseline cublas to time conv2d against cuBLAS on an explicit "
                  "im2col, or --baseline none to time the pack alone");
  }
  try {
    plan_baselines("mkl", true, "");
    FAIL() << "no exception";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(),
                 "--baseline: unknown baseline 'mkl' (expected auto, cublas, cublaslt, cudnn or "
                 "none)");
  }
  EXPECT_EQ(baseline_options(),
            (std::vector<std::string>{"auto", "cublas", "cublaslt", "cudnn", "none"}));
}

}  // namespace
}  // namespace dietcode
