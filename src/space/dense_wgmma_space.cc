// The dense_wgmma template's search space: warp-specialized wgmma micro-kernels for float16 and
// bfloat16 dense layers and K-contiguous batch_matmul on compute capability 9.0 (sm_90a), for
// the compute-bound end of the range. A block is a producer warpgroup plus WG_M consumer warpgroups
// of 64 rows each (BM = WG_M * WGM), BN is wgmma's n; BK is fixed at 64 (one 128-byte swizzled row)
// and WGM at 64 (wgmma's m), listed as one-value tunables so the factor chains and the cost model's
// features see them. PRODUCER picks how stages are filled: 0, the producer warpgroup's cp.async
// (any K); 1, TMA tensor copies issued by one thread (K a static multiple of 8, because a tensor
// map's row pitch must be a multiple of 16 bytes and the kernel serves every K of the range).
// BN takes every multiple of 8 from 64 to 256 and WG_M 1..4 because wave quantization, not the
// MMA, decides these kernels at many shapes: Llama-7B's gate (N = 11008) in power-of-two tiles
// gives 86 or 172 blocks on 132 SMs at M = 129..256, a third of the GPU idle for the whole run,
// where 2 x 66 blocks of 168 columns fill it. The cost model's wave term ranks them.
// M_TILES > 1 shortens the grid instead: each block computes M_TILES tiles of one column in
// turn, and since its producer runs ahead into the next tile while its consumers store the last,
// the pipeline fills once per block, not once per tile. At short K (BERT's 768: 12 k-tiles) the
// fill and the store are a large share of a tile, and a grid of 1.8 waves becomes one.
// Constraints mirror the #error lines of templates/dense_wgmma.cu.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "space/dense_tc_space.h"
#include "space/tensor_core_space_rules.h"
#include "space/tile_bounds.h"

namespace dietcode {

DenseWgmmaGeometry DenseWgmmaGeometry::of(const MicroKernel& mk) {
  DenseWgmmaGeometry g;
  const int consumers = mk.get("WG_M");
  g.threads = 128 * (1 + consumers);
  g.bm = consumers * mk.get("WGM");
  g.bn = mk.get("BN");
  // EPI_SMEM adds a 16 x 64-output buffer per consumer warp, each row padded by 16 bytes.
  const int epilogue_buffers = mk.get_or("EPI_SMEM", 0) ? 4 * consumers * 16 * (64 * 2 + 16) : 0;
  g.smem_bytes =
      mk.get("STAGES") * (g.bm + g.bn) * mk.get("BK") * 2 + 1024 + 1024 + epilogue_buffers;
  g.register_estimate = g.bn / 2 + 40;
  return g;
}

namespace {

// 64, 72, ..., 256: narrower tiles re-read A from shared memory for too few MMAs.
std::vector<int> block_widths() {
  std::vector<int> widths;
  for (int bn = 64; bn <= 256; bn += 8) widths.push_back(bn);
  return widths;
}

TemplateSpace make_space() {
  TemplateSpace s;
  s.tmpl = "dense_wgmma";
  s.tunables = {
      {"WG_M", {1, 2, 3, 4}, 2, "consumer warpgroups along M (64 rows each)"},
      {"WGM", {64}, 64, "rows per consumer warpgroup (wgmma's m; fixed)"},
      {"BN", block_widths(), 128, "columns of the block tile (wgmma's n, a multiple of 8)"},
      {"BK", {64}, 64, "depth of a K tile: one 128-byte swizzled row (fixed)"},
      {"STAGES", {2, 3, 4, 5, 6}, 4, "shared-memory stages in the producer/consumer ring"},
      split_k_tunable(),
      {"PRODUCER", {0, 1}, 0, "how stages are filled: 0 cp.async, 1 TMA tensor copies"},
      {"EPI_SMEM", {0, 1}, 0, "1: outputs staged through shared memory, stored 16 bytes at a time"},
      {"M_FASTEST", {0, 1}, 0, "1: blocks in launch order walk M tiles first (W shared in L2)"},
      {"M_TILES",
       {1, 2, 3, 4},
       1,
       "M tiles a block computes in turn (the grid's y divided by it): the producer loads the "
       "next tile's stages while the consumers store the last"},
  };
  s.chains = {{"BM", {"WG_M", "WGM"}}, {"BN", {"BN"}}};

  using G = DenseWgmmaGeometry;
  s.constraints = {
      {"the GPU is compute capability 9.0 with tensor cores for the element type (wgmma needs "
       "sm_90a)",
       [](const MicroKernel&, const SpaceContext& c) {
         return c.gpu.cc_major == 9 && c.gpu.cc_minor == 0 &&
                gpu_has_tensor_cores_for(c.gpu, c.op.dtype);
       },
       {"WG_M"}},
      threads_per_block_constraint<G>(
          "threads per block (128 * (1 + WG_M)) <= max threads per block", {"WG_M", "WGM", "BN"}),
      {"register estimate fits the share of a block's registers each thread gets",
       [](const MicroKernel& mk, const SpaceContext& c) {
         const G g = G::of(mk);
         const int64_t share = c.gpu.regs_per_block / g.threads / 8 * 8;
         return g.register_estimate <= std::min<int64_t>(share, c.gpu.max_regs_per_thread);
       },
       {"WG_M", "WGM", "BN"}},
      smem_per_block_constraint<G>({"WG_M", "WGM", "BN", "BK", "STAGES", "EPI_SMEM"}),
      {"BM <= 1.1 x largest M, rounded up to a power of two (at least 64)",
       [](const MicroKernel& mk, const SpaceContext& c) {
         return G::of(mk).bm <= tile_upper_bound(c.largest.M, 64);
       },
       {"WG_M", "WGM"}},
      {"BN <= 1.1 x largest N, rounded up to a power of two (at least 64)",
       [](const MicroKernel& mk, const SpaceContext& c) {
         return mk.get("BN") <= tile_upper_bound(c.largest.N, 64);
       },
       {"BN"}},
      split_k_slice_constraint(),
      {"EPI_SMEM == 0 or SPLITK == 1 (the staged store writes final outputs; split-K slices "
       "write fp32 partial sums)",
       [](const MicroKernel& mk, const SpaceContext&) {
         return mk.get("EPI_SMEM") == 0 || mk.get("SPLITK") == 1;
       },
       {"EPI_SMEM", "SPLITK"}},
      {"M_FASTEST == 0 or M_TILES == 1 (M-first numbering needs a block per M tile)",
       [](const MicroKernel& mk, const SpaceContext&) {
         return mk.get("M_FASTEST") == 0 || mk.get("M_TILES") == 1;
       },
       {"M_FASTEST", "M_TILES"}},
      {"BM x M_TILES <= 1.1 x largest M, rounded up to a power of two (a walk of more M tiles "
       "than any shape has is the same kernel as a shorter one)",
       [](const MicroKernel& mk, const SpaceContext& c) {
         return mk.get("M_TILES") == 1 ||
                int64_t(G::of(mk).bm) * mk.get("M_TILES") <= tile_upper_bound(c.largest.M, 64);
       },
       {"WG_M", "WGM", "M_TILES"}},
      {"PRODUCER == 0 or K is static and a multiple of 8 (a tensor map's rows are 16-byte "
       "aligned)",
       [](const MicroKernel& mk, const SpaceContext& c) {
         if (mk.get("PRODUCER") == 0) return true;
         const int64_t k = constant_dimension(c.op, "K");
         return k > 0 && k % 8 == 0;
       },
       {"PRODUCER"}},
  };
  s.resources = geometry_resources<G>;
  s.supports = supports_16bit_k_contiguous;
  return s;
}

}  // namespace

const TemplateSpace& dense_wgmma_space() {
  static const TemplateSpace space = make_space();
  return space;
}

}  // namespace dietcode
