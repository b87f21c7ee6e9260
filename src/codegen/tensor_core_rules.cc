#include "codegen/tensor_core_rules.h"

#include <fmt/format.h>

#include "codegen/template_rules.h"
#include "common/error.h"

namespace dietcode {

bool is_tensor_core_template(const std::string& tmpl) {
  return tmpl == "dense_tc" || tmpl == "dense_wgmma";
}

int tensor_core_dtype_code(const OpSpec& op) {
  if (op.dtype == DType::kFloat16) return 1;
  if (op.dtype == DType::kBFloat16) return 2;
  throw UserError(fmt::format("op \"{}\": tensor-core kernels take float16 or bfloat16, not {}",
                              op.name, to_string(op.dtype)));
}

void apply_tensor_core_rules(const OpSpec& op, const std::map<std::string, int>& params,
                             std::vector<std::string>& options, GeneratedKernel& kernel) {
  options.push_back(fmt::format("-DDTYPE={}", tensor_core_dtype_code(op)));
  const int64_t n = static_dim(op, "N"), k = static_dim(op, "K");
  // batch_matmul reads A[b] and B[b] like dense's X and W: the batch and M only count at
  // launch, through the grid's z and the arguments' extents and batch strides. dense_tc also
  // reads B stored [K,N] (no other tensor-core template reads that layout).
  const bool b_k_contiguous = op.kind != OpKind::kBatchMatmul || op.transpose_b;
  if (op.kind == OpKind::kBatchMatmul) {
    static_dim(op, "B");
    if (kernel.name == "dense_tc")
      options.push_back(fmt::format("-DB_K_CONTIGUOUS={}", b_k_contiguous ? 1 : 0));
  }
  if (n > 0) options.push_back(fmt::format("-DSTATIC_N={}", n));
  if (k > 0) options.push_back(fmt::format("-DSTATIC_K={}", k));
  // 16-byte cp.async reads operand rows, which start on 16-byte boundaries only when the
  // operands do. A static pitch (K; N for B stored [K,N]) that is not a multiple of 8 compiles
  // only the 2-byte load path for its operand; the packed 32-bit output stores still want
  // 4-byte alignment.
  const bool a_scalar = k > 0 && k % 8 != 0;
  const bool b_scalar = b_k_contiguous ? a_scalar : (n > 0 && n % 8 != 0);
  kernel.plan.min_alignment_bytes = a_scalar && b_scalar ? 4 : 16;
  kernel.arch_suffix = template_arch_suffix(kernel.name);
  // A TMA producer reads X and W through tensor maps whose rows must be 16 bytes apart for
  // every K the kernel will see: only a static K can promise that.
  auto producer = params.find("PRODUCER");
  if (producer != params.end() && producer->second == 1) {
    if (k <= 0 || k % 8 != 0)
      throw UserError(fmt::format(
          "op \"{}\": {} with PRODUCER=1 (TMA) needs a static K that is a multiple of 8", op.name,
          kernel.name));
    kernel.plan.tma_box_k = 64;  // one 128-byte swizzled row of 16-bit elements
  }
}

std::string template_arch_suffix(const std::string& tmpl) {
  // wgmma and setmaxnreg exist only as sm_90a instructions: no PTX of them runs elsewhere.
  return tmpl == "dense_wgmma" ? "a" : "";
}

}  // namespace dietcode
