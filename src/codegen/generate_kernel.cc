// Code generation: a template plus a micro-kernel's values and the op's static facts become
// one NVRTC translation unit, its options and the plan to launch it. Template-specific rules
// (which dims are static, when a vector width must fall back) live in template_rules.cc; the
// rest is shared.
#include <fmt/format.h>

#include <map>

#include "codegen/generated_kernel.h"
#include "codegen/template_rules.h"
#include "codegen/template_source.h"
#include "codegen/tensor_core_rules.h"
#include "common/error.h"
#include "space/template_space.h"
#include "space/templates.h"

namespace dietcode {

namespace {

const char* kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::kDense:
      return "dense";
    case OpKind::kBatchMatmul:
      return "batch_matmul";
    case OpKind::kConv2d:
      return "conv2d";
  }
  return "?";
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
  }
  return "?";
}

// "dense, float16"; a batch_matmul adds its layout, which decides what a template can read:
// "batch_matmul, bfloat16, A stored [M,K], B stored [K,N]".
std::string op_text(const OpSpec& op) {
  std::string out = fmt::format("{}, {}", kind_name(op.kind), dtype_name(op.dtype));
  if (op.kind == OpKind::kBatchMatmul)
    out += fmt::format(", A stored {}, B stored {}", op.transpose_a ? "[K,M]" : "[M,K]",
                       op.transpose_b ? "[N,K]" : "[K,N]");
  return out;
}

// Every tunable of the space with mk's value or the default; mk may not name others.
std::map<std::string, int> complete_params(const TemplateSpace& space, const MicroKernel& mk) {
  std::map<std::string, int> params;
  for (const auto& t : space.tunables) params[t.name] = mk.get_or(t.name, t.default_value);
  for (const auto& [name, value] : mk.params)
    if (!params.count(name))
      throw UserError(fmt::format("{}: unknown tunable \"{}\"", space.tmpl, name));
  return params;
}

int chain_product(const TemplateSpace& space, const std::map<std::string, int>& params,
                  const std::string& extent) {
  for (const auto& chain : space.chains)
    if (chain.extent == extent) {
      int product = 1;
      for (const auto& level : chain.levels) product *= params.at(level);
      return product;
    }
  throw std::logic_error(space.tmpl + ": no factor chain " + extent);
}

}  // namespace

GeneratedKernel generate_kernel(const OpSpec& op, const MicroKernel& mk) {
  const TemplateSpace& space = template_space(mk.tmpl);
  if (!space.supports(op))
    throw UserError(fmt::format("template \"{}\" cannot compute op \"{}\" ({})", mk.tmpl, op.name,
                                op_text(op)));
  std::map<std::string, int> params = complete_params(space, mk);
  // Each target generates its own kind of source; everything after this is CUDA's.
  if (space.target == Target::kCpu) return generate_cpu_kernel(op, MicroKernel{mk.tmpl, params});

  GeneratedKernel out;
  out.name = mk.tmpl;
  LaunchPlan& plan = out.plan;
  std::vector<std::string> dim_options;
  apply_template_rules(op, mk, params, dim_options, plan);
  if (is_tensor_core_template(mk.tmpl)) apply_tensor_core_rules(op, params, dim_options, out);

  MicroKernel effective{mk.tmpl, params};
  const LaunchResources res = space.resources(effective);
  plan.entry = "dietcode_" + mk.tmpl;
  plan.threads = res.threads;
  plan.dynamic_smem_bytes = res.dynamic_smem_bytes;
  plan.tile_m = chain_product(space, params, "BM");
  plan.tile_n = chain_product(space, params, "BN");
  plan.m_tiles_per_block = params.count("M_TILES") ? params.at("M_TILES") : 1;
  plan.split_k = params.count("SPLITK") ? params.at("SPLITK") : 1;
  if (plan.split_k > 1) plan.reduce_entry = plan.entry + "_reduce";

  // Every tunable is passed, defaults included, so the options alone identify the kernel.
  for (const auto& t : space.tunables)
    out.options.push_back(fmt::format("-D{}={}", t.name, params.at(t.name)));
  out.options.insert(out.options.end(), dim_options.begin(), dim_options.end());
  out.options.push_back(fmt::format("-DEPILOGUE={}", static_cast<int>(op.epilogue)));
  // The kernel checks at compile time that it agrees with this plan.
  out.options.push_back(fmt::format("-DDIETCODE_EXPECT_THREADS={}", plan.threads));
  out.options.push_back(fmt::format("-DDIETCODE_EXPECT_SMEM={}", plan.dynamic_smem_bytes));
  out.source = load_template_source(mk.tmpl + ".cu");
  return out;
}

std::string compile_arch(const GeneratedKernel& kernel, const GpuSpec& gpu) {
  return compile_arch(kernel, gpu.arch());
}

std::string compile_arch(const GeneratedKernel& kernel, const std::string& device_arch) {
  if (!kernel.fixed_arch.empty()) return kernel.fixed_arch;
  return device_arch + kernel.arch_suffix;
}

GeneratedKernel generate_reference_kernel(const OpSpec& op) {
  // 16-bit conv2d would read fine too, but no template computes it to be checked against.
  if (op.dtype != DType::kFloat32 && op.kind == OpKind::kConv2d)
    throw UserError(fmt::format(
        "the reference kernel computes float32 ops and 16-bit dense and batch_matmul ops only, "
        "not op \"{}\" ({}, {})",
        op.name, kind_name(op.kind), dtype_name(op.dtype)));
  GeneratedKernel out;
  out.name = "reference_gemm";
  out.source = load_template_source("reference_gemm.cu");
  out.options = {fmt::format("-DEPILOGUE={}", static_cast<int>(op.epilogue))};
  // The layouts it reads (templates/reference_gemm.cu); dense uses the defaults.
  if (op.kind == OpKind::kBatchMatmul) {
    out.options.push_back(fmt::format("-DA_K_CONTIGUOUS={}", op.transpose_a ? 0 : 1));
    out.options.push_back(fmt::format("-DB_K_CONTIGUOUS={}", op.transpose_b ? 1 : 0));
  }
  if (op.kind == OpKind::kConv2d) out.options.push_back("-DCONV_NHWC=1");
  // 16-bit elements in and out; the sums stay in double either way.
  if (op.dtype != DType::kFloat32)
    out.options.push_back(fmt::format("-DDTYPE={}", tensor_core_dtype_code(op)));
  LaunchPlan& plan = out.plan;
  plan.entry = "dietcode_reference_gemm";
  plan.threads = 256;  // a 16 x 16 patch of outputs per block, one thread each
  plan.tile_m = 16;
  plan.tile_n = 16;
  return out;
}

}  // namespace dietcode
