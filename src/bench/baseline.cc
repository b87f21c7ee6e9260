#include "bench/baseline.h"

#include "bench/baseline_common.h"
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
    return "none: no baseline for conv2d (needs cuDNN; not implemented); the pack is timed alone";
  return "none";
}

std::unique_ptr<Baseline> make_baseline(const std::string& name, const BaselineOptions& options) {
  if (name == "cublas") return make_cublas_baseline(options);
  if (name == "cublaslt") return make_cublaslt_baseline(options);
  throw UserError("--baseline: unknown baseline '" + name +
                  "' (expected cublas, cublaslt or none)");
}

}  // namespace dietcode
