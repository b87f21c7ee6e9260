// Code generation for the CPU target: a micro-kernel of an x86 template becomes one C++
// translation unit that instantiates dc_x86::run (templates/x86/ops_x86.h), run_dot for the
// dot-product templates (dot_x86.h) or run_wbcast for the W-broadcast ones (wbcast_x86.h), with
// its tunables, the op's layout and epilogue and its static dimensions, behind an extern "C"
// entry named after the candidate, so that many candidates can share one shared object. The
// header text is inlined (load_template_source), so the source alone is the input and a cache
// key over it is complete, as for NVRTC.
#include <fmt/format.h>

#include "codegen/generated_kernel.h"
#include "codegen/template_source.h"
#include "common/error.h"
#include "common/paths.h"
#include "nvrtc/stable_hash.h"
#include "space/templates.h"
#include "space/tile_bounds.h"

namespace dietcode {

namespace {

const char* op_kind(const OpSpec& op) {
  switch (op.kind) {
    case OpKind::kDense:
      return op.weight_layout == WeightLayout::kKN ? "kDenseKN" : "kDense";
    case OpKind::kConv2d:
      return "kConv2d";
    case OpKind::kBatchMatmul:
      return op.transpose_a ? (op.transpose_b ? "kBatchMatmulTT" : "kBatchMatmulTN")
                            : (op.transpose_b ? "kBatchMatmulNT" : "kBatchMatmulNN");
  }
  return "kDense";
}

const char* epilogue(Epilogue e) {
  switch (e) {
    case Epilogue::kNone:
      return "kNone";
    case Epilogue::kBias:
      return "kBias";
    case Epilogue::kRelu:
      return "kRelu";
    case Epilogue::kBiasRelu:
      return "kBiasRelu";
    case Epilogue::kGelu:
      return "kGelu";
    case Epilogue::kBiasGelu:
      return "kBiasGelu";
  }
  return "kNone";
}

// The GEMM's N and K when the op fixes them (0: read at run time). conv2d's GEMM K is R*S*C.
std::pair<int64_t, int64_t> static_dims(const OpSpec& op) {
  if (op.kind != OpKind::kConv2d) return {constant_dimension(op, "N"), constant_dimension(op, "K")};
  const int64_t r = constant_dimension(op, "R"), s = constant_dimension(op, "S"),
                c = constant_dimension(op, "C");
  return {constant_dimension(op, "K"), r && s && c ? r * s * c : 0};
}

// The BLIS form's entries for constant weights (ConstantWeightsEntries), named after the
// instantiation of `run` they go with.
ConstantWeightsEntries constant_weights_entries(const OpSpec& op, const MicroKernel& mk,
                                                const std::string& run_instantiation) {
  const auto [static_n, static_k] = static_dims(op);
  // run<OP, EPI, Params<...>, N, K> -> Params<...> alone (prepack has no epilogue).
  const size_t params_begin = run_instantiation.find("dc_x86::Params<");
  const size_t params_end = run_instantiation.rfind(">, ");
  const std::string params = run_instantiation.substr(params_begin, params_end - params_begin + 1);
  const std::string base = "dietcode_cpu_" + stable_hash_hex(run_instantiation);
  ConstantWeightsEntries e;
  e.prepack = base + "_prepack";
  e.run_prepacked = base + "_prepacked";
  e.panel_nr = int(mk.get("NR"));
  e.panel_kc = int(mk.get("KC"));
  e.source = fmt::format(
      "\n// ---- constant weights: B packed once, then read in place\n"
      "extern \"C\" __attribute__((visibility(\"default\"))) long long {}(\n"
      "    const DietcodeArgs* args, float* dst) {{\n"
      "  return dc_x86::prepack<dc_x86::OpKind::{}, {}, {}, {}>(args, dst);\n"
      "}}\n"
      "extern \"C\" __attribute__((visibility(\"default\"))) int {}(\n"
      "    const DietcodeArgs* args, const DietcodeCpuRuntime* rt, const float* b_panels) {{\n"
      "  return {}(args, rt, b_panels);\n"
      "}}\n",
      e.prepack, op_kind(op), params, static_n, static_k, e.run_prepacked,
      std::string("dc_x86::run_prepacked") +
          run_instantiation.substr(run_instantiation.find('<')));
  return e;
}

}  // namespace

GeneratedKernel generate_cpu_kernel(const OpSpec& op, const MicroKernel& mk) {
  auto p = [&mk](const char* name) { return mk.get(name); };
  const auto [static_n, static_k] = static_dims(op);
  const char* isa = x86_is_avx512(mk.tmpl) ? "kAvx512" : "kAvx2";
  // The BLIS form (run, gemm_x86.h), the dot-product form (run_dot, dot_x86.h) or the
  // W-broadcast form (run_wbcast, wbcast_x86.h: the BLIS Params with A, here W, never packed).
  const X86Form form = x86_form(mk.tmpl);
  // Logs written before WORKERS was a tunable hold kernels that ran on every worker.
  const int workers = mk.get_or("WORKERS", 0);
  // PREFETCH_TILE (the W-broadcast form's) and SHARE_B (SHARE_X of the W-broadcast form,
  // SHARE_W of the BLIS form) are the Params' last arguments: left at their default of 0 they
  // are not written, so the kernels of logs from before them keep their entry names and
  // cached objects.
  const int prefetch_tile = mk.get_or("PREFETCH_TILE", 0);
  const int share_b = mk.get_or(form == X86Form::kWbcast ? "SHARE_X" : "SHARE_W", 0);
  const std::string last = share_b ? fmt::format(", {}, {}", prefetch_tile, share_b)
                           : prefetch_tile ? fmt::format(", {}", prefetch_tile)
                                           : "";
  const std::string instantiation =
      form == X86Form::kDot
          ? fmt::format(
                "dc_x86::run_dot<dc_x86::OpKind::{}, dc_x86::Epilogue::{}, dc_x86::DotParams<{}, "
                "{}, {}, {}, {}, dc_x86::Isa::{}, {}>, {}, {}>",
                op_kind(op), epilogue(op.epilogue), p("MR"), p("NR"), p("KC"), p("THREADS_M"),
                p("UNROLL"), isa, workers, static_n, static_k)
          : fmt::format(
                "dc_x86::{}<dc_x86::OpKind::{}, dc_x86::Epilogue::{}, dc_x86::Params<{}, {}, {}, "
                "{}, {}, {}, {}, {}, {}, {}, dc_x86::Isa::{}, {}{}>, {}, {}>",
                form == X86Form::kWbcast ? "run_wbcast" : "run", op_kind(op), epilogue(op.epilogue),
                p("MR"), p("NR"), p("KC"), p("MC"), p("NC"), p("LOOP_ORDER"), p("THREADS_M"),
                form == X86Form::kWbcast ? 0 : p("PACK_A"), p("PREFETCH"), p("UNROLL"), isa,
                workers, last, static_n, static_k);

  GeneratedKernel out;
  out.name = mk.tmpl;
  const std::string templates = load_template_source(data_dir() / "templates" / "x86", "ops_x86.h");
  if (form == X86Form::kBlis && op.kind != OpKind::kBatchMatmul) {
    out.constant_weights = constant_weights_entries(op, mk, instantiation);
    out.constant_weights.standalone_source = templates + out.constant_weights.source;
  }
  // One entry name per (template instantiation), so candidates can share a shared object.
  out.plan.entry = "dietcode_cpu_" + stable_hash_hex(instantiation);
  // The register tile in C's frame: where partial tiles begin. The W-broadcast form's tile is
  // C^T's, NR rows of C by MR columns.
  const bool transposed = form == X86Form::kWbcast;
  out.plan.tile_m = transposed ? p("NR") : p("MR");
  out.plan.tile_n = transposed ? p("MR") : p("NR");
  out.plan.threads = 0;  // the pack's and the measurer's thread pool decide
  out.fixed_arch = x86_isa_level(mk.tmpl);
  out.source = templates +
               fmt::format(
                   "\n// ---- the candidate: {}\n"
                   "extern \"C\" __attribute__((visibility(\"default\"))) int {}(\n"
                   "    const DietcodeArgs* args, const DietcodeCpuRuntime* rt) {{\n"
                   "  return {}(args, rt);\n"
                   "}}\n",
                   mk.key(), out.plan.entry, instantiation);
  return out;
}

}  // namespace dietcode
