// The L2 flush that `tune` and `bench` both run before every timed launch with --l2 flush (the
// default): one kernel that writes twice the L2's size, a new value each time, through the
// SMs. Both commands flush the same way so that a kernel is chosen under the conditions it is
// graded in: the L2 afterwards holds the flush's dirty lines, which the timed kernel's loads
// must evict, and a flush by another path (the driver's memset, which the tuner once used)
// can leave the L2 in another state. Run 5 on an H200 found the bench timing bf16 kernels
// 0.2-0.8 us longer than the tune had (docs/results/h200, section 8) while the tuner flushed
// with cuMemsetD32 and the bench with a kernel.
//
// Hand-written PTX for sm_75, like the queue hold (queue_hold.h): every GPU dietcode supports
// JIT-compiles it at module load, with no NVRTC call and no arch to pick.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace dietcode {

// The PTX of `dietcode_l2_flush(unsigned* buffer, long long words, unsigned value)`: a
// grid-stride loop that stores `value` into buffer[0 .. words).
const char* l2_flush_ptx();
inline constexpr char kL2FlushEntry[] = "dietcode_l2_flush";

// The launch every flush uses: 256 threads a block, as many blocks as the words need up to
// 1024 (a grid-stride loop covers the rest).
struct L2FlushGrid {
  static constexpr int kThreads = 256;
  static constexpr int kMaxBlocks = 1024;
  static unsigned blocks(int64_t words);
};

// Enqueues the flush of `bytes` (a multiple of 4) at `buffer` on `stream`, writing `value`;
// throws CudaError when the launch fails.
void launch_l2_flush(CUfunction flush, CUstream stream, CUdeviceptr buffer, int64_t bytes,
                     uint32_t value);

}  // namespace dietcode
