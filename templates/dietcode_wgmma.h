// Hopper building blocks of templates/dense_wgmma.cu (sm_90a): mbarrier pipelines, the
// shared-memory matrix descriptor, proxy and wgmma fences, and wgmma.mma_async for the
// m64nNk16 shapes the template uses. Included after dietcode_tc.h.
//
// Shared-memory operands are K-major tiles of 64 elements (128 bytes) per row with the 128-byte
// swizzle: within each 1024-byte group of 8 rows, 16-byte chunk c of row r sits at chunk
// c ^ (r % 8). Groups of 8 rows are 1024 bytes apart (the descriptor's stride byte offset); a
// k16 step inside the 128-byte row is a 32-byte advance of the start address, because the
// hardware applies the swizzle to address bits (bits 4-6 ^= bits 7-9) of 1024-byte aligned
// tiles.
#ifndef DIETCODE_WGMMA_H_
#define DIETCODE_WGMMA_H_

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "dense_wgmma needs sm_90a (wgmma.mma_async)"
#endif

#if DTYPE == 1
#define DC_WGMMA_TYPE "f16"
#else
#define DC_WGMMA_TYPE "bf16"
#endif

namespace dc {

// ---- mbarrier ----------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
#if defined(DIETCODE_HOST_EMULATION)
  dc_emu_mbar_init(bar, count);
#else
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
#endif
}

// One arrival (release semantics: this thread's earlier shared-memory writes become visible to
// whoever observes the phase complete).
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
#if defined(DIETCODE_HOST_EMULATION)
  dc_emu_mbar_arrive(bar);
#else
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
#endif
}

// One arrival once all of this thread's earlier cp.async copies have landed. .noinc: the arrival
// counts against the count the barrier was initialised with (one per producer thread).
__device__ __forceinline__ void mbar_arrive_when_copied(unsigned bar) {
#if defined(DIETCODE_HOST_EMULATION)
  dc_emu_mbar_arrive(bar);  // the emulated copies are already done
#else
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
#endif
}

// Tries allowed before mbar_wait gives up. A pipeline whose barrier never completes (a lost
// arrival, a TMA copy that never lands) would otherwise spin forever and hang the process that
// launched it; a trap instead ends the kernel with CUDA_ERROR_LAUNCH_FAILED, which the tuner
// records as the candidate's launch_error and a pack reports as an error. Each try suspends
// for a hardware-chosen moment, so 2^24 tries is seconds: far beyond any legitimate wait
// (microseconds), short enough for a test's time limit.
#ifndef DIETCODE_MBAR_MAX_TRIES
#define DIETCODE_MBAR_MAX_TRIES (1u << 24)
#endif

#if !defined(DIETCODE_HOST_EMULATION)
// One bounded try: whether the phase with the given parity has completed.
__device__ __forceinline__ bool mbar_try_wait(unsigned bar, unsigned parity) {
  unsigned done;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}
#endif

// Blocks until the phase with the given parity has completed (acquire semantics), or traps
// after DIETCODE_MBAR_MAX_TRIES tries. A barrier that has never completed a phase counts its
// "previous" phase, parity 1, as complete: that is why producers start by waiting on parity 1
// of the empty barriers and pass at once.
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
#if defined(DIETCODE_HOST_EMULATION)
  dc_emu_mbar_wait(bar, parity);
#else
  for (unsigned tries = 1; !mbar_try_wait(bar, parity); ++tries)
    if (tries == DIETCODE_MBAR_MAX_TRIES) __trap();
#endif
}

// ---- TMA: tensor copies global -> shared, completing on an mbarrier ------------------------
// The host's CUtensorMap (src/pack/runtime/pack_tensor_maps.h), received by value as a
// __grid_constant__ parameter so its address stays in the kernel's parameter space, which is
// where cp.async.bulk.tensor and prefetch.tensormap expect to find it.
struct __align__(64) TensorMap {
  unsigned long long opaque[16];
};

// The arrival of the thread that issues a stage's copies, announcing the bytes they will
// deliver: the phase completes once that arrival and all those bytes are in.
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
#if defined(DIETCODE_HOST_EMULATION)
  dc_emu_mbar_arrive_expect_tx(bar, bytes);
#else
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
#endif
}

// Fetches the map into the TMA unit's descriptor cache ahead of the first copy.
__device__ __forceinline__ void prefetch_tensor_map(const TensorMap* map) {
#if !defined(DIETCODE_HOST_EMULATION)
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map))
               : "memory");
#else
  (void)map;
#endif
}

// One box of the map, at element coordinates (c0, c1, c2) innermost first, into shared memory at
// dst (1024-byte aligned for the 128-byte swizzle); its bytes count against bar's transaction
// count. Elements outside the tensor arrive as zeros, so tails need no guards.
__device__ __forceinline__ void tma_load_3d(unsigned dst, const TensorMap* map, int c0, int c1,
                                            int c2, unsigned bar) {
#if defined(DIETCODE_HOST_EMULATION)
  dc_emu_tma_load_3d(dst, map, c0, c1, c2, bar);
#else
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
#endif
}

// Makes barrier initialisation visible to the async proxy (the TMA unit completes transactions
// on them) before any thread issues a copy; the block barrier that follows orders the rest.
__device__ __forceinline__ void fence_barrier_init() {
#if !defined(DIETCODE_HOST_EMULATION)
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}

// ---- Fences ------------------------------------------------------------------------------
// Generic-proxy writes (cp.async copies, plain stores) become visible to the async proxy that
// wgmma reads shared memory through. Issued by each consumer thread after it acquired a stage.
__device__ __forceinline__ void fence_proxy_async() {
#if !defined(DIETCODE_HOST_EMULATION)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void wgmma_fence() {
#if !defined(DIETCODE_HOST_EMULATION)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void wgmma_commit() {
#if !defined(DIETCODE_HOST_EMULATION)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}

// __syncwarp: a warp's lanes meet, and their shared-memory writes are visible to each other.
__device__ __forceinline__ void warp_sync() {
#if defined(DIETCODE_HOST_EMULATION)
  dc_emu_warp_barrier();
#else
  __syncwarp();
#endif
}

template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
#if defined(DIETCODE_HOST_EMULATION)
  dc_emu_warp_barrier();
#else
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
#endif
}

// Keeps the compiler from moving reads or writes of an accumulator across wgmma's asynchronous
// use of it (the registers are read and written behind its back until wgmma_wait).
template <int N>
__device__ __forceinline__ void pin_registers(float (&d)[N]) {
#if !defined(DIETCODE_HOST_EMULATION)
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
#endif
}

// ---- Descriptor --------------------------------------------------------------------------
// A K-major, 128-byte-swizzled operand at shared address `addr` (1024-byte aligned, plus k16
// steps of 32 bytes): start address >> 4 in bits 0-13, leading byte offset (unused by swizzled
// K-major layouts; 16 bytes) >> 4 in bits 16-29, stride byte offset (1024: the next 8 rows)
// >> 4 in bits 32-45, base offset 0 in bits 49-51, layout 1 (128-byte swizzle) in bits 62-63.
__device__ __forceinline__ unsigned long long sw128_descriptor(unsigned addr) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

// ---- wgmma.mma_async m64nNk16, fp32 += A (64 x 16, shared) . B (N x 16, shared)^T ---------
// Both operands K-major (transpose flags 0), scale 1. Accumulator layout in a warpgroup: warp w
// holds rows 16w .. 16w + 15; in it lane l holds, for each n8 block i, d[4i], d[4i+1] at
// (row 16w + l/4, columns 8i + 2(l%4), + 1) and d[4i+2], d[4i+3] eight rows below.
// Every n the instruction has for 16-bit inputs (8 .. 256 in steps of 8) is defined, so a
// block tile can be as wide as fills the GPU's SMs best for a shape (BN in dense_wgmma.cu).
// The operand lists are mechanical, one n8 block (four accumulators) per step: the two
// descriptors come first ("+l" on the copies passed in, which wgmma leaves unchanged), so
// accumulator j is operand %(j + 2) whatever n is, and DC_WG_L<b> / DC_WG_P<b> list the first
// b blocks' operand numbers and bindings.
template <int N>
struct Wgmma;

#if !defined(DIETCODE_HOST_EMULATION)
#define DC_WG_O(i) "+f"(d[4 * (i)]), "+f"(d[4 * (i) + 1]), "+f"(d[4 * (i) + 2]), "+f"(d[4 * (i) + 3])
#define DC_WG_L1 "%2, %3, %4, %5"
#define DC_WG_L2 DC_WG_L1 ", %6, %7, %8, %9"
#define DC_WG_L3 DC_WG_L2 ", %10, %11, %12, %13"
#define DC_WG_L4 DC_WG_L3 ", %14, %15, %16, %17"
#define DC_WG_L5 DC_WG_L4 ", %18, %19, %20, %21"
#define DC_WG_L6 DC_WG_L5 ", %22, %23, %24, %25"
#define DC_WG_L7 DC_WG_L6 ", %26, %27, %28, %29"
#define DC_WG_L8 DC_WG_L7 ", %30, %31, %32, %33"
#define DC_WG_L9 DC_WG_L8 ", %34, %35, %36, %37"
#define DC_WG_L10 DC_WG_L9 ", %38, %39, %40, %41"
#define DC_WG_L11 DC_WG_L10 ", %42, %43, %44, %45"
#define DC_WG_L12 DC_WG_L11 ", %46, %47, %48, %49"
#define DC_WG_L13 DC_WG_L12 ", %50, %51, %52, %53"
#define DC_WG_L14 DC_WG_L13 ", %54, %55, %56, %57"
#define DC_WG_L15 DC_WG_L14 ", %58, %59, %60, %61"
#define DC_WG_L16 DC_WG_L15 ", %62, %63, %64, %65"
#define DC_WG_L17 DC_WG_L16 ", %66, %67, %68, %69"
#define DC_WG_L18 DC_WG_L17 ", %70, %71, %72, %73"
#define DC_WG_L19 DC_WG_L18 ", %74, %75, %76, %77"
#define DC_WG_L20 DC_WG_L19 ", %78, %79, %80, %81"
#define DC_WG_L21 DC_WG_L20 ", %82, %83, %84, %85"
#define DC_WG_L22 DC_WG_L21 ", %86, %87, %88, %89"
#define DC_WG_L23 DC_WG_L22 ", %90, %91, %92, %93"
#define DC_WG_L24 DC_WG_L23 ", %94, %95, %96, %97"
#define DC_WG_L25 DC_WG_L24 ", %98, %99, %100, %101"
#define DC_WG_L26 DC_WG_L25 ", %102, %103, %104, %105"
#define DC_WG_L27 DC_WG_L26 ", %106, %107, %108, %109"
#define DC_WG_L28 DC_WG_L27 ", %110, %111, %112, %113"
#define DC_WG_L29 DC_WG_L28 ", %114, %115, %116, %117"
#define DC_WG_L30 DC_WG_L29 ", %118, %119, %120, %121"
#define DC_WG_L31 DC_WG_L30 ", %122, %123, %124, %125"
#define DC_WG_L32 DC_WG_L31 ", %126, %127, %128, %129"
#define DC_WG_P1 DC_WG_O(0)
#define DC_WG_P2 DC_WG_P1, DC_WG_O(1)
#define DC_WG_P3 DC_WG_P2, DC_WG_O(2)
#define DC_WG_P4 DC_WG_P3, DC_WG_O(3)
#define DC_WG_P5 DC_WG_P4, DC_WG_O(4)
#define DC_WG_P6 DC_WG_P5, DC_WG_O(5)
#define DC_WG_P7 DC_WG_P6, DC_WG_O(6)
#define DC_WG_P8 DC_WG_P7, DC_WG_O(7)
#define DC_WG_P9 DC_WG_P8, DC_WG_O(8)
#define DC_WG_P10 DC_WG_P9, DC_WG_O(9)
#define DC_WG_P11 DC_WG_P10, DC_WG_O(10)
#define DC_WG_P12 DC_WG_P11, DC_WG_O(11)
#define DC_WG_P13 DC_WG_P12, DC_WG_O(12)
#define DC_WG_P14 DC_WG_P13, DC_WG_O(13)
#define DC_WG_P15 DC_WG_P14, DC_WG_O(14)
#define DC_WG_P16 DC_WG_P15, DC_WG_O(15)
#define DC_WG_P17 DC_WG_P16, DC_WG_O(16)
#define DC_WG_P18 DC_WG_P17, DC_WG_O(17)
#define DC_WG_P19 DC_WG_P18, DC_WG_O(18)
#define DC_WG_P20 DC_WG_P19, DC_WG_O(19)
#define DC_WG_P21 DC_WG_P20, DC_WG_O(20)
#define DC_WG_P22 DC_WG_P21, DC_WG_O(21)
#define DC_WG_P23 DC_WG_P22, DC_WG_O(22)
#define DC_WG_P24 DC_WG_P23, DC_WG_O(23)
#define DC_WG_P25 DC_WG_P24, DC_WG_O(24)
#define DC_WG_P26 DC_WG_P25, DC_WG_O(25)
#define DC_WG_P27 DC_WG_P26, DC_WG_O(26)
#define DC_WG_P28 DC_WG_P27, DC_WG_O(27)
#define DC_WG_P29 DC_WG_P28, DC_WG_O(28)
#define DC_WG_P30 DC_WG_P29, DC_WG_O(29)
#define DC_WG_P31 DC_WG_P30, DC_WG_O(30)
#define DC_WG_P32 DC_WG_P31, DC_WG_O(31)

#define DC_WGMMA_SHAPE(N, BLOCKS)                                                               \
  template <>                                                                                  \
  struct Wgmma<N> {                                                                            \
    static __device__ __forceinline__ void mma(float (&d)[(N) / 2], unsigned long long a,      \
                                               unsigned long long b) {                         \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                 \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." DC_WGMMA_TYPE             \
                   "." DC_WGMMA_TYPE " {" DC_WG_L##BLOCKS "}, %0, %1, p, 1, 1, 0, 0;\n}\n"   \
                   : "+l"(a), "+l"(b), DC_WG_P##BLOCKS);                                       \
    }                                                                                          \
  };
DC_WGMMA_SHAPE(8, 1) DC_WGMMA_SHAPE(16, 2) DC_WGMMA_SHAPE(24, 3) DC_WGMMA_SHAPE(32, 4)
DC_WGMMA_SHAPE(40, 5) DC_WGMMA_SHAPE(48, 6) DC_WGMMA_SHAPE(56, 7) DC_WGMMA_SHAPE(64, 8)
DC_WGMMA_SHAPE(72, 9) DC_WGMMA_SHAPE(80, 10) DC_WGMMA_SHAPE(88, 11) DC_WGMMA_SHAPE(96, 12)
DC_WGMMA_SHAPE(104, 13) DC_WGMMA_SHAPE(112, 14) DC_WGMMA_SHAPE(120, 15) DC_WGMMA_SHAPE(128, 16)
DC_WGMMA_SHAPE(136, 17) DC_WGMMA_SHAPE(144, 18) DC_WGMMA_SHAPE(152, 19) DC_WGMMA_SHAPE(160, 20)
DC_WGMMA_SHAPE(168, 21) DC_WGMMA_SHAPE(176, 22) DC_WGMMA_SHAPE(184, 23) DC_WGMMA_SHAPE(192, 24)
DC_WGMMA_SHAPE(200, 25) DC_WGMMA_SHAPE(208, 26) DC_WGMMA_SHAPE(216, 27) DC_WGMMA_SHAPE(224, 28)
DC_WGMMA_SHAPE(232, 29) DC_WGMMA_SHAPE(240, 30) DC_WGMMA_SHAPE(248, 31) DC_WGMMA_SHAPE(256, 32)
#endif  // !DIETCODE_HOST_EMULATION

}  // namespace dc

#endif  // DIETCODE_WGMMA_H_
