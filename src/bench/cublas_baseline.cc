// The cuBLAS baseline: one GEMM call per instance (gemm_mapping.h), plus bench's elementwise
// kernel for an epilogue, since cuBLAS cannot fuse one.
#include <fmt/format.h>

#include "bench/baseline.h"
#include "bench/baseline_common.h"
#include "bench/bench_kernels.h"
#include "bench/cublas_loader.h"
#include "bench/gemm_mapping.h"
#include "cuda/device_buffer.h"

namespace dietcode {

namespace {

class CublasBaseline : public Baseline {
 public:
  explicit CublasBaseline(const BaselineOptions& options)
      : api_(cublas_api()), options_(options), workspace_(kBaselineWorkspaceBytes) {
    check_cublas(api_, api_.cublasCreate_v2(&handle_), "cublasCreate");
    check_cublas(api_, api_.cublasSetStream_v2(handle_, options.stream), "cublasSetStream");
    // After cublasSetStream, which resets the workspace to cuBLAS's own pool: a fixed buffer
    // keeps cuBLAS from allocating inside the timed region.
    check_cublas(api_,
                 api_.cublasSetWorkspace_v2(handle_, reinterpret_cast<void*>(workspace_.ptr()),
                                            workspace_.bytes()),
                 "cublasSetWorkspace");
    check_cublas(api_,
                 api_.cublasSetMathMode(
                     handle_, options.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
                 "cublasSetMathMode");
  }

  ~CublasBaseline() override {
    if (handle_) api_.cublasDestroy_v2(handle_);
  }

  std::string name() const override { return "cublas"; }

  bool supports(const OpSpec& op, std::string* what) const override {
    if (op.kind == OpKind::kConv2d) {
      *what = no_baseline_reason(op);
      return false;
    }
    const bool batched = op.kind == OpKind::kBatchMatmul;
    std::string call = op.dtype == DType::kFloat32
                           ? (batched ? "cublasSgemmStridedBatched" : "cublasSgemm_v2")
                           : (batched ? "cublasGemmStridedBatchedEx" : "cublasGemmEx");
    *what = call + ", " + precision_text(op.dtype, options_.tf32);
    if (op.epilogue != Epilogue::kNone)
      *what +=
          fmt::format(" + separate {} kernel (cuBLAS fuses no epilogue)", to_string(op.epilogue));
    return true;
  }

  void prepare(const OpSpec& op, const GemmShape& shape, const GemmOperands& operands) override {
    op_ = &op;
    gemm_ = column_major_gemm(op, shape);
    if (!fits_int32(gemm_)) throw BaselineUnavailable("cuBLAS takes 32-bit sizes");
    operands_ = operands;
  }

  void run() override {
    const ColumnMajorGemm& g = gemm_;
    const cublasOperation_t op_first = g.transpose_first ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_second = g.transpose_second ? CUBLAS_OP_T : CUBLAS_OP_N;
    // The first operand is the pack's second argument (W or B), the second its first (X or A).
    const void* first = reinterpret_cast<const void*>(operands_.b);
    const void* second = reinterpret_cast<const void*>(operands_.a);
    void* c = reinterpret_cast<void*>(operands_.y);
    const float one = 1.0f, zero = 0.0f;  // CUBLAS_COMPUTE_32F takes float alpha and beta
    cublasStatus_t status;
    if (op_->dtype == DType::kFloat32 && op_->kind == OpKind::kDense) {
      status = api_.cublasSgemm_v2(handle_, op_first, op_second, int(g.m), int(g.n), int(g.k), &one,
                                   static_cast<const float*>(first), int(g.first_ld),
                                   static_cast<const float*>(second), int(g.second_ld), &zero,
                                   static_cast<float*>(c), int(g.ldc));
    } else if (op_->dtype == DType::kFloat32) {
      status = api_.cublasSgemmStridedBatched(
          handle_, op_first, op_second, int(g.m), int(g.n), int(g.k), &one,
          static_cast<const float*>(first), int(g.first_ld), g.first_stride,
          static_cast<const float*>(second), int(g.second_ld), g.second_stride, &zero,
          static_cast<float*>(c), int(g.ldc), g.c_stride, int(g.batch));
    } else if (op_->kind == OpKind::kDense) {
      const cudaDataType t = cuda_data_type(op_->dtype);
      status = api_.cublasGemmEx(handle_, op_first, op_second, int(g.m), int(g.n), int(g.k), &one,
                                 first, t, int(g.first_ld), second, t, int(g.second_ld), &zero, c,
                                 t, int(g.ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    } else {
      const cudaDataType t = cuda_data_type(op_->dtype);
      status = api_.cublasGemmStridedBatchedEx(
          handle_, op_first, op_second, int(g.m), int(g.n), int(g.k), &one, first, t,
          int(g.first_ld), g.first_stride, second, t, int(g.second_ld), g.second_stride, &zero, c,
          t, int(g.ldc), g.c_stride, int(g.batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    }
    check_cublas(api_, status, "cuBLAS GEMM for op " + op_->name);
    // Row-major Y is g.n rows (M) of g.m columns (N).
    if (op_->epilogue != Epilogue::kNone)
      options_.kernels->epilogue(options_.stream, op_->dtype, op_->epilogue, operands_.y,
                                 operands_.bias, g.n * g.batch, g.m);
  }

 private:
  const CublasApi& api_;
  BaselineOptions options_;
  DeviceBuffer workspace_;
  cublasHandle_t handle_ = nullptr;
  const OpSpec* op_ = nullptr;
  ColumnMajorGemm gemm_;
  GemmOperands operands_;
};

}  // namespace

std::unique_ptr<Baseline> make_cublas_baseline(const BaselineOptions& options) {
  return std::make_unique<CublasBaseline>(options);
}

}  // namespace dietcode
