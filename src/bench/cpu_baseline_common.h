// Pieces the oneDNN and OpenBLAS baselines share (cpu_baseline.h); internal to src/bench.
#pragma once

#include <memory>
#include <string>

#include "bench/cpu_baseline.h"

namespace dietcode {

// The logical CPUs this process may run on (its affinity mask): the default thread count.
int default_cpu_threads();

bool epilogue_has_activation(Epilogue e);
bool epilogue_is_gelu(Epilogue e);

// "bias + relu", "gelu-tanh", "no epilogue": how the report names an epilogue.
std::string epilogue_words(Epilogue e);

// What every CPU baseline refuses ("runs fp32 only, and this op is float16"), or "" when the
// op is one they can run.
std::string cpu_baseline_refusal(const OpSpec& op);

// std::invalid_argument "WHO: ..." for an op cpu_baseline_refusal refuses, missing operands, a
// conv2d without its Conv2dShape or an empty GEMM.
void check_cpu_operands(const std::string& who, const OpSpec& op, const GemmShape& shape,
                        const Conv2dShape* conv, const CpuGemmOperands& operands);

// Both load their library in the constructor (EnvironmentError when it is missing).
std::unique_ptr<CpuBaseline> make_onednn_baseline(int threads, bool constant_weights);
std::unique_ptr<CpuBaseline> make_openblas_baseline(int threads);

}  // namespace dietcode
