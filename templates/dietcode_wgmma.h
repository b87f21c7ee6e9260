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

template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
#if !defined(DIETCODE_HOST_EMULATION)
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
// The operand lists below are mechanical: %0 .. %(N/2 - 1) are the accumulators.
template <int N>
struct Wgmma;

#if !defined(DIETCODE_HOST_EMULATION)
template <>
struct Wgmma<64> {
  static __device__ __forceinline__ void mma(float (&d)[32], unsigned long long a,
                                             unsigned long long b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32." DC_WGMMA_TYPE "." DC_WGMMA_TYPE
        " {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, "
        "%18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
        "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
          "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
          "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(a), "l"(b));
  }
};

template <>
struct Wgmma<128> {
  static __device__ __forceinline__ void mma(float (&d)[64], unsigned long long a,
                                             unsigned long long b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32." DC_WGMMA_TYPE "." DC_WGMMA_TYPE
        " {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, "
        "%18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, "
        "%34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, "
        "%50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
          "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
          "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
          "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
          "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
          "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
          "+f"(d[63])
        : "l"(a), "l"(b));
  }
};

template <>
struct Wgmma<256> {
  static __device__ __forceinline__ void mma(float (&d)[128], unsigned long long a,
                                             unsigned long long b) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32." DC_WGMMA_TYPE "." DC_WGMMA_TYPE
        " {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, "
        "%18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, "
        "%34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, "
        "%50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, "
        "%66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, "
        "%82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, "
        "%98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, "
        "%111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, "
        "%124, %125, %126, %127"
        "}, %128, %129, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
          "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
          "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
          "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
          "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
          "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
          "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
          "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),
          "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
          "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
          "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]),
          "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]),
          "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]),
          "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]),
          "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(a), "l"(b));
  }
};
#endif  // !DIETCODE_HOST_EMULATION

}  // namespace dc

#endif  // DIETCODE_WGMMA_H_
