// TEST DOUBLE: just enough of CUDA's device dialect, and of the instructions the tensor-core
// templates use, to compile templates/dense_tc.cu and dense_wgmma.cu as host C++ and run each
// block's threads as host threads. ldmatrix and mma.sync are carried out with the
// lane-to-fragment layouts of the PTX ISA, the lanes of a warp exchanging their operands through
// a per-warp mailbox; wgmma decodes its shared-memory descriptors and applies the 128-byte
// swizzle to addresses as the hardware does; mbarriers count arrivals and phases. So the
// kernels' swizzles, fragment indexing, local padding, pipeline protocol, split-K slices and
// epilogues are checked on a machine without a GPU. TMA tensor copies read the map that
// emu_encode_tensor_map (a stand-in for cuTensorMapEncodeTiled) wrote, zero-fill outside the
// tensor, swizzle as the 128-byte mode does and complete on their mbarrier's transaction count. Copies that are cp.async on the GPU, and
// wgmma, happen synchronously here, so this cannot find a missing wait or fence; the GPU tests
// can. A pipeline that deadlocks aborts the test after kEmuDeadlockSeconds.
#pragma once

#include <math.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "measure/gpu_operands.h"
#include "nvrtc/emu_dialect.h"
#include "pack/runtime/pack_tensor_maps.h"

#define __align__(n) alignas(n)
#define __grid_constant__

struct __attribute__((may_alias, aligned(16))) uint4 {
  unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }

// Shared memory of the one block that runs at a time (this header is included by one test).
extern "C" {
alignas(1024) uint4 dc_smem[227 * 1024 / 16];
}

// Warp-collective instructions: each lane posts its operands in its warp's mailbox, the warp
// meets at a barrier, and each lane then reads what it needs from the others. Two mailboxes
// alternate, so one barrier per instruction suffices: a lane can only overwrite a mailbox after
// every lane of its warp has passed the next barrier, i.e. finished reading it.
struct EmuWarp {
  EmuBarrier barrier;
  uint32_t mailbox[2][32][8];
};
inline EmuWarp emu_warps[32];
inline thread_local unsigned emu_collective_count = 0;

// Posts `count` words and returns the mailbox every lane of the warp has filled.
inline const uint32_t (*emu_exchange(const uint32_t* words, int count))[8] {
  const unsigned lane = threadIdx.x % 32;
  EmuWarp& warp = emu_warps[threadIdx.x / 32];
  auto& box = warp.mailbox[emu_collective_count++ & 1];
  for (int i = 0; i < count; ++i) box[lane][i] = words[i];
  warp.barrier.wait();
  return box;
}

inline char* emu_shared(unsigned offset) {
  if (offset >= sizeof(dc_smem)) throw std::out_of_range("shared address out of range");
  return reinterpret_cast<char*>(dc_smem) + offset;
}

inline unsigned dc_emu_shared_offset(const void* p) {
  return unsigned(static_cast<const char*>(p) - reinterpret_cast<const char*>(dc_smem));
}

inline void dc_emu_cp_async16(unsigned dst, const void* src, int src_bytes) {
  if (dst % 16 != 0) throw std::logic_error("cp.async destination not 16-byte aligned");
  char* d = emu_shared(dst);
  std::memset(d, 0, 16);
  if (src_bytes > 0) std::memcpy(d, src, size_t(src_bytes));
}

// ldmatrix .m8n8 .x1/.x2/.x4 .b16, no transpose: lane 8j + r names row r of matrix j; lane l
// receives word (row l / 4, columns 2 (l % 4), + 1) of every matrix.
inline void dc_emu_ldmatrix(unsigned* r, int matrices, unsigned addr) {
  if (addr % 16 != 0) throw std::logic_error("ldmatrix row address not 16-byte aligned");
  const uint32_t word = addr;
  const auto box = emu_exchange(&word, 1);
  const unsigned lane = threadIdx.x % 32;
  for (int j = 0; j < matrices; ++j) {
    const unsigned row_addr = box[8 * j + lane / 4][0];
    std::memcpy(&r[j], emu_shared(row_addr + 4 * (lane % 4)), 4);
  }
}

// ldmatrix .m8n8 .x1/.x2/.x4 .trans .b16: the same rows are named, but each matrix is delivered
// transposed: lane l receives element (row 2 (l % 4), column l / 4) in its low half and (row
// 2 (l % 4) + 1, column l / 4) in its high half, i.e. column l / 4 where the plain form gives
// row l / 4.
inline void dc_emu_ldmatrix_trans(unsigned* r, int matrices, unsigned addr) {
  if (addr % 16 != 0) throw std::logic_error("ldmatrix row address not 16-byte aligned");
  const uint32_t word = addr;
  const auto box = emu_exchange(&word, 1);
  const unsigned lane = threadIdx.x % 32;
  for (int j = 0; j < matrices; ++j) {
    uint16_t lo, hi;
    std::memcpy(&lo, emu_shared(box[8 * j + 2 * (lane % 4)][0] + 2 * (lane / 4)), 2);
    std::memcpy(&hi, emu_shared(box[8 * j + 2 * (lane % 4) + 1][0] + 2 * (lane / 4)), 2);
    r[j] = unsigned(lo) | (unsigned(hi) << 16);
  }
}

inline float dc_emu_to_float(unsigned short bits, int dtype) {
  return dtype == 1 ? dietcode::half_to_float(bits) : dietcode::bfloat16_to_float(bits);
}

inline unsigned short dc_emu_from_float(float v, int dtype) {
  return dtype == 1 ? dietcode::float_to_half(v) : dietcode::float_to_bfloat16(v);
}

// mma.sync.m16n8k16.row.col, fp32 accumulate. Fragments (g = lane / 4, t = lane % 4):
//   A (16x16): a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..)
//   B (16x8, k x n): b0 (k 2t..2t+1, n g), b1 (k 2t+8.., n g)
//   D (16x8): d0, d1 (g, 2t..2t+1), d2, d3 (g+8, 2t..2t+1)
inline void dc_emu_mma16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                            int dtype) {
  const uint32_t words[6] = {a[0], a[1], a[2], a[3], b[0], b[1]};
  const auto box = emu_exchange(words, 6);
  auto half_of = [&](uint32_t w, int k) {
    return dc_emu_to_float((w >> (16 * (k % 2))) & 0xFFFF, dtype);
  };
  auto a_at = [&](int row, int k) {
    const int lane = (row % 8) * 4 + (k % 8) / 2;
    const int reg = (row >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0);
    return half_of(box[lane][reg], k);
  };
  auto b_at = [&](int k, int n) {
    const int lane = n * 4 + (k % 8) / 2;
    return half_of(box[lane][4 + (k >= 8 ? 1 : 0)], k);
  };
  const unsigned lane = threadIdx.x % 32;
  for (int e = 0; e < 4; ++e) {
    const int row = int(lane / 4) + (e >= 2 ? 8 : 0);
    const int col = int(lane % 4) * 2 + e % 2;
    double sum = 0;
    for (int k = 0; k < 16; ++k) sum += double(a_at(row, k)) * double(b_at(k, col));
    d[e] += float(sum);
  }
}

// ---- mbarrier ------------------------------------------------------------------------------
constexpr int kEmuDeadlockSeconds = 30;
struct EmuMbarrier {
  unsigned expected = 0, pending = 0, phase = 0;  // phase: completed phases so far
  long long tx = 0;                               // transaction bytes still to come
};
inline std::mutex emu_mbar_mu;
inline std::condition_variable emu_mbar_cv;
inline std::map<unsigned, EmuMbarrier> emu_mbars;  // by shared address

inline void dc_emu_mbar_init(unsigned bar, unsigned count) {
  std::lock_guard<std::mutex> lock(emu_mbar_mu);
  emu_mbars[bar] = EmuMbarrier{count, count, 0, 0};
}

inline EmuMbarrier& emu_mbar_locked(unsigned bar) {
  auto it = emu_mbars.find(bar);
  if (it == emu_mbars.end() || it->second.expected == 0) {
    std::fprintf(stderr, "mbarrier at %u used before it was initialised\n", bar);
    std::abort();
  }
  return it->second;
}

// A phase completes when its last arrival is in and no transaction bytes are outstanding.
inline void emu_mbar_try_complete(EmuMbarrier& b) {
  if (b.pending == 0 && b.tx == 0) {
    ++b.phase;
    b.pending = b.expected;
    emu_mbar_cv.notify_all();
  }
}

// An arrival, after adding `tx_bytes` to the bytes the phase waits for (arrive.expect_tx).
inline void emu_mbar_arrive(unsigned bar, long long tx_bytes) {
  std::lock_guard<std::mutex> lock(emu_mbar_mu);
  EmuMbarrier& b = emu_mbar_locked(bar);
  if (b.pending == 0) {
    std::fprintf(stderr, "mbarrier %u: more arrivals than its count\n", bar);
    std::abort();
  }
  b.tx += tx_bytes;
  --b.pending;
  emu_mbar_try_complete(b);
}

inline void dc_emu_mbar_arrive(unsigned bar) { emu_mbar_arrive(bar, 0); }

inline void dc_emu_mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
  emu_mbar_arrive(bar, bytes);
}

// Bytes delivered by a copy (complete_tx). They may land before their announcement: the count
// then goes negative and the phase cannot complete until the expect_tx arrival evens it out.
inline void emu_mbar_complete_tx(unsigned bar, long long bytes) {
  std::lock_guard<std::mutex> lock(emu_mbar_mu);
  EmuMbarrier& b = emu_mbar_locked(bar);
  b.tx -= bytes;
  emu_mbar_try_complete(b);
}

// The phase with parity `parity` is complete when the phase now in progress has the other one.
inline void dc_emu_mbar_wait(unsigned bar, unsigned parity) {
  std::unique_lock<std::mutex> lock(emu_mbar_mu);
  const bool done = emu_mbar_cv.wait_for(lock, std::chrono::seconds(kEmuDeadlockSeconds), [&] {
    return (emu_mbars[bar].phase & 1u) != (parity & 1u);
  });
  if (!done) {
    std::fprintf(stderr, "mbarrier %u: waited %d s for parity %u: the pipeline deadlocked\n", bar,
                 kEmuDeadlockSeconds, parity);
    std::abort();
  }
}

// ---- wgmma ---------------------------------------------------------------------------------
// The byte address of element (row, k) of a K-major operand under a 128-byte-swizzle
// descriptor: rows of 128 bytes in groups of 8, groups `stride` bytes apart, then bits 4-6 of
// the address XORed with bits 7-9.
inline unsigned emu_sw128_address(unsigned long long desc, int row, int k) {
  const unsigned start = unsigned(desc & 0x3FFF) << 4;
  const unsigned stride = unsigned((desc >> 32) & 0x3FFF) << 4;
  if ((desc >> 62) != 1 || ((desc >> 49) & 7) != 0)
    throw std::logic_error("descriptor is not a 128-byte swizzle with base offset 0");
  const unsigned logical = start + unsigned(row / 8) * stride + unsigned(row % 8) * 128 +
                           unsigned(k / 8) * 16 + unsigned(k % 8) * 2;
  return logical ^ (((logical >> 7) & 7u) << 4);
}

// The lanes of a warp meet: __syncwarp, and wgmma.wait_group.sync.aligned. The emulated MMAs
// are done when issued (dc_emu_wgmma), each lane its own share; what the wait adds is that the
// warp executes it together, so once it returns, every lane of the warp is past its MMAs and
// one lane may release their stage for all (the template's empty barriers count one arrival per
// consumer warp).
inline void dc_emu_warp_barrier() { emu_warps[threadIdx.x / 32].barrier.wait(); }

// wgmma.mma_async.m64nNk16, both operands K-major in shared memory: this thread's accumulators
// (warp w of the warpgroup: rows 16w + lane/4 and + 8; n8 block i: columns 8i + 2(lane%4), + 1).
inline void dc_emu_wgmma(float* acc, int n, unsigned long long da, unsigned long long db,
                         int dtype) {
  const unsigned ctid = threadIdx.x % 128, warp = ctid / 32, lane = ctid % 32;
  auto element = [&](unsigned long long desc, int row, int k) {
    uint16_t bits;
    std::memcpy(&bits, emu_shared(emu_sw128_address(desc, row, k)), 2);
    return dc_emu_to_float(bits, dtype);
  };
  for (int i = 0; i < n / 8; ++i)
    for (int half = 0; half < 2; ++half)
      for (int j = 0; j < 2; ++j) {
        const int row = int(warp * 16 + lane / 4) + 8 * half;
        const int col = 8 * i + int(lane % 4) * 2 + j;
        double sum = 0;
        for (int k = 0; k < 16; ++k) sum += double(element(da, row, k)) * element(db, col, k);
        acc[4 * i + 2 * half + j] += float(sum);
      }
}

// ---- TMA ---------------------------------------------------------------------------------
// What emu_encode_tensor_map stores in a CUtensorMap's 128 opaque bytes.
struct EmuTensorMap {
  uint64_t magic;
  const void* base;
  uint64_t dims[3], strides[2];
  uint32_t box[3];
};
constexpr uint64_t kEmuTensorMapMagic = 0x70616d726f736e74ull;
static_assert(sizeof(EmuTensorMap) <= sizeof(CUtensorMap), "the record must fit the map");

// Stand-in for cuTensorMapEncodeTiled (same signature), accepting only what the templates'
// producers are written for: rank 3, 16-bit elements, unit element strides, the 128-byte
// swizzle with 128-byte box rows, zero fill. Anything else is a bug in the host code.
inline CUresult emu_encode_tensor_map(CUtensorMap* map, CUtensorMapDataType type, cuuint32_t rank,
                                      void* base, const cuuint64_t* dims,
                                      const cuuint64_t* strides, const cuuint32_t* box,
                                      const cuuint32_t* element_strides,
                                      CUtensorMapInterleave interleave,
                                      CUtensorMapSwizzle swizzle, CUtensorMapL2promotion,
                                      CUtensorMapFloatOOBfill fill) {
  if (type != CU_TENSOR_MAP_DATA_TYPE_UINT16 || rank != 3 ||
      interleave != CU_TENSOR_MAP_INTERLEAVE_NONE || swizzle != CU_TENSOR_MAP_SWIZZLE_128B ||
      fill != CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE || box[0] * 2 != 128 || box[1] > 256 ||
      box[2] != 1 || reinterpret_cast<uintptr_t>(base) % 16 != 0 || strides[0] % 16 != 0 ||
      strides[1] % 16 != 0 || strides[0] < dims[0] * 2)
    return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < 3; ++i)
    if (element_strides[i] != 1) return CUDA_ERROR_INVALID_VALUE;
  EmuTensorMap m{kEmuTensorMapMagic, base, {dims[0], dims[1], dims[2]}, {strides[0], strides[1]},
                 {box[0], box[1], box[2]}};
  std::memset(map, 0, sizeof(*map));
  std::memcpy(map, &m, sizeof(m));
  return CUDA_SUCCESS;
}

// cp.async.bulk.tensor.3d ... .tile.mbarrier::complete_tx::bytes: the box at (c0, c1, c2),
// zeros outside the tensor, rows of 128 bytes with chunk c of row r at c ^ (r % 8).
inline void dc_emu_tma_load_3d(unsigned dst, const void* map, int c0, int c1, int c2,
                               unsigned bar) {
  EmuTensorMap m;
  std::memcpy(&m, map, sizeof(m));
  if (m.magic != kEmuTensorMapMagic) throw std::logic_error("TMA copy through an unencoded map");
  if (dst % 1024 != 0) throw std::logic_error("128-byte-swizzled TMA box not 1024-byte aligned");
  const auto* base = static_cast<const unsigned char*>(m.base);
  for (uint32_t r = 0; r < m.box[1]; ++r)
    for (uint32_t e = 0; e < m.box[0]; ++e) {
      const long long k = (long long)c0 + e, row = (long long)c1 + r, b = c2;
      uint16_t v = 0;
      if (k >= 0 && row >= 0 && b >= 0 && uint64_t(k) < m.dims[0] && uint64_t(row) < m.dims[1] &&
          uint64_t(b) < m.dims[2])
        std::memcpy(&v, base + uint64_t(b) * m.strides[1] + uint64_t(row) * m.strides[0] + k * 2,
                    2);
      const unsigned logical = r * 128 + e * 2;
      std::memcpy(emu_shared(dst + (logical ^ (((logical >> 7) & 7u) << 4))), &v, 2);
    }
  emu_mbar_complete_tx(bar, (long long)m.box[0] * m.box[1] * 2);
}

// Runs kernel over the grid, one block after another, each block's threads concurrently.
template <class... Args>
void emu_launch(void (*kernel)(Args...), const unsigned grid[3], int threads,
                const Args&... args) {
  if (threads % 32 != 0 || threads > 1024) throw std::logic_error("block is not whole warps");
  gridDim = {grid[0], grid[1], grid[2]};
  blockDim = {unsigned(threads), 1, 1};
  for (unsigned z = 0; z < grid[2]; ++z)
    for (unsigned y = 0; y < grid[1]; ++y)
      for (unsigned x = 0; x < grid[0]; ++x) {
        blockIdx = {x, y, z};
        emu_block_barrier.reset(threads);
        for (int w = 0; w < threads / 32; ++w) emu_warps[w].barrier.reset(32);
        std::memset(dc_smem, 0xFF, sizeof(dc_smem));  // NaN in both types: stale data shows
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t)
          pool.emplace_back([=] {
            threadIdx = {unsigned(t), 0, 0};
            emu_collective_count = 0;
            kernel(args...);
          });
        for (auto& th : pool) th.join();
      }
}
