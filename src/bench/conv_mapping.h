// How a pack's conv2d op at one shape becomes cuDNN calls (or, without cuDNN, im2col + one
// cuBLAS GEMM), as plain data: the descriptor arguments, the math-mode policy and which calls
// carry the epilogue. Pure functions, tested on machines without a GPU; cudnn_baseline.cc and
// im2col_baseline.cc only issue what these say.
#pragma once

#include <string>
#include <vector>

#include "bench/cudnn_abi.h"
#include "measure/conv2d_shape.h"
#include "workload/workload.h"

namespace dietcode {

// The arguments of the descriptor calls for one conv2d instance.
//   cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NHWC, data_type, N, C, H, W)
//   cudnnSetFilter4dDescriptor(w, data_type, CUDNN_TENSOR_NHWC, K, C, R, S)  (NHWC = KRSC)
//   cudnnSetConvolution2dDescriptor(conv, pad_h, pad_w, stride_h, stride_w, dilation_h,
//                                   dilation_w, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT)
//   cudnnSetConvolutionMathType(conv, math_type)
//   cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NHWC, data_type, N, K, P, Q)
//   cudnnSetTensor4dDescriptor(bias, CUDNN_TENSOR_NHWC, data_type, 1, K, 1, 1)
// cuDNN counts dims in the NCHW order whatever the memory format; the format says the layout.
// Compute is fp32 for every dtype (fp16/bf16 accumulate in fp32, like the pack's templates).
struct CudnnConvCall {
  int data_type = cudnn::kDataFloat;
  int x_nchw[4] = {1, 1, 1, 1};
  int w_kcrs[4] = {1, 1, 1, 1};
  int y_nchw[4] = {1, 1, 1, 1};
  int bias_nchw[4] = {1, 1, 1, 1};
  int pad[2] = {0, 0}, stride[2] = {1, 1}, dilation[2] = {1, 1};  // (h, w)
  int compute_type = cudnn::kDataFloat;
  // fp32: CUDNN_FMA_MATH, because CUDNN_DEFAULT_MATH lets cuDNN run fp32 convolutions on TF32
  // tensor cores from Ampere on (the cuDNN 9 API reference on cudnnMathType_t), which would
  // not be the fp32 the pack computes; --tf32 selects CUDNN_DEFAULT_MATH. fp16/bf16:
  // CUDNN_TENSOR_OP_MATH, the tensor cores the pack uses too.
  int math_type = cudnn::kFmaMath;
  // Whether an algorithm Find reports with this math type may be used: with the fp32 FMA policy
  // nothing that ran on tensor cores is.
  bool allows(int result_math_type) const;
};

// Throws BaselineUnavailable when an extent passes cuDNN's 32-bit ints.
CudnnConvCall cudnn_conv_call(const Conv2dShape& shape, DType dtype, bool tf32);

// "CUDNN_FMA_MATH (no TF32)" and the like, for the report.
std::string cudnn_math_text(DType dtype, bool tf32);

// The calls that apply the op's epilogue after (or with) the convolution, matching the pack's
// definition Y = act(conv(X, W) + bias[k]) exactly:
//   none       cudnnConvolutionForward
//   bias       cudnnConvolutionForward, cudnnAddTensor(bias, broadcast over N, P, Q)
//   relu       cudnnConvolutionForward, cudnnActivationForward(RELU) in place
//   bias_relu  cudnnConvolutionBiasActivationForward(RELU): one fused call
//   gelu, bias_gelu  cudnnConvolutionForward, then bench's NVRTC epilogue kernel (bias and
//              tanh GELU in one pass): cuDNN's legacy API has no GELU activation.
// cuDNN may refuse a call for a problem or dtype (the fused call's support matrix is narrow,
// and cudnnAddTensor/cudnnActivationForward do not take every dtype everywhere), so
// conv_epilogue_plans lists the same math in order of preference: the plan above; for
// bias_relu, the three unfused cuDNN calls; then the convolution plus bench's epilogue kernel.
// The baseline uses the first one cuDNN runs, and the report says when it is not the first.
struct ConvEpiloguePlan {
  Epilogue epilogue = Epilogue::kNone;
  bool fused_bias_relu = false;
  bool add_bias = false;
  bool relu = false;
  bool bench_kernel = false;
  std::string text() const;  // "cudnnConvolutionForward + cudnnAddTensor (bias)"
};
ConvEpiloguePlan conv_epilogue_plan(Epilogue epilogue);
std::vector<ConvEpiloguePlan> conv_epilogue_plans(Epilogue epilogue);

// "IMPLICIT_PRECOMP_GEMM" for cudnnConvolutionFwdAlgo_t 1; "algo 9" past the known ones.
std::string cudnn_algo_name(int algo);

// The cuBLAS fallback's GEMM: Y[N*P*Q, K] = col[N*P*Q, R*S*C] * Wt[K, R*S*C]^T is a dense op
// with the conv's dtype and epilogue (the bias is per output channel, i.e. per GEMM column).
OpSpec im2col_dense_op(const OpSpec& conv);

}  // namespace dietcode
