#include "bench/baseline.h"

#include "bench/baseline_common.h"
#include "bench/cudnn_loader.h"
#include "common/error.h"

namespace dietcode {

cudaDataType cuda_data_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return CUDA_R_32F;
    case DType::kFloat16:
      return CUDA_R_16F;
    case DType::kBFloat16:
      return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

std::string precision_text(DType dtype, bool tf32) {
  switch (dtype) {
    case DType::kFloat32:
      return tf32 ? "fp32 data on TF32 tensor cores (--tf32)"
                  : "fp32 FMA, CUBLAS_DEFAULT_MATH (no TF32)";
    case DType::kFloat16:
      return "fp16 tensor cores, fp32 accumulate (CUBLAS_COMPUTE_32F)";
    case DType::kBFloat16:
      return "bf16 tensor cores, fp32 accumulate (CUBLAS_COMPUTE_32F)";
  }
  return "";
}

std::string no_baseline_reason(const OpSpec& op) {
  if (op.kind == OpKind::kConv2d)
    return "none: cuBLAS and cuBLASLt run no conv2d (cudnn and cublas+im2col do)";
  return "none";
}

std::unique_ptr<Baseline> make_baseline(const std::string& name, const BaselineOptions& options) {
  if (name == "cublas") return make_cublas_baseline(options);
  if (name == "cublaslt") return make_cublaslt_baseline(options);
  if (name == "cudnn") return make_cudnn_baseline(options);
  if (name == "cublas+im2col") return make_im2col_baseline(options);
  throw UserError("--baseline: unknown baseline '" + name +
                  "' (expected auto, cublas, cublaslt, cudnn or none)");
}

const std::vector<std::string>& baseline_options() {
  static const std::vector<std::string> options = {"auto", "cublas", "cublaslt", "cudnn", "none"};
  return options;
}

BaselinePlan plan_baselines(const std::string& option, bool has_conv,
                            const std::string& cudnn_why) {
  BaselinePlan plan;
  if (option == "none") return plan;
  if (option != "auto" && option != "cublas" && option != "cublaslt" && option != "cudnn")
    throw UserError("--baseline: unknown baseline '" + option +
                    "' (expected auto, cublas, cublaslt, cudnn or none)");
  plan.gemm = option == "cublaslt" ? "cublaslt" : "cublas";
  if (!has_conv) return plan;
  if (option == "cublas") {
    plan.conv = "cublas+im2col";
  } else if (cudnn_why.empty()) {
    plan.conv = "cudnn";
  } else if (option == "cudnn") {
    throw EnvironmentError(cudnn_why +
                           "; run with --baseline cublas to time conv2d against cuBLAS on an "
                           "explicit im2col, or --baseline none to time the pack alone");
  } else {
    plan.conv = "cublas+im2col";
    plan.note = "conv2d baseline is cuBLAS on an explicit im2col, since cuDNN did not load (" +
                cudnn_why + "); set DIETCODE_CUDNN_LIBRARY to a libcudnn.so.9 to use cuDNN";
  }
  return plan;
}

BaselineSet make_baselines(const std::string& option, bool has_gemm, bool has_conv,
                           const BaselineOptions& options) {
  std::string cudnn_why;
  if (has_conv && option != "cublas" && option != "none") cudnn_api_or_null(&cudnn_why);
  const BaselinePlan plan = plan_baselines(option, has_conv, cudnn_why);
  BaselineSet set;
  set.note = plan.note;
  if (has_gemm && !plan.gemm.empty()) set.gemm = make_baseline(plan.gemm, options);
  if (!has_conv || plan.conv.empty()) return set;
  try {
    set.conv = make_baseline(plan.conv, options);
  } catch (const EnvironmentError& e) {
    if (plan.conv != "cudnn" || option == "cudnn") throw;
    set.conv = make_baseline("cublas+im2col", options);
    set.note = std::string(
                   "conv2d baseline is cuBLAS on an explicit im2col, since cuDNN did not "
                   "start: ") +
               e.what();
  }
  return set;
}

}  // namespace dietcode
