// The CPU's W-broadcast templates (templates/x86/wbcast_x86.h, run_wbcast): C^T = W X^T on the
// BLIS core with the operands' roles swapped, so W's K-contiguous rows are broadcast in place
// and only X is packed. They compute the ops whose A is [M][K] and B is [N][K] — dense and
// batch_matmul NT — and aim at small and middling M, where the BLIS form's repacking of W is a
// large share of the time and the dot form's horizontal sums cost more than a transposed store.
//
// The tunables are dc_x86::Params read in C^T's frame: MR rows of W (columns of C), NR rows of X
// as NR / W vectors, MC a block of W's rows, NC a block of X's rows. PACK_A is always 0 (W is
// read in place), so it is no tunable here. The register file bounds MR and NR as in the BLIS
// form. KC goes up to 1024 because each K block ends in a transposed store of the whole tile.
// PREFETCH_TILE = 1 prefetches the next register tile's rows of W while this one computes, a
// whole tile ahead instead of PREFETCH k steps: at M = 16 W streams from DRAM about as fast as
// the FMAs consume it, and the short distances leave each tile's first lines waiting
// (register_tile_x86.h, accumulate). Kernels of logs from before it had 0.
// SHARE_X = 1 packs X once for every worker and hands out blocks of MC rows of W by NC rows
// of X as the workers ask for them, instead of a band per worker that packs its own X: the
// workers then finish together, where with bands a worker woken late or slowed by its
// neighbours held up the call (wbcast_x86.h). Bands (THREADS_M) mean nothing with it, nor
// does it with one worker. Kernels of logs from before it had 0, which is why 0 is the
// default (a log's kernel is completed with the defaults) and the seeds bring in 1.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "space/templates.h"
#include "space/x86_space_rules.h"

namespace dietcode {

namespace {

TemplateSpace make_x86_wbcast_space(const char* tmpl, int vector_floats, int registers,
                                    std::vector<int> nr, std::vector<int> mr,
                                    std::vector<std::map<std::string, int>> seeds = {}) {
  TemplateSpace s;
  s.tmpl = tmpl;
  s.target = Target::kCpu;
  s.tunables = {
      {"MR", std::move(mr), vector_floats == 8 ? 6 : 14,
       "rows of W broadcast per k (columns of C)"},
      {"NR", std::move(nr), vector_floats == 8 ? 16 : 32,
       "rows of X per register tile, as vectors"},
      {"KC", {128, 256, 384, 512, 768, 1024}, 768, "K block: one transposed store per block"},
      {"MC",
       {24, 48, 72, 96, 120, 144, 168, 192, 240, 288, 336},
       168,
       "block of W's rows, whole MR panels"},
      {"NC", {96, 192, 384, 768, 1536, 3072}, 768, "block of X's rows, whole NR panels"},
      {"LOOP_ORDER", {0, 1}, 0, "0: X micro-panel outer (in L1); 1: W rows outer"},
      {"THREADS_M", {0, 1, 2, 4}, 0, "thread bands over W's rows (0: chosen per shape)"},
      x86_workers_tunable(),
      {"PREFETCH", {0, 4, 8, 16}, 8, "prefetch distance for X's panel and W's rows (0: none)"},
      {"PREFETCH_TILE", {0, 1}, 0, "1: prefetch the next tile's rows of W instead of this one's"},
      x86_shared_b_tunable("SHARE_X", "X"),
      {"UNROLL", {1, 2, 4, 8}, 4, "k-loop unroll"},
  };
  s.chains = {{"BM", {"NC"}}, {"BN", {"MC"}}};  // C's frame: X's rows are C's rows
  s.constraints = x86_blis_core_constraints(vector_floats, registers, "X vectors");
  s.constraints.push_back(x86_one_worker_has_no_thread_grid());
  s.constraints.push_back({"the next tile's rows are prefetched only with PREFETCH > 0",
                           [](const MicroKernel& mk, const SpaceContext&) {
                             return mk.get("PREFETCH_TILE") == 0 || mk.get("PREFETCH") > 0;
                           },
                           {"PREFETCH", "PREFETCH_TILE"}});
  for (Constraint& c : x86_shared_b_constraints("SHARE_X", "X"))
    s.constraints.push_back(std::move(c));
  // W must be K-contiguous ([N][K]) to be broadcast in place along K.
  s.supports = x86_b_rows_are_k_contiguous;
  s.seeds = std::move(seeds);
  return s;
}

}  // namespace

const TemplateSpace& x86_avx2_wbcast_f32_space() {
  // The seeds:
  // - the blocking tunes chose for BERT's fc1 and fc2 at M = 16, with the next tile's rows
  //   prefetched, which ran up to 10% faster there than without while DRAM was slow to answer
  //   and level with it otherwise (docs/results/cpu/README.md, W). The search aims its
  //   mutations at the instances that take the most time, so it would rarely refine the
  //   smallest ones into this by itself.
  // - the tile of oneDNN's AVX2 sgemm (24 rows of C, as three vectors, by 4 columns, B
  //   broadcast), which is this form's 4 x 24: four rows of W streamed, not six. On a Zen 3
  //   host (32 KiB of L1) it ran BERT's qkv, fc1 and fc2 from T = 16 up 4-7% faster than the
  //   6 x 16 tiles a 15-minute tune had settled on, timed together (AC), and a tune under its
  //   budget had not reached it from the 6 x 16 default. A tune seeded with it gave a pack
  //   about 1% faster over oneDNN there, within the runs' spread: a seed costs one kernel.
  //   It, and the default tile, also come with X shared by the workers (SHARE_X), which the
  //   default (0, what logs from before it ran) leaves out.
  static const TemplateSpace space = make_x86_wbcast_space(
      "x86_avx2_wbcast_f32", 8, 16, {8, 16, 24, 32}, {1, 2, 3, 4, 6, 8, 12, 14},
      {{{"MC", 192}, {"NC", 384}, {"THREADS_M", 4}, {"PREFETCH_TILE", 1}},
       {{"MR", 4}, {"NR", 24}, {"MC", 192}, {"NC", 384}, {"SHARE_X", 1}},
       {{"SHARE_X", 1}}});
  return space;
}

const TemplateSpace& x86_avx512_wbcast_f32_space() {
  static const TemplateSpace space = make_x86_wbcast_space(
      "x86_avx512_wbcast_f32", 16, 32, {16, 32, 48, 64}, {1, 2, 3, 4, 6, 8, 12, 14, 24, 28});
  return space;
}

}  // namespace dietcode
