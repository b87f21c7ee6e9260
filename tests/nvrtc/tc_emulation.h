// TEST DOUBLE: just enough of CUDA's device dialect, and of the instructions the tensor-core
// templates use, to compile templates/dense_tc.cu and dense_wgmma.cu as host C++ and run each
// block's threads as host threads. ldmatrix and mma.sync are carried out with the
// lane-to-fragment layouts of the PTX ISA, the lanes of a warp exchanging their operands through
// a per-warp mailbox; wgmma decodes its shared-memory descriptors and applies the 128-byte
// swizzle to addresses as the hardware does; mbarriers count arrivals and phases. So the
// kernels' swizzles, fragment indexing, local padding, pipeline protocol, split-K slices and
// epilogues are checked on a machine without a GPU. Copies that are cp.async on the GPU, and
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
};
inline std::mutex emu_mbar_mu;
inline std::condition_variable emu_mbar_cv;
inline std::map<unsigned, EmuMbarrier> emu_mbars;  // by shared address

inline void dc_emu_mbar_init(unsigned bar, unsigned count) {
  std::lock_guard<std::mutex> lock(emu_mbar_mu);
  emu_mbars[bar] = EmuMbarrier{count, count, 0};
}

inline void dc_emu_mbar_arrive(unsigned bar) {
  std::lock_guard<std::mutex> lock(emu_mbar_mu);
  auto it = emu_mbars.find(bar);
  if (it == emu_mbars.end() || it->second.expected == 0) {
    std::fprintf(stderr, "arrive on an uninitialised mbarrier at %u\n", bar);
    std::abort();
  }
  if (--it->second.pending == 0) {
    ++it->second.phase;
    it->second.pending = it->second.expected;
    emu_mbar_cv.notify_all();
  }
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

// Runs kernel over the grid, one block after another, each block's threads concurrently.
template <class Args>
void emu_launch(void (*kernel)(Args), const unsigned grid[3], int threads, const Args& args) {
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
            kernel(args);
          });
        for (auto& th : pool) th.join();
      }
}
