#include "bench/cpu_baseline_common.h"

#include <algorithm>

#include "x86/cpu_thread_pool.h"

namespace dietcode {

// The process's CPUs, as the pack's own pool counts them (also when an OpenMP runtime has
// bound this thread to one place: see CpuThreadPool::usable_cpus).
int default_cpu_threads() { return int(std::max<size_t>(1, CpuThreadPool::usable_cpus().size())); }

bool epilogue_has_activation(Epilogue e) {
  return e == Epilogue::kRelu || e == Epilogue::kBiasRelu || e == Epilogue::kGelu ||
         e == Epilogue::kBiasGelu;
}

bool epilogue_is_gelu(Epilogue e) { return e == Epilogue::kGelu || e == Epilogue::kBiasGelu; }

std::string epilogue_words(Epilogue e) {
  switch (e) {
    case Epilogue::kNone:
      return "no epilogue";
    case Epilogue::kBias:
      return "bias";
    case Epilogue::kRelu:
      return "relu";
    case Epilogue::kBiasRelu:
      return "bias + relu";
    case Epilogue::kGelu:
      return "gelu-tanh";
    case Epilogue::kBiasGelu:
      return "bias + gelu-tanh";
  }
  return "?";
}

std::string cpu_baseline_refusal(const OpSpec& op) {
  if (op.dtype != DType::kFloat32)
    return std::string("runs fp32 only, and this op is ") + to_string(op.dtype);
  if (op.kind == OpKind::kBatchMatmul && epilogue_has_bias(op.epilogue))
    return "a batch_matmul has no bias";
  return "";
}

void check_cpu_operands(const std::string& who, const OpSpec& op, const GemmShape& shape,
                        const Conv2dShape* conv, const CpuGemmOperands& operands) {
  const std::string refusal = cpu_baseline_refusal(op);
  if (!refusal.empty()) throw std::invalid_argument(who + ": " + refusal);
  if (!operands.a || !operands.b || !operands.y)
    throw std::invalid_argument(who + ": prepare needs the a, b and y operands");
  if (epilogue_has_bias(op.epilogue) && !operands.bias)
    throw std::invalid_argument(who + ": the epilogue has a bias, and no bias operand was given");
  if (op.kind == OpKind::kConv2d && !conv)
    throw std::invalid_argument(who + ": a conv2d instance needs its Conv2dShape");
  if (shape.batch < 1 || shape.M < 1 || shape.N < 1 || shape.K < 1)
    throw std::invalid_argument(who + ": empty GEMM shape");
}

}  // namespace dietcode
