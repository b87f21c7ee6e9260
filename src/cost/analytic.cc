#include "cost/analytic.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dietcode {

namespace {

// Register file facts of every architecture the space targets (sm_70 and newer): registers are
// handed to a warp in units of 256, and each of the SM's 4 sub-partitions has its own quarter
// of the register file, so warps are packed per sub-partition.
constexpr int kRegisterAllocationUnit = 256;
constexpr int kSubPartitionsPerSm = 4;
// Since sm_80 the driver keeps up to 1 KB of shared memory per block for itself; a spec's
// per-SM size minus its per-block opt-in limit is that reserve (228 - 227 KB on H100).
constexpr int kMaxReservedSmemPerBlock = 1024;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

GridDims grid_of(int tile_m, int tile_n, int split_k, int m_tiles_per_block,
                 const GemmShape& shape) {
  GridDims g;
  g.x = ceil_div(shape.N, std::max(1, tile_n));
  g.y = ceil_div(ceil_div(shape.M, std::max(1, tile_m)), std::max(1, m_tiles_per_block));
  g.z = shape.batch * std::max(1, split_k);
  return g;
}

double padding_of(int tile_m, int tile_n, int bk, int split_k, const GemmShape& shape) {
  double padded = double(round_up(shape.M, std::max(1, tile_m))) *
                  double(round_up(shape.N, std::max(1, tile_n))) *
                  double(padded_k(shape.K, bk, split_k));
  return double(shape.M) * double(shape.N) * double(shape.K) / padded;
}

int registers_limit(const GpuSpec& gpu, int warps_per_block, int registers) {
  if (registers <= 0) return gpu.max_blocks_per_sm;  // unknown: not the binding limit
  if (registers > gpu.max_regs_per_thread) return 0;
  int64_t per_warp = round_up(int64_t(registers) * gpu.warp_size, kRegisterAllocationUnit);
  // The launch check assumes every sub-partition gets the same number of the block's warps.
  int64_t checked = per_warp * round_up(warps_per_block, kSubPartitionsPerSm);
  if (checked > gpu.regs_per_block || per_warp * warps_per_block > gpu.regs_per_block) return 0;
  int64_t warps_per_sub_partition = (gpu.regs_per_sm / kSubPartitionsPerSm) / per_warp;
  return int(warps_per_sub_partition * kSubPartitionsPerSm / warps_per_block);
}

int shared_memory_limit(const GpuSpec& gpu, int smem_bytes) {
  bool ampere_or_newer = gpu.cc_major >= 8;
  int granularity = ampere_or_newer ? 128 : 256;
  int reserved = ampere_or_newer ? std::clamp(gpu.smem_per_sm - gpu.smem_per_block_optin, 0,
                                              kMaxReservedSmemPerBlock)
                                 : 0;
  int64_t allocated = round_up(int64_t(std::max(0, smem_bytes)) + reserved, granularity);
  int64_t per_block_limit =
      int64_t(std::max(gpu.smem_per_block, gpu.smem_per_block_optin)) + reserved;
  if (allocated > per_block_limit) return 0;
  if (allocated == 0) return gpu.max_blocks_per_sm;
  return int(gpu.smem_per_sm / allocated);
}

}  // namespace

OccupancyLimits occupancy_limits(const GpuSpec& gpu, int threads, int registers_per_thread,
                                 int shared_memory_bytes) {
  OccupancyLimits o;
  o.by_hardware = gpu.max_blocks_per_sm;
  if (threads <= 0 || threads > gpu.max_threads_per_block || gpu.warp_size <= 0) return o;
  o.warps_per_block = int(ceil_div(threads, gpu.warp_size));
  int max_warps = gpu.max_threads_per_sm / gpu.warp_size;
  o.by_threads = max_warps / o.warps_per_block;
  o.by_registers = registers_limit(gpu, o.warps_per_block, registers_per_thread);
  o.by_shared_memory = shared_memory_limit(gpu, shared_memory_bytes);
  o.blocks_per_sm = std::min({o.by_threads, o.by_registers, o.by_shared_memory, o.by_hardware});
  o.occupancy = max_warps > 0 ? double(o.blocks_per_sm * o.warps_per_block) / max_warps : 0;
  return o;
}

GridDims main_grid(const LaunchPlan& plan, const GemmShape& shape) {
  return grid_of(plan.tile_m, plan.tile_n, plan.split_k, plan.m_tiles_per_block, shape);
}

double wave_occupancy_factor(int64_t blocks, int blocks_per_sm, int sms, double gamma) {
  if (blocks_per_sm <= 0 || sms <= 0) return 0;
  if (blocks <= 0) return 1;
  int64_t slots = int64_t(sms) * blocks_per_sm;
  int64_t full_waves = blocks / slots;
  int64_t remainder = blocks % slots;
  if (remainder == 0) return 1;
  // The busiest SM of the last wave holds ceil(remainder / sms) blocks; at (b/B)^gamma of full
  // throughput it needs (b/B)^(1 - gamma) of a full wave's time.
  double share = double(ceil_div(remainder, sms)) / blocks_per_sm;
  double last_wave = std::pow(share, 1.0 - gamma);
  return (double(blocks) / double(slots)) / (double(full_waves) + last_wave);
}

int64_t padded_k(int64_t k, int bk, int split_k) {
  bk = std::max(1, bk);
  split_k = std::max(1, split_k);
  int64_t k_tiles_per_slice = ceil_div(ceil_div(k, bk), split_k);
  return int64_t(split_k) * k_tiles_per_slice * bk;
}

double padding_factor(const LaunchPlan& plan, int bk, const GemmShape& shape) {
  return padding_of(plan.tile_m, plan.tile_n, bk, plan.split_k, shape);
}

KernelProfile make_profile(const KernelCandidate& c) {
  if (c.target == Target::kCpu) return make_x86_profile(c);
  KernelProfile p;
  p.tile_m = std::max(1, c.plan.tile_m);
  p.tile_n = std::max(1, c.plan.tile_n);
  p.bk = k_tile(c);
  p.split_k = std::max(1, c.plan.split_k);
  p.m_tiles_per_block = std::max(1, c.plan.m_tiles_per_block);
  p.has_reduce = !c.plan.reduce_entry.empty();
  p.element_bytes = element_bytes(c.dtype);
  p.sms = std::max(1, c.gpu.sms);
  p.occupancy =
      occupancy_limits(c.gpu, c.plan.threads, registers_per_thread(c), shared_memory_bytes(c));
  p.bandwidth_bytes_per_us = c.gpu.mem_bandwidth_gbs * 1e3;  // 1 GB/s = 1e3 B/us
  p.peak_flops_per_us = peak_flops_per_us(c.gpu, c.dtype);
  return p;
}

double main_kernel_bytes(const KernelProfile& p, const GemmShape& s) {
  double batch = double(s.batch), m = double(s.M), n = double(s.N), k = double(s.K);
  double operands = batch * (m * k + n * k) * p.element_bytes;
  // Split-K slices write fp32 partial sums to the workspace (or add them into C).
  double output = p.split_k > 1 ? batch * m * n * p.split_k * (p.has_reduce ? 4 : p.element_bytes)
                                : batch * m * n * p.element_bytes;
  return operands + output;
}

double reduce_kernel_bytes(const KernelProfile& p, const GemmShape& s) {
  if (!p.has_reduce) return 0;
  double outputs = double(s.batch) * double(s.M) * double(s.N);
  return outputs * p.split_k * 4 + outputs * p.element_bytes;
}

AnalyticTerms analytic_terms(const KernelProfile& p, const GemmShape& shape,
                             const AnalyticParams& params) {
  if (p.target == Target::kCpu) return x86_analytic_terms(p, shape, params);
  AnalyticTerms t;
  t.flops = shape.flops();
  const GridDims grid = grid_of(p.tile_m, p.tile_n, p.split_k, p.m_tiles_per_block, shape);
  t.grid_blocks = grid.blocks();
  // Blocks walk M tiles grid.y apart, so the longest walk is ceil(M tiles / grid.y) and the
  // grid runs as long as it: blocks with a shorter walk leave that share of their slots idle.
  const int64_t m_tiles = ceil_div(shape.M, p.tile_m);
  t.split_balance = double(m_tiles) / double(grid.y * ceil_div(m_tiles, grid.y));
  t.blocks_per_sm = p.occupancy.blocks_per_sm;
  t.sms = p.sms;
  t.f_pad = padding_of(p.tile_m, p.tile_n, p.bk, p.split_k, shape);
  t.main_bytes = main_kernel_bytes(p, shape);
  t.reduce_bytes = reduce_kernel_bytes(p, shape);
  t.has_reduce = p.has_reduce;
  t.bandwidth_bytes_per_us = p.bandwidth_bytes_per_us;
  t.peak_flops_per_us = p.peak_flops_per_us;
  return with_params(t, params);
}

AnalyticTerms with_params(const AnalyticTerms& terms, const AnalyticParams& params) {
  AnalyticTerms t = terms;
  t.balance = t.split_balance;
  if (t.thread_fma_flops > 0) {
    const double side = t.thread_packed_elements * params.pack_ns_per_element *
                            t.thread_flops_per_ns +
                        t.thread_side_flops;
    t.balance *= t.thread_fma_flops / (t.thread_fma_flops + side);
  }
  t.f_occ =
      wave_occupancy_factor(t.grid_blocks, t.blocks_per_sm, t.sms, params.underfilled_sm_gamma) *
      t.balance;
  t.overhead_us = params.launch_overhead_us * t.overhead_share;
  t.bandwidth_efficiency = params.bandwidth_efficiency;
  return t;
}

double model_latency_us(const AnalyticTerms& t, double f_mk_flops_per_us) {
  double throughput = f_mk_flops_per_us * t.f_occ * t.f_pad;
  if (!(throughput > 0)) return std::numeric_limits<double>::infinity();
  double compute_us = t.flops / throughput;
  return t.overhead_us + std::max(compute_us, t.memory_us()) + t.reduce_us();
}

double compute_time_us(const AnalyticTerms& t, double measured_us) {
  double main_us = std::max(measured_us - t.reduce_us(), kMinComputeShare * measured_us);
  return std::max(main_us - t.overhead_us, kMinComputeShare * main_us);
}

double implied_throughput(const AnalyticTerms& t, double measured_us) {
  double useful = t.f_occ * t.f_pad;
  double compute_us = compute_time_us(t, measured_us);
  if (!(useful > 0) || !(compute_us > 0)) return 0;
  return t.flops / useful / compute_us;
}

}  // namespace dietcode
