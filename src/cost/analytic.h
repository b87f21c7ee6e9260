// The analytical, shape-dependent half of the micro-kernel cost model (METHOD.md §3):
//
//   latency = overhead + max(FLOPs / (f_MK * f_occ * f_pad), memory time) [+ split-K reduce]
//
// f_MK (the micro-kernel's own full-GPU throughput) is learned elsewhere (cost_model.h); this
// file computes everything else from the GPU's limits and the launch plan, with pure
// functions:
//   - resident blocks per SM, from threads, registers (allocated per warp in 256-register
//     units, per SM sub-partition) and shared memory (128-byte units, plus the per-block
//     reserve the driver keeps on sm_80+), as the CUDA occupancy calculator does;
//   - f_occ, the fraction of the GPU's throughput a grid of G blocks gets: full waves run at
//     full speed; in the last, partial wave an SM holds b < B of its B resident blocks and runs
//     them at (b/B)^gamma of its full throughput. gamma = 1 is DietCode's G / roundup(G,
//     slots); gamma < 1 says a lone block gets more than 1/B of an SM, which matters for small
//     grids; a grid smaller than the SM count never uses more than G SMs;
//   - f_pad, the useful fraction of the computed tiles, with M, N padded to the block tile and
//     K padded to BK within each of the split_k slices;
//   - the memory-bound time: DRAM bytes (each operand once, as a GEMM's operands stay in L2
//     between the tiles that share them, plus the split-K workspace) over the bandwidth;
//   - a launch overhead per kernel, the floor under every latency.
#pragma once

#include <cstdint>

#include "codegen/generated_kernel.h"
#include "cost/candidate.h"
#include "space/gpu_spec.h"
#include "workload/workload.h"

namespace dietcode {

// Knobs of the analytic terms. CostModel fits two of them to measurements (analytic_fit.h):
// the launch overhead, and the target's shape knob: gamma on a GPU, the packing cost on a CPU.
struct AnalyticParams {
  // Throughput of an SM holding b of its B resident blocks is (b/B)^gamma of a full SM.
  double underfilled_sm_gamma = 0.5;
  // What packing one element costs a CPU thread (x86_analytic.cc): reading it, often from
  // memory for the first time, a share of a transpose's shuffles, a store into L1/L2. It
  // depends on the CPU's memory system as much as on its core, so it is fitted per machine;
  // 0.5 ns is where the fit starts.
  double pack_ns_per_element = 0.5;
  // Per-kernel cost of a launch as seen by back-to-back timing on recent GPUs: 2-3 us.
  double launch_overhead_us = 2.0;
  // Fraction of the nominal DRAM bandwidth streaming kernels reach (~0.9 on HBM parts).
  double bandwidth_efficiency = 0.9;
};

// Why a kernel has the resident blocks it has; blocks_per_sm == 0 means it cannot launch.
struct OccupancyLimits {
  int by_threads = 0;
  int by_registers = 0;
  int by_shared_memory = 0;
  int by_hardware = 0;  // the GPU's max resident blocks per SM
  int blocks_per_sm = 0;
  int warps_per_block = 0;
  double occupancy = 0;  // resident warps / max warps per SM
};

OccupancyLimits occupancy_limits(const GpuSpec& gpu, int threads, int registers_per_thread,
                                 int shared_memory_bytes);

struct GridDims {
  int64_t x = 0, y = 0, z = 0;
  int64_t blocks() const { return x * y * z; }
};

// The main kernel's grid: (ceil(N / tile_n), ceil(ceil(M / tile_m) / m_tiles_per_block),
// batch * split_k), without the launch's clamp of y.
GridDims main_grid(const LaunchPlan& plan, const GemmShape& shape);

// f_occ for a grid of `blocks` on `sms` SMs holding `blocks_per_sm` each. 0 when
// blocks_per_sm is 0 (the kernel cannot run), 1 for an empty grid.
double wave_occupancy_factor(int64_t blocks, int blocks_per_sm, int sms, double gamma);

// The K a split-K kernel computes in all: split_k slices of ceil(ceil(K/bk)/split_k)*bk.
int64_t padded_k(int64_t k, int bk, int split_k);

// f_pad: M*N*K / (padded M * padded N * padded K).
double padding_factor(const LaunchPlan& plan, int bk, const GemmShape& shape);

// What the shape-dependent terms need from a candidate, computed once per candidate so the
// search can score it on hundreds of shapes cheaply.
struct KernelProfile {
  int tile_m = 1, tile_n = 1, bk = 1, split_k = 1;
  int m_tiles_per_block = 1;  // M tiles a block walks in turn (dense_wgmma's M_TILES)
  bool has_reduce = false;
  int element_bytes = 4;
  int sms = 1;
  OccupancyLimits occupancy;
  double bandwidth_bytes_per_us = 1;  // nominal DRAM bandwidth
  double peak_flops_per_us = 1;
  // The CPU target's (x86_analytic.cc): tile_m / tile_n are the register tile MR x NR, sms the
  // threads, and how the threads split the output follows the template's own rule.
  Target target = Target::kCuda;
  int threads_m = 0;  // the THREADS_M tunable: 0 lets the kernel pick the split
  int nc = 1;         // the NC tunable: B's column block, which A is packed again for
  bool packs_a = false, packs_b = false;  // the BLIS form packs B, and A unless PACK_A = 0
  // The floats per vector along the tile's vector dimension (N, or C's M for the W-broadcast
  // form): an edge panel narrower than the tile computes whole vectors of it, not the whole
  // tile (templates/x86/gemm_x86.h, EdgeParams). 0: tiles are whole (the dot-product form).
  int edge_lanes = 0;
  // The W-broadcast form computes C^T: tile_m / tile_n are given in C's frame (NR x MR),
  // threads_m bands C's columns, nc blocks C's rows (X's), bk is KC, and each K block ends in
  // a transposed store of the tile: the first block's writes C, each later one reads C back.
  bool transposed = false;
  // SHARE_B (SHARE_W in the BLIS form's space, SHARE_X in the W-broadcast form's): the
  // threads pack the kernel's B once together and take blocks of mc x nc (of C^T for the
  // W-broadcast form) as they free up: no bands, nothing packed twice.
  bool shares_b = false;
  int mc = 1;  // the MC tunable, with shares_b
  double transposed_store_ns_per_element = 0;
  double transposed_readback_ns_per_element = 0;
};

// Dispatches on c.target.
KernelProfile make_profile(const KernelCandidate& c);
// The CPU target's parts (x86_analytic.cc).
KernelProfile make_x86_profile(const KernelCandidate& c);

struct AnalyticTerms {
  double flops = 0;  // useful FLOPs of the shape
  int64_t grid_blocks = 0;
  int blocks_per_sm = 0;
  int sms = 1;
  Target target = Target::kCuda;
  // The busiest worker's share of the work against a perfectly even split, times the share of
  // that worker's time its FMAs take beside packing and storing (the CPU's load balance over
  // its threads); 1 on a GPU, whose waves f_occ models. Multiplies f_occ. with_params sets it
  // from the fields below and the params' packing cost.
  double balance = 1;
  // The CPU's: the busiest thread's share of the register tiles. A GPU's: the share of its
  // blocks' M-tile walks that have a tile to compute (below 1 when M_TILES leaves the last row
  // of the grid short).
  double split_balance = 1;
  double thread_fma_flops = 0;     // that thread's FMAs (CPU; 0: nothing beside them)
  double thread_packed_elements = 0;  // the elements it packs
  double thread_side_flops = 0;    // its other side work (transposed stores), in FLOPs
  double thread_flops_per_ns = 0;  // one thread's peak, to price packing in FLOPs
  double f_occ = 0;
  double f_pad = 0;
  double main_bytes = 0;    // DRAM bytes of the main kernel
  double reduce_bytes = 0;  // DRAM bytes of the split-K reduction; 0 when none
  bool has_reduce = false;
  double bandwidth_bytes_per_us = 1;  // nominal DRAM bandwidth
  double bandwidth_efficiency = 1;    // the achievable fraction of it
  double overhead_us = 0;             // launch overhead, per kernel
  // The share of the fitted launch overhead this kernel pays: 1, but 0 for a CPU kernel that
  // runs on the caller alone (WORKERS = 1), since a CPU launch's overhead is mostly waking the
  // pool's threads, which such a kernel never does.
  double overhead_share = 1;
  double peak_flops_per_us = 1;       // of the candidate's dtype, to normalise f_MK

  double memory_us() const { return main_bytes / (bandwidth_bytes_per_us * bandwidth_efficiency); }
  // The split-K reduction kernel, its own launch included.
  double reduce_us() const {
    return has_reduce ? overhead_us + reduce_bytes / (bandwidth_bytes_per_us * bandwidth_efficiency)
                      : 0.0;
  }
};

// Dispatches on profile.target.
AnalyticTerms analytic_terms(const KernelProfile& profile, const GemmShape& shape,
                             const AnalyticParams& params);
AnalyticTerms x86_analytic_terms(const KernelProfile& profile, const GemmShape& shape,
                                 const AnalyticParams& params);

// The same terms under other params (gamma, overhead, bandwidth efficiency), for fitting
// those to measurements without the candidate at hand.
AnalyticTerms with_params(const AnalyticTerms& terms, const AnalyticParams& params);

// DRAM bytes the main kernel and the split-K reduction move for a shape.
double main_kernel_bytes(const KernelProfile& profile, const GemmShape& shape);
double reduce_kernel_bytes(const KernelProfile& profile, const GemmShape& shape);

// Latency the model predicts for a kernel of full-GPU throughput f_mk (FLOP/us); +infinity
// when the kernel cannot launch or f_mk is not positive.
double model_latency_us(const AnalyticTerms& terms, double f_mk_flops_per_us);

// The time a measured latency leaves for the compute term once the overheads and the
// reduction are taken off, floored at kMinComputeShare of the main kernel's time so an
// overhead estimate above a measurement cannot make it zero or negative.
double compute_time_us(const AnalyticTerms& terms, double measured_us);
inline constexpr double kMinComputeShare = 0.05;

// The inverse of model_latency_us for a compute-bound measurement: the f_MK (FLOP/us) the
// measured latency implies, FLOPs / (f_occ * f_pad) / compute time — DietCode's label.
double implied_throughput(const AnalyticTerms& terms, double measured_us);

}  // namespace dietcode
