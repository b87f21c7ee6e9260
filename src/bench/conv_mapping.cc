#include "bench/conv_mapping.h"

#include <climits>

#include "bench/baseline.h"

namespace dietcode {

bool CudnnConvCall::allows(int result_math_type) const {
  if (math_type != cudnn::kFmaMath) return true;
  return result_math_type != cudnn::kTensorOpMath &&
         result_math_type != cudnn::kTensorOpMathAllowConversion;
}

CudnnConvCall cudnn_conv_call(const Conv2dShape& g, DType dtype, bool tf32) {
  for (int64_t extent : {g.n, g.h, g.w, g.c, g.k, g.r, g.s, g.p, g.q})
    if (extent > INT_MAX) throw BaselineUnavailable("cuDNN takes 32-bit tensor extents");
  // cuDNN also indexes each tensor with 32-bit element offsets in the legacy API.
  for (int64_t elements : {g.n * g.h * g.w * g.c, g.k * g.r * g.s * g.c, g.n * g.p * g.q * g.k})
    if (elements > INT_MAX)
      throw BaselineUnavailable("cuDNN's legacy API takes tensors below 2^31 elements");
  CudnnConvCall call;
  call.data_type = dtype == DType::kFloat32   ? cudnn::kDataFloat
                   : dtype == DType::kFloat16 ? cudnn::kDataHalf
                                              : cudnn::kDataBFloat16;
  const int n = int(g.n), c = int(g.c), k = int(g.k);
  const int x[4] = {n, c, int(g.h), int(g.w)}, w[4] = {k, c, int(g.r), int(g.s)};
  const int y[4] = {n, k, int(g.p), int(g.q)}, bias[4] = {1, k, 1, 1};
  for (int i = 0; i < 4; ++i)
    call.x_nchw[i] = x[i], call.w_kcrs[i] = w[i], call.y_nchw[i] = y[i],
    call.bias_nchw[i] = bias[i];
  call.pad[0] = g.pad_h, call.pad[1] = g.pad_w;
  call.stride[0] = g.stride_h, call.stride[1] = g.stride_w;
  call.dilation[0] = g.dilation_h, call.dilation[1] = g.dilation_w;
  call.compute_type = cudnn::kDataFloat;
  call.math_type = dtype != DType::kFloat32 ? cudnn::kTensorOpMath
                   : tf32                   ? cudnn::kDefaultMath
                                            : cudnn::kFmaMath;
  return call;
}

std::string cudnn_math_text(DType dtype, bool tf32) {
  switch (dtype) {
    case DType::kFloat32:
      return tf32 ? "fp32 data, CUDNN_DEFAULT_MATH (TF32 tensor cores allowed, --tf32)"
                  : "fp32, CUDNN_FMA_MATH (no TF32)";
    case DType::kFloat16:
      return "fp16 tensor cores (CUDNN_TENSOR_OP_MATH), fp32 accumulate";
    case DType::kBFloat16:
      return "bf16 tensor cores (CUDNN_TENSOR_OP_MATH), fp32 accumulate";
  }
  return "";
}

ConvEpiloguePlan conv_epilogue_plan(Epilogue epilogue) {
  ConvEpiloguePlan plan;
  plan.epilogue = epilogue;
  switch (epilogue) {
    case Epilogue::kNone:
      break;
    case Epilogue::kBias:
      plan.add_bias = true;
      break;
    case Epilogue::kRelu:
      plan.relu = true;
      break;
    case Epilogue::kBiasRelu:
      plan.fused_bias_relu = true;
      break;
    case Epilogue::kGelu:
    case Epilogue::kBiasGelu:
      plan.bench_kernel = true;
      break;
  }
  return plan;
}

std::vector<ConvEpiloguePlan> conv_epilogue_plans(Epilogue epilogue) {
  const ConvEpiloguePlan preferred = conv_epilogue_plan(epilogue);
  std::vector<ConvEpiloguePlan> plans = {preferred};
  if (preferred.fused_bias_relu) {
    ConvEpiloguePlan unfused = preferred;
    unfused.fused_bias_relu = false, unfused.add_bias = true, unfused.relu = true;
    plans.push_back(unfused);
  }
  if (epilogue != Epilogue::kNone && !preferred.bench_kernel) {
    ConvEpiloguePlan kernel;
    kernel.epilogue = epilogue;
    kernel.bench_kernel = true;
    plans.push_back(kernel);
  }
  return plans;
}

std::string ConvEpiloguePlan::text() const {
  if (fused_bias_relu) return "cudnnConvolutionBiasActivationForward (bias + relu fused)";
  std::string out = "cudnnConvolutionForward";
  if (add_bias) out += " + cudnnAddTensor (bias)";
  if (relu) out += " + cudnnActivationForward (relu)";
  const bool gelu = epilogue == Epilogue::kGelu || epilogue == Epilogue::kBiasGelu;
  if (bench_kernel)
    out += std::string(" + separate ") + to_string(epilogue) + " kernel" +
           (gelu ? " (cuDNN's legacy API has no GELU)" : "");
  return out;
}

std::string cudnn_algo_name(int algo) {
  static const char* const kNames[cudnn::kFwdAlgoCount] = {
      "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
      "WINOGRAD",      "WINOGRAD_NONFUSED"};
  if (algo >= 0 && algo < cudnn::kFwdAlgoCount) return kNames[algo];
  return "algo " + std::to_string(algo);
}

OpSpec im2col_dense_op(const OpSpec& conv) {
  OpSpec dense;
  dense.name = conv.name;
  dense.kind = OpKind::kDense;
  dense.dtype = conv.dtype;
  dense.epilogue = conv.epilogue;
  dense.weight = conv.weight;
  return dense;
}

}  // namespace dietcode
