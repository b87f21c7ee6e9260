// The CPU target's analytic terms, in the slots the GPU's fill (analytic.h), so the learned
// f_MK, the fitted overhead and the search stay target-blind:
//   f_pad    the useful share of the MR x NR register tiles over the output (panels are
//            zero-padded to whole tiles, but for the last panel along the vector dimension,
//            which computes whole vectors only; K is never padded);
//   balance  the load balance over the threads: the kernel cuts C into tm x tn private regions
//            of whole register tiles (or hands out batch elements when there are at least as
//            many as threads), and the busiest thread sets the time. The split is the
//            template's own code (templates/x86/thread_split_x86.h: split_threads), included
//            here. That thread also packs:
//            all of its columns of B once (the BLIS form) and its rows of A once per NC block
//            (unless PACK_A = 0), work that does not shrink with M as its FMAs do. Its share of
//            the thread's time, at the fitted cost of packing an element
//            (AnalyticParams::pack_ns_per_element, analytic_fit.h), scales balance down
//            (with_params), so one learned f_MK fits a BLIS kernel at
//            M = 16, where packing B costs about as much as the FMAs, and at M = 2048, where it
//            is noise; the dot-product form packs nothing, and the W-broadcast form, which
//            computes C^T with its own split of it, packs only X (C's A), once per thread;
//            With SHARE_B (SHARE_W of the BLIS form, SHARE_X of the W-broadcast form) there
//            are no bands: the threads pack B together, once, and take blocks of MC x NC as
//            they free up, the last ones in pieces; the busiest thread's share of them is
//            that schedule played out, and it packs its share of B (and of A's blocks);
//   memory   the operands from memory once, plus what the split makes the threads pack again
//            (every row band packs all of its columns of B, every column band its rows of A),
//            over the host's streaming bandwidth;
//   peak     the threads' measured FMA peak for the template's vector width.
#include <algorithm>
#include <functional>
#include <queue>
#include <tuple>
#include <utility>

#include "cost/analytic.h"
#include "x86/thread_split_x86.h"
#include "space/templates.h"
#include "space/x86_space_rules.h"

namespace dietcode {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The kernels' own split (tm row bands x tn column bands), as a pair.
std::pair<int, int> split_threads(int threads, int threads_m, int64_t m, int64_t n, int64_t k,
                                  int mr, int nr, int nc) {
  int tm = 1, tn = 1;
  dc_x86::split_threads(threads, threads_m, long(m), long(n), long(k), mr, nr, nc, &tm, &tn);
  return {tm, tn};
}

// The share of SHARE_X's work (thread_split_x86.h: shared_block_grid) that the busiest of
// `threads` equal threads does when each takes the next task as it frees up: the kernel's
// own schedule, played with each task's area of C as its time. Past 64 tasks a thread, the
// last ones are too small to matter.
double shared_busiest_share(const dc_x86::SharedBlockGrid& g, int threads) {
  if (g.tasks <= 1 || threads <= 1) return 1.0;
  if (g.tasks > 64L * threads) return 1.0 / threads;
  std::priority_queue<double, std::vector<double>, std::greater<double>> free_at;
  for (int i = 0; i < threads; ++i) free_at.push(0.0);
  double busiest = 0, all = 0;
  for (long t = 0; t < g.tasks; ++t) {
    long m0, m1, n0, n1;
    dc_x86::shared_block(g, t, &m0, &m1, &n0, &n1);
    const double area = double(m1 - m0) * double(n1 - n0);
    const double done = free_at.top() + area;
    free_at.pop();
    free_at.push(done);
    busiest = std::max(busiest, done);
    all += area;
  }
  return all > 0 ? busiest / all : 1.0;
}

int vector_lanes(const std::string& tmpl) {
  return tmpl.find("avx512") != std::string::npos ? 16 : 8;
}

// The extent of whole tiles of `tile` over `extent`, the last one narrowed to whole vectors of
// `lanes` floats when lanes > 0 (an edge tile) and to the whole tile otherwise.
int64_t computed_extent(int64_t extent, int tile, int lanes) {
  const int64_t whole = extent / tile * tile, rest = extent - whole;
  if (rest == 0) return whole;
  return whole + (lanes > 0 ? ceil_div(rest, lanes) * lanes : tile);
}

// The W-broadcast form's transposed store of one tile element at the end of a K block: a
// vector store into the stack buffer, a scalar copy out to C, and after the first block a
// scalar read of C back. Chosen by replaying the Zen 4 log of docs/results/cpu (H) through
// the model, 20 held-out splits per op: against no store term, 0.8 ns raised the Spearman
// over every template from 0.50 / 0.49 / 0.73 / 0.69 to about 0.58 / 0.57 / 0.75 / 0.72
// (qkv / proj / fc1 / fc2); 0.4 to 1.6 scored alike. In that log, qkv's W-broadcast kernels
// with KC = 256 (three more stores of each element) ran 15-17% slower at T = 128 than the
// best ones with KC = 1024.
constexpr double kTransposedStoreNsPerElement = 0.8;
// The K blocks after the first read C back, add and write it again. On AVX2 tiles of at most
// 8 rows of W that goes through an 8x8 register transpose (register_tile_x86.h,
// store_transposed_8); one core of the Zen 5 guest at M = 2048, N = 3072, K = 768 ran K blocks
// of 384 and 256 within 1-4% of one block of 768 (5-12% behind before), about 0.2 ns an
// element a block (docs/results/cpu/README.md, Z). Other tiles take the general store again.
constexpr double kRegisterTransposeReadbackNsPerElement = 0.2;

}  // namespace

KernelProfile make_x86_profile(const KernelCandidate& c) {
  KernelProfile p;
  p.target = Target::kCpu;
  const X86Form form = x86_form(c.mk.tmpl);
  const int mr = std::max(1, c.mk.get_or("MR", 1)), nr = std::max(1, c.mk.get_or("NR", 1));
  p.threads_m = c.mk.get_or("THREADS_M", 0);
  if (form == X86Form::kWbcast) {
    // C^T = W X^T: the tile and the thread split are C^T's, W (C's B) is read in place, and
    // X (C's A) is packed once per thread, since its block NC spans every row it owns.
    p.transposed = true;
    p.tile_m = nr;
    p.tile_n = mr;
    p.nc = std::max(1, c.mk.get_or("NC", 1 << 30));
    p.bk = std::max(1, c.mk.get_or("KC", 1 << 30));
    p.packs_b = false;
    p.packs_a = true;
    p.shares_b = c.mk.get_or("SHARE_X", 0) != 0;
    p.mc = std::max(1, c.mk.get_or("MC", 1));
    p.edge_lanes = vector_lanes(c.mk.tmpl);
    p.transposed_store_ns_per_element = kTransposedStoreNsPerElement;
    p.transposed_readback_ns_per_element = vector_lanes(c.mk.tmpl) == 8 && mr >= 2 && mr <= 8
                                               ? kRegisterTransposeReadbackNsPerElement
                                               : kTransposedStoreNsPerElement;
  } else {
    p.tile_m = mr;
    p.tile_n = nr;
    // The dot-product form packs nothing: no NC, and no repacking in the thread split.
    p.nc = std::max(1, c.mk.get_or("NC", 1 << 30));
    const bool dot = form == X86Form::kDot;
    p.packs_b = !dot && !c.weights_prepacked;  // constant weights come packed
    p.packs_a = !dot && c.mk.get_or("PACK_A", 1) != 0;
    p.shares_b = !dot && c.mk.get_or("SHARE_W", 0) != 0;
    p.mc = std::max(1, c.mk.get_or("MC", 1));
    p.edge_lanes = dot ? 0 : vector_lanes(c.mk.tmpl);
  }
  p.element_bytes = element_bytes(c.dtype);
  p.sms = x86_kernel_workers(c.mk, c.cpu.threads);  // WORKERS = 1: the caller alone
  p.occupancy.blocks_per_sm = 1;  // one region per thread at a time
  p.occupancy.occupancy = 1;
  p.bandwidth_bytes_per_us = c.cpu.mem_bandwidth_gbs * 1e3;  // 1 GB/s = 1e3 B/us
  const int lanes = vector_lanes(c.mk.tmpl);
  double per_thread = lanes == 16 ? c.cpu.gflops_per_thread_512 : c.cpu.gflops_per_thread_256;
  // Unmeasured: two FMA pipes x lanes x 2 FLOPs at 3 GHz.
  if (!(per_thread > 0)) per_thread = 2.0 * lanes * 2.0 * 3.0;
  p.peak_flops_per_us = per_thread * p.sms * 1e3;  // 1 GFLOP/s = 1e3 FLOP/us
  return p;
}

AnalyticTerms x86_analytic_terms(const KernelProfile& p, const GemmShape& shape,
                                 const AnalyticParams& params) {
  AnalyticTerms t;
  t.flops = shape.flops();
  const int threads = std::max(1, p.sms);
  const int64_t m_tiles = ceil_div(shape.M, p.tile_m), n_tiles = ceil_div(shape.N, p.tile_n);
  const double all_tiles = double(shape.batch) * double(m_tiles) * double(n_tiles);
  double busiest_tiles = 0;  // register tiles of the busiest thread
  int tm = 1, tn = 1;
  // The busiest thread's batch elements, and its region's tile rows and columns in each.
  double own_batches = double(shape.batch);
  int64_t own_m_tiles = m_tiles, own_n_tiles = n_tiles;
  // SHARE_B's blocks, handed out as threads free up, the last ones in pieces along C's rows
  // (thread_split_x86.h); the busiest thread's share of them. The W-broadcast form's blocks
  // are C^T's: mc of C's columns (W's rows) by nc of its rows (X's).
  const bool shared = p.shares_b && threads > 1 && shape.batch < threads;
  double shared_share = 1;
  if (shape.batch >= threads) {
    own_batches = double(ceil_div(shape.batch, threads));
  } else if (shared) {
    shared_share = shared_busiest_share(
        p.transposed ? dc_x86::shared_block_grid(long(shape.N), long(shape.M), p.mc, p.nc,
                                                 threads, p.tile_m, /*split_rows=*/false)
                     : dc_x86::shared_block_grid(long(shape.M), long(shape.N), p.mc, p.nc,
                                                 threads, p.tile_m, /*split_rows=*/true),
        threads);
  } else {
    if (p.transposed)  // the kernel splits C^T: its row bands are C's column bands
      std::tie(tn, tm) = split_threads(threads, p.threads_m, shape.N, shape.M, shape.K, p.tile_n,
                                       p.tile_m, p.nc);
    else
      std::tie(tm, tn) = split_threads(threads, p.threads_m, shape.M, shape.N, shape.K, p.tile_m,
                                       p.tile_n, p.nc);
    own_m_tiles = ceil_div(m_tiles, tm);
    own_n_tiles = ceil_div(n_tiles, tn);
  }
  busiest_tiles = own_batches * double(own_m_tiles) * double(own_n_tiles) * shared_share;
  t.target = Target::kCpu;
  t.split_balance = busiest_tiles > 0 ? all_tiles / (double(threads) * busiest_tiles) : 1;
  const double own_rows = double(own_m_tiles * p.tile_m), own_cols = double(own_n_tiles * p.tile_n);
  if (busiest_tiles > 0 && (p.packs_a || p.packs_b || p.transposed)) {
    const double k = double(shape.K);
    double packed = 0;  // elements
    // With SHARE_B the threads pack all of B together (W in the BLIS form), each its share.
    if (p.packs_b) packed += shared ? own_cols * k / threads : own_cols * k;
    // The BLIS form packs its rows of A again for every NC block of its columns (with
    // SHARE_B every block its MC rows: all of A once per NC block, shared by the threads);
    // the W-broadcast form's NC blocks its rows of X, each packed once, or with SHARE_X once
    // by all threads together.
    const double a_passes =
        p.transposed ? 1.0 : double(ceil_div(int64_t(own_cols), std::max(1, p.nc)));
    if (p.packs_a) packed += shared ? own_rows * k * a_passes / threads : own_rows * k * a_passes;
    packed *= own_batches;
    // The W-broadcast form's transposed stores: every tile element once per K block, the
    // first block's a plain write, the later ones a read back (in ns of one thread).
    double store_ns = 0;
    if (p.transposed) {
      const double later_blocks = double(std::max<int64_t>(1, ceil_div(shape.K, p.bk)) - 1);
      store_ns =
          busiest_tiles * p.tile_m * p.tile_n *
          (p.transposed_store_ns_per_element + later_blocks * p.transposed_readback_ns_per_element);
    }
    // The side work in FLOPs of one thread's peak (FLOP/us, and ns -> us); with_params prices
    // the packing with the params' (fitted) cost per element.
    t.thread_flops_per_ns = 1e-3 * p.peak_flops_per_us / threads;
    t.thread_fma_flops = 2.0 * busiest_tiles * p.tile_m * p.tile_n * k;
    t.thread_packed_elements = packed;
    t.thread_side_flops = store_ns * t.thread_flops_per_ns;
  }
  // The vector dimension is C's N, or its M for the W-broadcast form (C^T's N).
  const int m_lanes = p.transposed ? p.edge_lanes : 0, n_lanes = p.transposed ? 0 : p.edge_lanes;
  t.f_pad = double(shape.M) * double(shape.N) /
            (double(computed_extent(shape.M, p.tile_m, m_lanes)) *
             double(computed_extent(shape.N, p.tile_n, n_lanes)));
  t.overhead_share = threads > 1 ? 1.0 : 0.0;  // one worker wakes no pool thread
  t.grid_blocks = threads;
  t.blocks_per_sm = 1;
  t.sms = threads;
  const double batch = double(shape.batch), m = double(shape.M), n = double(shape.N),
               k = double(shape.K);
  // The W-broadcast form streams its rows of W once per NC block of its rows of X (with
  // SHARE_X, all of W once per NC block of all of X's rows). Shared, the BLIS form reads each
  // operand once: tm = tn = 1.
  const double w_passes =
      !p.transposed ? 1.0
      : shared      ? double(ceil_div(shape.M, std::max(1, p.nc)))
                    : double(ceil_div(int64_t(own_rows), std::max(1, p.nc)));
  t.main_bytes = batch * (m * k * tn + n * k * tm * w_passes + m * n) * p.element_bytes;
  t.bandwidth_bytes_per_us = p.bandwidth_bytes_per_us;
  t.peak_flops_per_us = p.peak_flops_per_us;
  return with_params(t, params);
}

}  // namespace dietcode
