// Pieces the cuBLAS and cuBLASLt baselines share; internal to src/bench.
#pragma once

#include <library_types.h>

#include <cstddef>
#include <memory>
#include <string>

#include "bench/baseline.h"

namespace dietcode {

// Workspace given to cuBLAS and cuBLASLt: 32 MiB is what NVIDIA recommends for Hopper, and
// enough for every split-K algorithm the heuristics pick at these sizes.
constexpr size_t kBaselineWorkspaceBytes = size_t(32) << 20;

cudaDataType cuda_data_type(DType dtype);

// "fp32 FMA, CUBLAS_DEFAULT_MATH (no TF32)" and the like, for the report.
std::string precision_text(DType dtype, bool tf32);

std::unique_ptr<Baseline> make_cublas_baseline(const BaselineOptions& options);
std::unique_ptr<Baseline> make_cublaslt_baseline(const BaselineOptions& options);
std::unique_ptr<Baseline> make_cudnn_baseline(const BaselineOptions& options);
std::unique_ptr<Baseline> make_im2col_baseline(const BaselineOptions& options);

}  // namespace dietcode
