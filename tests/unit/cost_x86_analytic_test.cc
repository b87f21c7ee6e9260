// The CPU target's analytic terms (cost/x86_analytic.cc): the load balance of the template's
// thread split, the padding of whole register tiles, and the packing each thread does beside
// its FMAs, which the BLIS form pays and the dot-product form does not.
#include <gtest/gtest.h>

#include "cost/analytic.h"
#include "cost/candidate.h"

namespace dietcode {
namespace {

KernelCandidate x86(const std::string& tmpl, std::map<std::string, int> params) {
  KernelCandidate c;
  c.target = Target::kCpu;
  c.mk = {tmpl, std::move(params)};
  c.cpu.threads = 2;
  c.cpu.gflops_per_thread_512 = 245;  // the 2-core AVX-512 guests of docs/results/cpu
  c.cpu.gflops_per_thread_256 = 125;
  c.cpu.mem_bandwidth_gbs = 20;
  return c;
}

AnalyticTerms terms(const KernelCandidate& c, int64_t m, int64_t n, int64_t k) {
  return analytic_terms(make_profile(c), GemmShape{1, m, n, k}, AnalyticParams{});
}

const std::map<std::string, int> kBlis = {{"MR", 12}, {"NR", 32}, {"KC", 256}, {"MC", 96},
                                          {"NC", 1 << 20}, {"PACK_A", 1}};

// 0.5 ns of packing an element, in FLOPs of one thread's 245 GFLOP/s.
constexpr double kPackFlopsPerElement = 0.5e-3 * 245e3;
// 0.8 ns of the W-broadcast form's transposed store of an element, likewise.
constexpr double kStoreFlopsPerElement = 0.8e-3 * 245e3;

TEST(CostX86Analytic, EvenSplitOfWholeTilesAtLargeM) {
  // M = 2048 rows on 2 threads, N = 2304 = 72 tiles of 32: the split is 1 x 2, even. Each
  // thread packs its 1152 columns of B once and all 2052 rows of A once (NC covers its
  // columns), beside 171 x 36 tiles of FMAs: about 8% of its time, near what the 83-88% of
  // peak measured at this shape leaves (docs/results/cpu).
  const AnalyticTerms t = terms(x86("x86_avx512_f32", kBlis), 2048, 2304, 768);
  const double fmas = 2.0 * 171 * 36 * 12 * 32 * 768;
  const double packing = (1152.0 + 2052) * 768 * kPackFlopsPerElement;
  EXPECT_NEAR(t.balance, fmas / (fmas + packing), 1e-9);
  EXPECT_GT(t.balance, 0.9);
  EXPECT_NEAR(t.f_pad, 2048.0 / 2052.0, 1e-12);  // 171 tiles of 12 rows cover 2052
  EXPECT_EQ(t.sms, 2);
}

// tune --constant-weights: the BLIS form reads B packed ahead, so only A's packing is left
// beside the FMAs; at M = 16 that is most of what set the kernel's balance.
TEST(CostX86Analytic, PrepackedWeightsLeaveOnlyAsPackingInTheBlisForm) {
  KernelCandidate packing = x86("x86_avx512_f32", kBlis), prepacked = packing;
  prepacked.weights_prepacked = true;
  const AnalyticTerms per_call = terms(packing, 16, 2304, 768);
  const AnalyticTerms constant = terms(prepacked, 16, 2304, 768);
  // Each thread: 2 x 36 tiles of 12 x 32 FMAs, 768 deep; it packs 24 rows of A, not B.
  const double fmas = 2.0 * 72 * 12 * 32 * 768;
  EXPECT_NEAR(constant.balance, fmas / (fmas + 24.0 * 768 * kPackFlopsPerElement), 1e-9);
  EXPECT_GT(constant.balance, per_call.balance + 0.1);
  EXPECT_EQ(constant.main_bytes, per_call.main_bytes);  // the panels still come from memory
}

TEST(CostX86Analytic, PackingWeighsOnTheBlisFormAtSmallMAndNotOnTheDotForm) {
  const AnalyticTerms blis = terms(x86("x86_avx512_f32", kBlis), 16, 2304, 768);
  const AnalyticTerms dot = terms(
      x86("x86_avx512_dot_f32", {{"MR", 4}, {"NR", 6}, {"KC", 768}, {"THREADS_M", 1}}), 16, 2304,
      768);
  // The dot form's balance is the split alone: 384 column tiles of 6 over two threads, 4 rows
  // of tiles each: even.
  EXPECT_DOUBLE_EQ(dot.balance, 1.0);
  // The BLIS form splits N (tm 1 x tn 2): each thread has 2 x 36 tiles of 12 x 32, so
  // 2 x 72 x 12 x 32 x 768 FLOPs of FMAs, and packs its 1152 columns of B and 24 rows of A,
  // 768 deep.
  const double fmas = 2.0 * 72 * 12 * 32 * 768;
  const double packing = (1152.0 + 24) * 768 * kPackFlopsPerElement;
  EXPECT_NEAR(blis.balance, fmas / (fmas + packing), 1e-9);
  EXPECT_LT(blis.balance, 0.3);  // packing B costs more than M = 16 rows of FMAs
  // At M = 2048 the same kernel hardly notices.
  EXPECT_GT(terms(x86("x86_avx512_f32", kBlis), 2048, 2304, 768).balance, 2 * blis.balance);
}

// The W-broadcast form computes C^T = W X^T: its tile is NR rows of C by MR columns, its
// THREADS_M bands C's columns, and it packs X (C's A) alone, once per thread.
TEST(CostX86Analytic, TheWBroadcastFormPacksXAloneInCsTransposedFrame) {
  const AnalyticTerms t = terms(
      x86("x86_avx512_wbcast_f32", {{"MR", 14}, {"NR", 32}, {"KC", 768}, {"MC", 168},
                                    {"NC", 768}, {"THREADS_M", 0}}),
      128, 2304, 768);
  // The split of C^T (2304 x 128) with W's 14-row tiles: 2 x 1, so each thread has 83 tiles of
  // 14 of W's rows (the busiest; 165 in all) by 4 of 32 rows of X, packs all 128 rows of X,
  // and stores each of its 83 x 4 tiles transposed once (K = 768 is one K block).
  const double fmas = 2.0 * 83 * 4 * 14 * 32 * 768;
  const double packing = 128.0 * 768 * kPackFlopsPerElement;
  const double storing = 83.0 * 4 * 14 * 32 * kStoreFlopsPerElement;
  EXPECT_NEAR(t.balance, 165.0 / (2 * 83) * fmas / (fmas + packing + storing), 1e-9);
  EXPECT_NEAR(t.f_pad, 2304.0 / (165 * 14), 1e-12);  // 2304 columns in tiles of 14; 128 rows in 32s
  // The BLIS form on the same shape packs its 1152 columns of W: more than M = 128 rows amortise.
  EXPECT_LT(terms(x86("x86_avx512_f32", kBlis), 128, 2304, 768).balance, t.balance);
}

// SHARE_X hands out blocks as threads free up, the last ones in pieces; the busiest thread's
// share is that schedule played out. BERT's proj at T = 48 (C^T 768 x 768, MC 168, NC 384):
// 10 blocks, 5 rows of W's blocks (four of 168, one of 96) by 2 of X's, in units of 96 of X's
// rows 672 or 384 each; the last two go out as four pieces of 168 and four of 96. Taken in
// turn by the thread free first, one thread ends with 3096 of the 6144 units; whole blocks
// alone, 3360.
TEST(CostX86Analytic, SharedXsBusiestThreadPlaysOutTheScheduleWithItsPieces) {
  const std::map<std::string, int> shared = {{"MR", 4},   {"NR", 24},  {"KC", 768},
                                             {"MC", 168}, {"NC", 384}, {"SHARE_X", 1}};
  const AnalyticTerms t = terms(x86("x86_avx2_wbcast_f32", shared), 768, 768, 768);
  EXPECT_NEAR(t.split_balance, 6144.0 / (2 * 3096), 1e-9);
  // One block of one panel of X (M = 24, N = 168): its pieces are on whole panels, so one
  // holds all of it and one thread does the work.
  EXPECT_NEAR(terms(x86("x86_avx2_wbcast_f32", shared), 24, 168, 768).split_balance, 0.5, 1e-9);
}

// SHARE_W in the BLIS form: the threads pack all of W once together and every block packs its
// rows of A once, so at M = 2048, N = 2304 each of 2 threads packs half of W (1152 of its 2304
// columns) and half of A's 2052 padded rows, where the 1 x 2 bands pack 1152 columns and all
// 2052 rows each. Blocks of 96 rows of A (22 of them) over all of N: the last two in pieces of
// 24 rows, which even out to within a piece.
TEST(CostX86Analytic, SharedWPacksEachOperandOnceAcrossTheThreads) {
  std::map<std::string, int> shared = kBlis;
  shared["SHARE_W"] = 1;
  const AnalyticTerms banded = terms(x86("x86_avx512_f32", kBlis), 2048, 2304, 768);
  const AnalyticTerms t = terms(x86("x86_avx512_f32", shared), 2048, 2304, 768);
  EXPECT_NEAR(banded.thread_packed_elements, (1152.0 + 2052) * 768, 1e-6);
  EXPECT_NEAR(t.thread_packed_elements, (2304.0 + 2052) * 768 / 2, 1e-6);
  EXPECT_GT(t.split_balance, 0.98);
  EXPECT_GT(t.balance, banded.balance);
}

// The last panel along the vector dimension runs an edge tile of whole vectors, not the whole
// tile: N for the BLIS form, C's M for the W-broadcast form. Along the other dimension, and in
// the dot-product form, the padding is still to whole tiles.
TEST(CostX86Analytic, EdgePanelsArePaddedToWholeVectorsOnly) {
  const std::map<std::string, int> blis = {{"MR", 6},  {"NR", 24},   {"KC", 256},
                                           {"MC", 72}, {"NC", 3072}, {"PACK_A", 1}};
  // N = 100: four panels of 24 and an edge of 4 columns, one vector of 8: 104 computed; M = 16
  // in tiles of 6 rows: 18.
  EXPECT_NEAR(terms(x86("x86_avx2_f32", blis), 16, 100, 768).f_pad, 16.0 * 100 / (18 * 104), 1e-12);
  // The W-broadcast form's vectors run along M: M = 128 is 5 panels of 24 and an edge of 8,
  // nothing padded (whole tiles: 144); N = 768 in whole tiles of 4 rows of W.
  const std::map<std::string, int> wbcast = {{"MR", 4},   {"NR", 24}, {"KC", 1024},
                                             {"MC", 192}, {"NC", 96}, {"THREADS_M", 1}};
  EXPECT_DOUBLE_EQ(terms(x86("x86_avx2_wbcast_f32", wbcast), 128, 768, 768).f_pad, 1.0);
  EXPECT_NEAR(terms(x86("x86_avx2_wbcast_f32", wbcast), 130, 766, 768).f_pad,
              130.0 * 766 / (136 * 768), 1e-12);
  // The dot-product form has no edge tiles: 100 columns in tiles of 6 are 102.
  EXPECT_NEAR(
      terms(x86("x86_avx2_dot_f32", {{"MR", 4}, {"NR", 6}, {"KC", 768}}), 16, 100, 768).f_pad,
      100.0 / 102, 1e-12);
}

// Each K block ends in a transposed store, and each NC block of X's rows streams W again.
TEST(CostX86Analytic, TheWBroadcastFormPaysPerKBlockAndPerBlockOfXsRows) {
  auto wbcast = [](int kc, int nc) {
    return x86("x86_avx512_wbcast_f32", {{"MR", 6}, {"NR", 64}, {"KC", kc}, {"MC", 168},
                                         {"NC", nc}, {"THREADS_M", 2}});
  };
  const AnalyticTerms one_block = terms(wbcast(1024, 3072), 2048, 2304, 768);
  const AnalyticTerms three_blocks = terms(wbcast(256, 3072), 2048, 2304, 768);
  EXPECT_LT(three_blocks.balance, one_block.balance);
  // 2 threads over W's rows, each with all 2048 rows of X: NC = 256 streams W 8 times.
  const AnalyticTerms eight_passes = terms(wbcast(1024, 256), 2048, 2304, 768);
  EXPECT_DOUBLE_EQ(eight_passes.main_bytes - one_block.main_bytes, 7.0 * 2304 * 768 * 4);
}

// On AVX2 tiles of at most 8 rows of W the K blocks after the first read C back through a
// register transpose, priced at a quarter of the general transposed store; wider tiles and
// AVX-512 keep the general store's price for every block.
TEST(CostX86Analytic, TheWBroadcastFormsLaterKBlocksCostLessThroughARegisterTranspose) {
  auto avx2 = [](int mr, int kc) {
    KernelCandidate c =
        x86("x86_avx2_wbcast_f32",
            {{"MR", mr}, {"NR", 16}, {"KC", kc}, {"MC", 96}, {"NC", 3072}, {"THREADS_M", 2}});
    return c;
  };
  // M = 2048 rows of X, N = 2304 rows of W on 2 threads: 1152 each, tiles of 16 x 6 (C's
  // frame), 128 x 192 per thread; K = 768 in 3 blocks of 256.
  const double tiles = 128.0 * 192, elements = tiles * 16 * 6;
  const double flops_per_ns = 125e3 * 1e-3;  // one thread's 125 GFLOP/s, in FLOP/ns
  const double fmas = 2.0 * elements * 768;
  const AnalyticTerms three_blocks = terms(avx2(6, 256), 2048, 2304, 768);
  EXPECT_NEAR(three_blocks.balance,
              fmas / (fmas + (2048.0 * 768 * 0.5 + elements * (0.8 + 2 * 0.2)) * flops_per_ns),
              1e-9);
  // Twelve rows of W take the general store after every block.
  const AnalyticTerms twelve_rows = terms(avx2(12, 256), 2048, 2304, 768);
  const AnalyticTerms one_block = terms(avx2(6, 768), 2048, 2304, 768);
  EXPECT_LT(three_blocks.balance, one_block.balance);
  EXPECT_GT(three_blocks.balance - twelve_rows.balance, 0.01);
}

TEST(CostX86Analytic, ReadingAInPlacePacksLess) {
  std::map<std::string, int> direct = kBlis;
  direct["PACK_A"] = 0;
  std::map<std::string, int> small_nc = kBlis;
  small_nc["NC"] = 256;  // A packed again for each of 5 column blocks of the thread's 1152
  const double packed_a = terms(x86("x86_avx512_f32", kBlis), 256, 2304, 768).balance;
  EXPECT_GT(terms(x86("x86_avx512_f32", direct), 256, 2304, 768).balance, packed_a);
  EXPECT_LT(terms(x86("x86_avx512_f32", small_nc), 256, 2304, 768).balance, packed_a);
}

TEST(CostX86Analytic, UnevenSplitsCostTheirBusiestThread) {
  // 33 rows (3 tiles of 12) x 32 columns (1 tile) on 2 threads: the split is 2 x 1, and one
  // thread gets 2 of the 3 tiles: 3 / (2 x 2) = 0.75 of an even split. It also packs all 32
  // columns of B (A is read in place), which its 24 rows of FMAs do not amortise.
  std::map<std::string, int> p = kBlis;
  p["PACK_A"] = 0;
  const AnalyticTerms t = terms(x86("x86_avx512_f32", p), 33, 32, 64);
  const double fmas = 2.0 * 2 * 12 * 32 * 64;
  const double packing = 32.0 * 64 * kPackFlopsPerElement;
  EXPECT_NEAR(t.balance, 0.75 * fmas / (fmas + packing), 1e-9);
}

// WORKERS = 1 runs on the caller alone: one thread's peak, no split, and none of the launch
// overhead, which on a CPU is mostly waking the pool.
TEST(CostX86Analytic, OneWorkerHasOneThreadsPeakAndNoLaunchOverhead) {
  std::map<std::string, int> one = kBlis;
  one["WORKERS"] = 1;
  const AnalyticTerms all = terms(x86("x86_avx512_f32", kBlis), 16, 64, 64);
  const AnalyticTerms alone = terms(x86("x86_avx512_f32", one), 16, 64, 64);
  EXPECT_EQ(all.sms, 2);
  EXPECT_EQ(alone.sms, 1);
  EXPECT_NEAR(alone.peak_flops_per_us, all.peak_flops_per_us / 2, 1e-6);
  EXPECT_GT(all.overhead_us, 0);
  EXPECT_EQ(alone.overhead_us, 0);
  // The fitted overhead moves the pooled kernel alone.
  AnalyticParams fitted;
  fitted.launch_overhead_us = 30;
  EXPECT_EQ(with_params(all, fitted).overhead_us, 30);
  EXPECT_EQ(with_params(alone, fitted).overhead_us, 0);
}

}  // namespace
}  // namespace dietcode
