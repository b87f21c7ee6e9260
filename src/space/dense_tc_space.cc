// The dense_tc template's search space: mma.sync micro-kernels for float16 and bfloat16 dense
// layers and batch_matmul with A stored [M,K] (B stored [N,K] or [K,N]). Block tiles are
// factor chains over warps and warp tiles (BM = WARPS_M * WM, BN = WARPS_N * WN, WM in 16s and WN
// in 8s, the mma tile's extents); depth BK, pipeline STAGES, SPLITK and MIN_BLOCKS are plain
// tunables. Constraints encode the GPU's limits and the template's own rules (#error lines in
// templates/dense_tc.cu).
//
// A K that is not a multiple of 8 is allowed: the template then loads tiles with guarded 2-byte
// loads instead of 16-byte cp.async (correct, slower); the tuner's measurements decide.
#include "space/dense_tc_space.h"

#include <algorithm>
#include <cstdint>

#include "space/tensor_core_space_rules.h"
#include "space/tile_bounds.h"

namespace dietcode {

bool gpu_has_tensor_cores_for(const GpuSpec& gpu, DType dtype) {
  const double peak = dtype == DType::kFloat16    ? gpu.fp16_tensor_tflops
                      : dtype == DType::kBFloat16 ? gpu.bf16_tensor_tflops
                                                  : 0.0;
  return gpu.cc_major >= 8 && peak > 0;
}

DenseTcGeometry DenseTcGeometry::of(const MicroKernel& mk) {
  const int warps_m = mk.get("WARPS_M"), warps_n = mk.get("WARPS_N");
  const int wm = mk.get("WM"), wn = mk.get("WN"), bk = mk.get("BK"), stages = mk.get("STAGES");
  DenseTcGeometry g;
  g.threads = 32 * warps_m * warps_n;
  g.bm = warps_m * wm;
  g.bn = warps_n * wn;
  g.smem_bytes = stages * (g.bm + g.bn) * bk * 2;
  g.register_estimate = wm * wn / 32 + wm / 2 + wn / 2 + 40;
  return g;
}

namespace {

// dense_tc also reads B stored [K,N] (ldmatrix .trans): batch_matmul with A stored [M,K] and
// either B layout. A stored [K,M] (transpose_a) is read by no tensor-core template.
bool supports_dense_tc(const OpSpec& op) {
  if (supports_16bit_k_contiguous(op)) return true;
  return op.kind == OpKind::kBatchMatmul && !op.transpose_a &&
         (op.dtype == DType::kFloat16 || op.dtype == DType::kBFloat16);
}

TemplateSpace make_space() {
  TemplateSpace s;
  s.tmpl = "dense_tc";
  s.tunables = {
      {"WARPS_M", {1, 2, 4, 8}, 2, "warps of a block along M"},
      {"WARPS_N", {1, 2, 4, 8}, 2, "warps of a block along N"},
      {"WM", {16, 32, 48, 64, 96, 128}, 64, "rows of a warp tile (16-row mma tiles)"},
      {"WN", {8, 16, 24, 32, 48, 64, 96, 128}, 32, "columns of a warp tile (8-column mma tiles)"},
      {"BK", {32, 64}, 32, "depth of a K tile in shared memory (64- or 128-byte rows)"},
      {"STAGES", {2, 3, 4}, 3, "cp.async pipeline depth: K tiles in shared memory"},
      split_k_tunable(),
      {"MIN_BLOCKS", {1, 2}, 1, "blocks per SM ptxas must leave registers for"},
  };
  s.chains = {{"BM", {"WARPS_M", "WM"}}, {"BN", {"WARPS_N", "WN"}}};

  using G = DenseTcGeometry;
  const std::vector<std::string> kTile = {"WARPS_M", "WARPS_N", "WM", "WN"};
  const std::vector<std::string> kSmem = {"WARPS_M", "WARPS_N", "WM", "WN", "BK", "STAGES"};
  s.constraints = {
      {"the GPU has tensor cores for the element type (compute capability >= 8.0, non-zero "
       "tensor peak)",
       [](const MicroKernel&, const SpaceContext& c) {
         return gpu_has_tensor_cores_for(c.gpu, c.op.dtype);
       },
       {"WARPS_M"}},
      threads_per_block_constraint<G>(
          "threads per block (32 * WARPS_M * WARPS_N) <= max threads per block",
          {"WARPS_M", "WARPS_N"}),
      {"warp tile WM * WN <= 4096 (at most 128 fp32 accumulators per lane)",
       [](const MicroKernel& mk, const SpaceContext&) {
         return mk.get("WM") * mk.get("WN") <= 4096;
       },
       {"WM", "WN"}},
      {"register estimate per thread <= max registers per thread",
       [](const MicroKernel& mk, const SpaceContext& c) {
         return G::of(mk).register_estimate <= c.gpu.max_regs_per_thread;
       },
       kTile},
      {"register estimate * threads <= registers per block",
       [](const MicroKernel& mk, const SpaceContext& c) {
         const G g = G::of(mk);
         return int64_t(g.register_estimate) * g.threads <= c.gpu.regs_per_block;
       },
       kTile},
      smem_per_block_constraint<G>(kSmem),
      {"BM <= 1.1 x largest M, rounded up to a power of two (at least 16)",
       [](const MicroKernel& mk, const SpaceContext& c) {
         return mk.get("WARPS_M") * mk.get("WM") <= tile_upper_bound(c.largest.M, 16);
       },
       {"WARPS_M", "WM"}},
      {"BN <= 1.1 x largest N, rounded up to a power of two (at least 8)",
       [](const MicroKernel& mk, const SpaceContext& c) {
         return mk.get("WARPS_N") * mk.get("WN") <= tile_upper_bound(c.largest.N, 8);
       },
       {"WARPS_N", "WN"}},
      {"BK == 32 or BK <= largest K, rounded up to a power of two",
       [](const MicroKernel& mk, const SpaceContext& c) {
         return mk.get("BK") == 32 || mk.get("BK") <= next_power_of_two(c.largest.K);
       },
       {"BK"}},
      split_k_slice_constraint(),
      {"MIN_BLOCKS blocks fit an SM: threads, and registers for the estimate",
       [](const MicroKernel& mk, const SpaceContext& c) {
         const int blocks = mk.get("MIN_BLOCKS");
         if (blocks == 1) return true;
         const G g = G::of(mk);
         const int64_t cap = c.gpu.regs_per_sm / (int64_t(blocks) * g.threads);
         return int64_t(blocks) * g.threads <= c.gpu.max_threads_per_sm &&
                std::min<int64_t>(cap, c.gpu.max_regs_per_thread) >= g.register_estimate &&
                int64_t(blocks) * g.smem_bytes <= c.gpu.smem_per_sm;
       },
       {"WARPS_M", "WARPS_N", "WM", "WN", "BK", "STAGES", "MIN_BLOCKS"}},
  };
  s.resources = geometry_resources<G>;
  s.supports = supports_dense_tc;
  return s;
}

}  // namespace

const TemplateSpace& dense_tc_space() {
  static const TemplateSpace space = make_space();
  return space;
}

}  // namespace dietcode
