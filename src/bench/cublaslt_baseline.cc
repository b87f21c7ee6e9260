// The cuBLASLt baseline: cublasLtMatmul with the heuristic's first algorithm for each instance
// and the pack op's epilogue fused, so an op with bias and GELU meets cuBLAS at its best.
#include <cstdint>

#include "bench/baseline.h"
#include "bench/baseline_common.h"
#include "bench/cublas_loader.h"
#include "bench/gemm_mapping.h"
#include "cuda/device_buffer.h"

namespace dietcode {

namespace {

cublasLtEpilogue_t lt_epilogue(Epilogue e) {
  switch (e) {
    case Epilogue::kNone:
      return CUBLASLT_EPILOGUE_DEFAULT;
    case Epilogue::kBias:
      return CUBLASLT_EPILOGUE_BIAS;
    case Epilogue::kRelu:
      return CUBLASLT_EPILOGUE_RELU;
    case Epilogue::kBiasRelu:
      return CUBLASLT_EPILOGUE_RELU_BIAS;
    case Epilogue::kGelu:
      return CUBLASLT_EPILOGUE_GELU;
    case Epilogue::kBiasGelu:
      return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

const char* lt_epilogue_name(Epilogue e) {
  switch (e) {
    case Epilogue::kNone:
      return "CUBLASLT_EPILOGUE_DEFAULT";
    case Epilogue::kBias:
      return "CUBLASLT_EPILOGUE_BIAS";
    case Epilogue::kRelu:
      return "CUBLASLT_EPILOGUE_RELU";
    case Epilogue::kBiasRelu:
      return "CUBLASLT_EPILOGUE_RELU_BIAS";
    case Epilogue::kGelu:
      return "CUBLASLT_EPILOGUE_GELU";
    case Epilogue::kBiasGelu:
      return "CUBLASLT_EPILOGUE_GELU_BIAS";
  }
  return "";
}

// The descriptors of one prepared instance, destroyed together.
struct LtDescriptors {
  const CublasApi* api = nullptr;
  cublasLtMatmulDesc_t matmul = nullptr;
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, c = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;

  LtDescriptors() = default;
  LtDescriptors(const LtDescriptors&) = delete;
  LtDescriptors& operator=(const LtDescriptors&) = delete;
  ~LtDescriptors() { reset(); }

  void reset() {
    if (!api) return;
    if (preference) api->cublasLtMatmulPreferenceDestroy(preference);
    if (c) api->cublasLtMatrixLayoutDestroy(c);
    if (second) api->cublasLtMatrixLayoutDestroy(second);
    if (first) api->cublasLtMatrixLayoutDestroy(first);
    if (matmul) api->cublasLtMatmulDescDestroy(matmul);
    preference = nullptr, c = second = first = nullptr, matmul = nullptr;
  }
};

class CublasLtBaseline : public Baseline {
 public:
  explicit CublasLtBaseline(const BaselineOptions& options)
      : api_(cublas_api()), options_(options), workspace_(kBaselineWorkspaceBytes) {
    check_cublas(api_, api_.cublasLtCreate(&handle_), "cublasLtCreate");
    descriptors_.api = &api_;
  }

  ~CublasLtBaseline() override {
    descriptors_.reset();
    if (handle_) api_.cublasLtDestroy(handle_);
  }

  std::string name() const override { return "cublaslt"; }

  bool supports(const OpSpec& op, std::string* what) const override {
    if (op.kind == OpKind::kConv2d) {
      *what = no_baseline_reason(op);
      return false;
    }
    *what = std::string("cublasLtMatmul, heuristic's first algorithm, ") +
            lt_epilogue_name(op.epilogue) + ", " + precision_text(op.dtype, options_.tf32);
    if (op.epilogue == Epilogue::kGelu || op.epilogue == Epilogue::kBiasGelu)
      *what += " (cublasLt.h does not name its GELU formula; the pack's is the tanh form)";
    return true;
  }

  void prepare(const OpSpec& op, const GemmShape& shape, const GemmOperands& operands) override {
    gemm_ = column_major_gemm(op, shape);
    operands_ = operands;
    op_name_ = op.name;
    descriptors_.reset();
    const ColumnMajorGemm& g = gemm_;
    const cudaDataType type = cuda_data_type(op.dtype);
    const cublasComputeType_t compute = op.dtype == DType::kFloat32 && options_.tf32
                                            ? CUBLAS_COMPUTE_32F_FAST_TF32
                                            : CUBLAS_COMPUTE_32F;
    check(api_.cublasLtMatmulDescCreate(&descriptors_.matmul, compute, CUDA_R_32F),
          "cublasLtMatmulDescCreate");
    const int32_t op_first = g.transpose_first ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int32_t op_second = g.transpose_second ? CUBLAS_OP_T : CUBLAS_OP_N;
    set_desc(CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof(op_first));
    set_desc(CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof(op_second));
    const uint32_t epilogue = lt_epilogue(op.epilogue);
    set_desc(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue));
    if (epilogue_has_bias(op.epilogue)) {
      // A bias of D's rows (N): broadcast along the columns (M), as the pack's bias[N] is.
      const void* bias = reinterpret_cast<const void*>(operands.bias);
      set_desc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
    }
    descriptors_.first = layout(type, g.first_rows, g.first_cols, g.first_ld, g.first_stride);
    descriptors_.second = layout(type, g.second_rows, g.second_cols, g.second_ld, g.second_stride);
    descriptors_.c = layout(type, g.m, g.n, g.ldc, g.c_stride);

    check(api_.cublasLtMatmulPreferenceCreate(&descriptors_.preference),
          "cublasLtMatmulPreferenceCreate");
    const uint64_t workspace = workspace_.bytes();
    check(api_.cublasLtMatmulPreferenceSetAttribute(descriptors_.preference,
                                                    CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &workspace, sizeof(workspace)),
          "cublasLtMatmulPreferenceSetAttribute");
    cublasLtMatmulHeuristicResult_t result = {};
    int returned = 0;
    const cublasStatus_t status = api_.cublasLtMatmulAlgoGetHeuristic(
        handle_, descriptors_.matmul, descriptors_.first, descriptors_.second, descriptors_.c,
        descriptors_.c, descriptors_.preference, 1, &result, &returned);
    if (status != CUBLAS_STATUS_SUCCESS || returned == 0 || result.state != CUBLAS_STATUS_SUCCESS)
      throw BaselineUnavailable(
          "cuBLASLt has no algorithm for op " + op.name + " at this shape (" +
          cublas_status_name(status != CUBLAS_STATUS_SUCCESS ? status : result.state) + ")");
    algo_ = result.algo;
  }

  void run() override {
    const float one = 1.0f, zero = 0.0f;
    void* y = reinterpret_cast<void*>(operands_.y);
    // The first operand is the pack's second argument (W or B), the second its first (X or A).
    check_cublas(
        api_,
        api_.cublasLtMatmul(
            handle_, descriptors_.matmul, &one, reinterpret_cast<const void*>(operands_.b),
            descriptors_.first, reinterpret_cast<const void*>(operands_.a), descriptors_.second,
            &zero, y, descriptors_.c, y, descriptors_.c, &algo_,
            reinterpret_cast<void*>(workspace_.ptr()), workspace_.bytes(), options_.stream),
        "cublasLtMatmul for op " + op_name_);
  }

 private:
  void check(cublasStatus_t status, const char* what) const { check_cublas(api_, status, what); }

  void set_desc(cublasLtMatmulDescAttributes_t attribute, const void* value, size_t bytes) {
    check(api_.cublasLtMatmulDescSetAttribute(descriptors_.matmul, attribute, value, bytes),
          "cublasLtMatmulDescSetAttribute");
  }

  cublasLtMatrixLayout_t layout(cudaDataType type, int64_t rows, int64_t cols, int64_t ld,
                                int64_t stride) {
    cublasLtMatrixLayout_t out = nullptr;
    check(api_.cublasLtMatrixLayoutCreate(&out, type, uint64_t(rows), uint64_t(cols), ld),
          "cublasLtMatrixLayoutCreate");
    if (gemm_.batch > 1) {
      const int32_t count = int32_t(gemm_.batch);
      check(api_.cublasLtMatrixLayoutSetAttribute(out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                  sizeof(count)),
            "cublasLtMatrixLayoutSetAttribute");
      check(api_.cublasLtMatrixLayoutSetAttribute(out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                  &stride, sizeof(stride)),
            "cublasLtMatrixLayoutSetAttribute");
    }
    return out;
  }

  const CublasApi& api_;
  BaselineOptions options_;
  DeviceBuffer workspace_;
  cublasLtHandle_t handle_ = nullptr;
  LtDescriptors descriptors_;
  ColumnMajorGemm gemm_;
  GemmOperands operands_;
  std::string op_name_;
  cublasLtMatmulAlgo_t algo_ = {};
};

}  // namespace

std::unique_ptr<Baseline> make_cublaslt_baseline(const BaselineOptions& options) {
  return std::make_unique<CublasLtBaseline>(options);
}

}  // namespace dietcode
