// Per-template code generation rules. The three fp32 SIMT GEMM templates share the core's
// rules (THREADS_N implied by THREADS_M, the VEC fallback, the alignment of vector loads) and
// differ in which dimensions they can take as constants and which pitches their loads walk.
#include "codegen/template_rules.h"

#include <fmt/format.h>

#include "common/error.h"
#include "space/tile_bounds.h"
#include "workload/op_layout.h"

namespace dietcode {

namespace {

void define(std::vector<std::string>& options, const char* name, int64_t value) {
  options.push_back(fmt::format("-D{}={}", name, value));
}

void define_if_static(std::vector<std::string>& options, const char* name, int64_t value) {
  if (value > 0) define(options, name, value);
}

// Rules every template on gemm_core_f32.cuh follows. `pitches` are the row pitches its vector
// loads walk, 0 where dynamic: a constant one that VEC does not divide would misalign them, so
// VEC falls back to 1 (the kernel is then the VEC=1 kernel). A dynamic one is checked by the
// kernel at run time; the pointers must still be aligned for the widest load.
void simt_gemm_rules(const MicroKernel& mk, const std::vector<int64_t>& pitches,
                     std::map<std::string, int>& params, LaunchPlan& plan) {
  // THREADS_N is implied by THREADS_M when a hand-written micro-kernel leaves it out.
  if (!mk.params.count("THREADS_N") && params.at("THREADS_M") > 0)
    params["THREADS_N"] = 32 / params.at("THREADS_M");
  for (int64_t pitch : pitches)
    if (pitch > 0 && pitch % params.at("VEC") != 0) params["VEC"] = 1;
  const int load_width = params.at("STAGES") >= 3 ? 1 : params.at("VEC");
  plan.min_alignment_bytes = 4 * load_width;
}

// dense_f32: N and K become constants when static (M always varies).
void dense_rules(const OpSpec& op, const MicroKernel& mk, std::map<std::string, int>& params,
                 std::vector<std::string>& options, LaunchPlan& plan) {
  const int64_t n = static_dim(op, "N"), k = static_dim(op, "K");
  simt_gemm_rules(mk, {k}, params, plan);
  define_if_static(options, "STATIC_N", n);
  define_if_static(options, "STATIC_K", k);
}

// batch_matmul_f32: the transposes pick each operand's loader; M, N and K become constants when
// static. A[M,K] and B stored [N,K] are walked along K, A stored [K,M] along M, B[K,N] along N.
void batch_matmul_rules(const OpSpec& op, const MicroKernel& mk, std::map<std::string, int>& params,
                        std::vector<std::string>& options, LaunchPlan& plan) {
  const int64_t m = static_dim(op, "M"), n = static_dim(op, "N"), k = static_dim(op, "K");
  static_dim(op, "B");  // present, even though only its value at launch matters
  simt_gemm_rules(mk, {op.transpose_a ? m : k, op.transpose_b ? k : n}, params, plan);
  define(options, "A_K_CONTIGUOUS", op.transpose_a ? 0 : 1);
  define(options, "B_K_CONTIGUOUS", op.transpose_b ? 1 : 0);
  define_if_static(options, "STATIC_M", m);
  define_if_static(options, "STATIC_N", n);
  define_if_static(options, "STATIC_K", k);
}

// conv2d_f32: the GEMM's N (filters K) and K (R*S*C) become constants when static, and so does
// every static extent of the geometry; stride, padding and dilation are the op's attributes and
// always constants. The output extents P and Q are constants when their inputs are.
void conv2d_rules(const OpSpec& op, const MicroKernel& mk, std::map<std::string, int>& params,
                  std::vector<std::string>& options, LaunchPlan& plan) {
  const int64_t h = static_dim(op, "H"), w = static_dim(op, "W"), c = static_dim(op, "C");
  const int64_t filters = static_dim(op, "K"), r = static_dim(op, "R"), s = static_dim(op, "S");
  static_dim(op, "N");
  simt_gemm_rules(mk, {c}, params, plan);
  auto output_extent = [&](int64_t in, int64_t filter, int axis, const char* name) -> int64_t {
    if (in == 0 || filter == 0) return 0;
    int64_t out = 0;
    if (!conv_output_extent(in, op.pad[axis], op.dilation[axis], filter, op.stride[axis], &out))
      throw UserError(fmt::format("op \"{}\": the convolution output {} is empty", op.name, name));
    return out;
  };
  const int64_t p = output_extent(h, r, 0, "P"), q = output_extent(w, s, 1, "Q");
  define_if_static(options, "STATIC_N", filters);
  define_if_static(options, "STATIC_K", r > 0 && s > 0 && c > 0 ? r * s * c : 0);
  define_if_static(options, "STATIC_H", h);
  define_if_static(options, "STATIC_W", w);
  define_if_static(options, "STATIC_C", c);
  define_if_static(options, "STATIC_S", s);
  define_if_static(options, "STATIC_P", p);
  define_if_static(options, "STATIC_Q", q);
  define(options, "CONV_STRIDE_H", op.stride[0]);
  define(options, "CONV_STRIDE_W", op.stride[1]);
  define(options, "CONV_PAD_H", op.pad[0]);
  define(options, "CONV_PAD_W", op.pad[1]);
  define(options, "CONV_DILATION_H", op.dilation[0]);
  define(options, "CONV_DILATION_W", op.dilation[1]);
}

}  // namespace

int64_t static_dim(const OpSpec& op, const char* name) {
  if (!op.dims.count(name))
    throw UserError(fmt::format("op \"{}\": no dimension {}", op.name, name));
  return constant_dimension(op, name);
}

void apply_template_rules(const OpSpec& op, const MicroKernel& mk,
                          std::map<std::string, int>& params, std::vector<std::string>& options,
                          LaunchPlan& plan) {
  if (mk.tmpl == "dense_f32") dense_rules(op, mk, params, options, plan);
  if (mk.tmpl == "batch_matmul_f32") batch_matmul_rules(op, mk, params, options, plan);
  if (mk.tmpl == "conv2d_f32") conv2d_rules(op, mk, params, options, plan);
}

}  // namespace dietcode
