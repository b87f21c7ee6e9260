// The search space every fp32 SIMT GEMM template shares: micro-kernels of
// templates/gemm_core_f32.cuh. Tile sizes are factor chains over warps, lanes and per-thread
// elements; everything else (depth BK, load width VEC, pipeline STAGES, PRELOAD, SPLITK,
// MIN_BLOCKS) is a plain tunable. Constraints encode the GPU's limits and the core's own rules
// (its #error lines); a variant adds its op's layout rule for VEC and its loader's registers.
#include "space/simt_gemm_f32_space.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "space/templates.h"
#include "space/tile_bounds.h"

namespace dietcode {

int dense_f32_padded_pitch(int extent) {
  const int rounded = (extent + 3) / 4 * 4;
  return rounded % 8 == 0 ? rounded + 4 : rounded;
}

DenseF32Geometry DenseF32Geometry::of(const MicroKernel& mk) {
  const int warps_m = mk.get("WARPS_M"), warps_n = mk.get("WARPS_N");
  const int tm = mk.get("TM"), tn = mk.get("TN"), bk = mk.get("BK");
  const int vec = mk.get("VEC"), stages = mk.get("STAGES");
  DenseF32Geometry g;
  g.threads = 32 * warps_m * warps_n;
  g.bm = warps_m * mk.get("THREADS_M") * tm;
  g.bn = warps_n * mk.get("THREADS_N") * tn;
  g.lda = dense_f32_padded_pitch(g.bm);
  g.ldb = dense_f32_padded_pitch(g.bn);
  g.smem_bytes = stages * bk * (g.lda + g.ldb) * 4;
  // A thread loads ceil(rows * BK / VEC / threads) chunks per operand and k-tile.
  const int width = stages >= 3 ? 1 : vec;
  auto chunks = [&](int rows) { return (rows * bk / width + g.threads - 1) / g.threads; };
  g.a_rows_per_thread = chunks(g.bm);
  const int per_thread = chunks(g.bm) + chunks(g.bn);
  const int in_flight = stages >= 3 ? 0 : per_thread * width;
  // PRELOAD keeps the next k-row's fragments live beside the current row's. NVRTC for sm_90 at
  // 16 x 8 per thread, 128 x 128: 215 -> 235 registers with cp.async and 219 -> 251 register
  // staged, where this estimate says 240 and 232 without PRELOAD (64 x 256: 248 and 238, for
  // 235 and 253 with it). The cp.async estimate's loader term already covers the difference;
  // register staged, half of TM + TN more. Every one of these compiles without spills (and a
  // kernel that spills is rejected after compiling anyway).
  const int preloaded = mk.get_or("PRELOAD", 0) && stages < 3 ? (tm + tn) / 2 : 0;
  g.register_estimate = tm * tn + 2 * (tm + tn) + preloaded + in_flight + 2 * per_thread + 32;
  return g;
}

TemplateSpace make_simt_gemm_f32_space(const SimtGemmF32Variant& variant) {
  TemplateSpace s;
  s.tmpl = variant.tmpl;
  s.tunables = {
      {"WARPS_M", {1, 2, 4, 8}, 4, "warps of a block along M"},
      {"WARPS_N", {1, 2, 4, 8}, 2, "warps of a block along N"},
      {"THREADS_M", {1, 2, 4, 8, 16, 32}, 4, "lanes of a warp along M"},
      {"THREADS_N", {1, 2, 4, 8, 16, 32}, 8, "lanes of a warp along N (THREADS_M*THREADS_N=32)"},
      {"TM", {1, 2, 3, 4, 6, 8, 12, 16}, 8, "rows of Y per thread"},
      {"TN", {1, 2, 3, 4, 6, 8, 12, 16}, 8, "columns of Y per thread"},
      {"BK", {4, 8, 16, 32}, 8, "depth of a K tile in shared memory"},
      {"VEC", {1, 2, 4}, 4, "floats per global load along K (register-staged stages)"},
      {"STAGES", {1, 2, 3, 4}, 2, "1 single buffer, 2 register-staged double buffer, 3-4 cp.async"},
      {"SPLITK", {1, 2, 3, 4, 6, 8, 12, 16}, 1, "K slices summed by a deterministic reduction"},
      {"MIN_BLOCKS", {1, 2}, 1, "blocks per SM ptxas must leave registers for"},
      {"PRELOAD", {0, 1}, 0, "1: the next k-row's fragments load while this one computes"},
  };
  s.chains = {{"BM", {"WARPS_M", "THREADS_M", "TM"}}, {"BN", {"WARPS_N", "THREADS_N", "TN"}}};
  // What cuBLAS runs for BERT's fp32 layers on Hopper (ncu, docs/results/h200/README.md): four
  // warps, 128 outputs per thread (16 x 8) at up to 255 registers, so a block of 64 x 256 or
  // 128 x 128 keeps the FMA pipes busy at one eighth occupancy. Both pipelines of each, and
  // cuBLAS's own design in full: cp.async in three stages with PRELOAD (the next k-row's
  // fragments loaded ahead). Seven starting kernels in all: one round's share of a first round.
  for (int stages : {3, 2}) {
    const int vec = stages >= 3 ? 1 : 4;
    for (int preload : stages >= 3 ? std::vector<int>{0, 1} : std::vector<int>{0}) {
      s.seeds.push_back({{"WARPS_M", 1}, {"WARPS_N", 4}, {"THREADS_M", 4}, {"THREADS_N", 8},
                         {"TM", 16}, {"TN", 8}, {"BK", 8}, {"STAGES", stages}, {"VEC", vec},
                         {"PRELOAD", preload}});
      s.seeds.push_back({{"WARPS_M", 2}, {"WARPS_N", 2}, {"THREADS_M", 4}, {"THREADS_N", 8},
                         {"TM", 16}, {"TN", 8}, {"BK", 8}, {"STAGES", stages}, {"VEC", vec},
                         {"PRELOAD", preload}});
    }
  }

  using G = DenseF32Geometry;
  const int per_a_row = variant.registers_per_a_row;
  auto registers = [per_a_row](const MicroKernel& mk) {
    const G g = G::of(mk);
    return g.register_estimate + per_a_row * g.a_rows_per_thread;
  };
  // `uses`: the tunables a constraint reads, so enumeration can prune as soon as they are set.
  const std::vector<std::string> kAll = {"WARPS_M", "WARPS_N", "THREADS_M", "THREADS_N", "TM",
                                         "TN",      "BK",      "VEC",       "STAGES",    "PRELOAD"};
  std::vector<std::string> with_min_blocks = kAll;
  with_min_blocks.push_back("MIN_BLOCKS");
  s.constraints = {
      {"THREADS_M * THREADS_N == warp size (lanes cover the warp's tile once)",
       [](const MicroKernel& mk, const SpaceContext& c) {
         return mk.get("THREADS_M") * mk.get("THREADS_N") == c.gpu.warp_size;
       },
       {"THREADS_M", "THREADS_N"}},
      {"TM * TN >= 4 (fewer outputs per thread leave the FMAs waiting on shared memory)",
       [](const MicroKernel& mk, const SpaceContext&) { return mk.get("TM") * mk.get("TN") >= 4; },
       {"TM", "TN"}},
      {"threads per block (32 * WARPS_M * WARPS_N) <= max threads per block",
       [](const MicroKernel& mk, const SpaceContext& c) {
         return G::of(mk).threads <= c.gpu.max_threads_per_block;
       },
       {"WARPS_M", "WARPS_N"}},
      {"shared memory per block <= opt-in shared memory per block",
       [](const MicroKernel& mk, const SpaceContext& c) {
         return G::of(mk).smem_bytes <= c.gpu.smem_per_block_optin;
       },
       kAll},
      {"register estimate per thread <= max registers per thread",
       [registers](const MicroKernel& mk, const SpaceContext& c) {
         return registers(mk) <= c.gpu.max_regs_per_thread;
       },
       kAll},
      {"MIN_BLOCKS blocks fit an SM: threads and a register floor (TM*TN + TM + TN + 24)",
       [](const MicroKernel& mk, const SpaceContext& c) {
         const G g = G::of(mk);
         const int blocks = mk.get("MIN_BLOCKS");
         if (blocks == 1) return true;
         const int tm = mk.get("TM"), tn = mk.get("TN");
         const int64_t cap = c.gpu.regs_per_sm / (int64_t(blocks) * g.threads);
         return int64_t(blocks) * g.threads <= c.gpu.max_threads_per_sm &&
                std::min<int64_t>(cap, c.gpu.max_regs_per_thread) >= tm * tn + tm + tn + 24;
       },
       with_min_blocks},
      {"register estimate * threads <= registers per block",
       [registers](const MicroKernel& mk, const SpaceContext& c) {
         return int64_t(registers(mk)) * G::of(mk).threads <= c.gpu.regs_per_block;
       },
       kAll},
      {"BM <= 1.1 x largest M, rounded up to a power of two",
       [](const MicroKernel& mk, const SpaceContext& c) {
         return G::of(mk).bm <= tile_upper_bound(c.largest.M, 1);
       },
       {"WARPS_M", "THREADS_M", "TM"}},
      {"BN <= 1.1 x largest N, rounded up to a power of two",
       [](const MicroKernel& mk, const SpaceContext& c) {
         return G::of(mk).bn <= tile_upper_bound(c.largest.N, 1);
       },
       {"WARPS_N", "THREADS_N", "TN"}},
      {"BK <= largest K, rounded up to a power of two",
       [](const MicroKernel& mk, const SpaceContext& c) {
         return mk.get("BK") <= next_power_of_two(c.largest.K);
       },
       {"BK"}},
      {"VEC divides BK",
       [](const MicroKernel& mk, const SpaceContext&) { return mk.get("BK") % mk.get("VEC") == 0; },
       {"BK", "VEC"}},
      {"VEC == 1 when STAGES >= 3 (cp.async copies single floats into the k-major tile)",
       [](const MicroKernel& mk, const SpaceContext&) {
         return mk.get("STAGES") < 3 || mk.get("VEC") == 1;
       },
       {"STAGES", "VEC"}},
      {variant.vec_description,
       [pitches = variant.vector_pitches](const MicroKernel& mk, const SpaceContext& c) {
         for (int64_t pitch : pitches(c.op))
           if (pitch > 0 && pitch % mk.get("VEC") != 0) return false;
         return true;
       },
       {"VEC"}},
      {"STAGES >= 3 needs compute capability 8.0 or newer (cp.async)",
       [](const MicroKernel& mk, const SpaceContext& c) {
         return mk.get("STAGES") < 3 || c.gpu.cc_major >= 8;
       },
       {"STAGES"}},
      {"PRELOAD == 0 when STAGES == 1 (the next k-tile needs a second buffer)",
       [](const MicroKernel& mk, const SpaceContext&) {
         return mk.get("STAGES") >= 2 || mk.get_or("PRELOAD", 0) == 0;
       },
       {"STAGES", "PRELOAD"}},
      {"SPLITK == 1 or largest K / SPLITK >= BK (every slice holds a full K tile)",
       [](const MicroKernel& mk, const SpaceContext& c) {
         const int split = mk.get("SPLITK");
         return split == 1 || c.largest.K / split >= mk.get("BK");
       },
       {"SPLITK", "BK"}},
  };
  s.constraints.insert(s.constraints.end(), variant.extra_constraints.begin(),
                       variant.extra_constraints.end());
  s.resources = [](const MicroKernel& mk) {
    const G g = G::of(mk);
    return LaunchResources{g.threads, g.smem_bytes};
  };
  s.supports = variant.supports;
  return s;
}

}  // namespace dietcode
