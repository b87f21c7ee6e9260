/* The loader runtime compiled into every GPU kernel pack: what a kernel is on a GPU (its launch
 * plan and CUBINs) and which binary and dispatcher serve a GPU; the rest of the pack's
 * description is the same for every target (pack_desc.h).
 *
 * This file and pack_runtime.cc are built into each GPU libNAME.so, never into dietcode itself:
 * dietcode carries their text (embedded at its own build) and writes them next to the
 * generated code when it builds a pack. They depend on nothing but libc, libstdc++, the
 * driver API headers (types only: the driver is dlopen'ed on first use) and the two plain-C
 * headers every pack ships with, dietcode/pack_abi.h and dietcode_args.h.
 */
#ifndef DIETCODE_PACK_RUNTIME_H_
#define DIETCODE_PACK_RUNTIME_H_

#include "pack_desc.h"

namespace dietcode_pack {

/* One CUBIN of a kernel. cc is the arch number (80 for sm_80); an arch-specific CUBIN
 * (sm_90a) runs only on exactly that compute capability, a plain one on any later minor
 * revision of the same major (sm_80 runs on 8.6). */
struct CubinImage {
  int cc;
  bool arch_specific;
  const unsigned char* data;
  size_t size;
};

/* One kernel of a GPU pack (pack_desc.h declares it for every target): how to launch it (the
 * launch plan dietcode generated it with) and its binaries. */
struct KernelDesc {
  const char* entry;        /* extern "C" __global__ name */
  const char* reduce_entry; /* split-K reduction entry, "" when the main kernel writes C */
  int threads;
  int dynamic_smem_bytes;
  int tile_m, tile_n;
  int m_tiles_per_block; /* M tiles a block walks in turn: the grid's y is divided by it */
  int split_k;
  int reduce_threads;
  int min_alignment_bytes; /* pointers a, b, c must be aligned to this */
  /* > 0: the kernel has a TMA producer and takes, after DietcodeArgs, a tensor map of A (boxes
   * of tile_m x tma_box_k elements) and one of B (tile_n x tma_box_k), pack_tensor_maps.h */
  int tma_box_k;
  const CubinImage* cubins;
  int n_cubins;
  const char* ptx; /* NUL-terminated PTX for a newer GPU, or NULL */
  int ptx_cc;      /* 90 for compute_90 */
};

/* Which binary of a kernel runs on a GPU of compute capability cc (90 for 9.0): the CUBIN
 * built for it or for the nearest older minor revision of its major (an arch-specific one,
 * sm_90a, only on exactly its own), else the PTX when the GPU is at least as new as the PTX's
 * virtual arch (the driver compiles it), else none. */
constexpr int kUsePtx = -1;
constexpr int kNoImage = -2;

inline bool runs_on(int built_cc, bool arch_specific, int gpu_cc) {
  return arch_specific ? built_cc == gpu_cc : (built_cc / 10 == gpu_cc / 10 && built_cc <= gpu_cc);
}

/* Of two binaries that both run, the one built for the newer arch, arch-specific first. */
inline bool newer(int cc, bool arch_specific, int than_cc, bool than_specific) {
  return cc > than_cc || (cc == than_cc && arch_specific && !than_specific);
}

inline int pick_image(const KernelDesc& k, int cc) {
  int best = -1;
  for (int i = 0; i < k.n_cubins; ++i) {
    const CubinImage& c = k.cubins[i];
    if (!runs_on(c.cc, c.arch_specific, cc)) continue;
    if (best < 0 || newer(c.cc, c.arch_specific, k.cubins[best].cc, k.cubins[best].arch_specific))
      best = i;
  }
  if (best >= 0) return best;
  return k.ptx && k.ptx_cc <= cc ? kUsePtx : kNoImage;
}

/* Which dispatcher serves a GPU of compute capability cc: the one of the target arch whose
 * CUBINs run there (as pick_image chooses); on a GPU newer than every target, where kernels
 * run from PTX, the newest portable one no newer than the GPU (arch-specific kernels have no
 * PTX); on an older GPU, the oldest portable one (else the first), whose kernels then report
 * the mismatch with the most archs to name. */
inline int pick_dispatcher(const OpDesc& op, int cc) {
  int best = -1;
  for (int i = 0; i < op.n_selects; ++i) {
    const ArchSelect& s = op.selects[i];
    if (!runs_on(s.cc, s.arch_specific, cc)) continue;
    if (best < 0 ||
        newer(s.cc, s.arch_specific, op.selects[best].cc, op.selects[best].arch_specific))
      best = i;
  }
  if (best >= 0) return best;
  for (int i = 0; i < op.n_selects; ++i) {
    const ArchSelect& s = op.selects[i];
    if (!s.arch_specific && s.cc <= cc && (best < 0 || s.cc > op.selects[best].cc)) best = i;
  }
  if (best >= 0) return best;
  for (int i = 0; i < op.n_selects; ++i) {
    const ArchSelect& s = op.selects[i];
    if (!s.arch_specific && (best < 0 || s.cc < op.selects[best].cc)) best = i;
  }
  return best >= 0 ? best : 0;
}

/* The launch geometry of LaunchPlan (codegen/launch_plan.cc), repeated here so the pack needs
 * nothing from dietcode at run time (a test checks the two agree):
 *   main:   grid (ceil(n / tile_n), min(ceil(ceil(m / tile_m) / m_tiles_per_block), 65535),
 *           batch * split_k), block threads; kernels loop over M tiles gridDim.y apart, so
 *           only y is clamped, x and z must fit;
 *   reduce: grid (ceil(batch * m * n / (4 * reduce_threads)), 1, 1), block reduce_threads;
 *   workspace: batch * split_k * m * n fp32 partial sums when split_k > 1. */
constexpr int64_t kMaxGridX = 2147483647;
constexpr int64_t kMaxGridYZ = 65535;

/* False when the grid does not fit one launch (including products past int64). */
inline bool main_grid(const KernelDesc& k, const DietcodeArgs& a, int64_t grid[3]) {
  grid[0] = ceil_div(a.n, k.tile_n);
  grid[1] = ceil_div(ceil_div(a.m, k.tile_m), k.m_tiles_per_block > 1 ? k.m_tiles_per_block : 1);
  if (grid[1] > kMaxGridYZ) grid[1] = kMaxGridYZ;
  grid[2] = checked_mul(a.batch, k.split_k);
  return grid[0] <= kMaxGridX && grid[2] >= 0 && grid[2] <= kMaxGridYZ;
}

inline bool reduce_grid(const KernelDesc& k, const DietcodeArgs& a, int64_t grid[3]) {
  int64_t outputs = checked_mul(checked_mul(a.batch, a.m), a.n);
  grid[0] = outputs < 0 ? -1 : ceil_div(outputs, 4 * int64_t(k.reduce_threads));
  grid[1] = 1;
  grid[2] = 1;
  return grid[0] >= 0 && grid[0] <= kMaxGridX;
}

/* -1 when the byte count does not fit int64. */
inline int64_t workspace_bytes(const KernelDesc& k, const DietcodeArgs& a) {
  if (k.split_k <= 1) return 0;
  return checked_mul(checked_mul(checked_mul(a.batch * int64_t(sizeof(float)), k.split_k), a.m),
                     a.n);
}

}  // namespace dietcode_pack

#endif /* DIETCODE_PACK_RUNTIME_H_ */
