/* dietcode kernel pack: the C ABI every pack exports.
 *
 * WHAT A PACK IS
 *   `dietcode build WORKLOAD.json` writes libNAME.so and NAME.h. The .so holds, for every
 *   operator of the workload, the chosen micro-kernels (a CUBIN per target arch plus PTX for
 *   newer GPUs) and a decision tree that maps shape-variable values to one of them. It exports
 *   the ten functions below and one typed wrapper per operator (declared in NAME.h), nothing
 *   else. Any C or C++ program, or Python through ctypes, can link or dlopen it.
 *
 * NO DRIVER AT LINK TIME
 *   A pack does not link libcuda. It dlopens libcuda.so.1 on the first dietcode_launch, so
 *   dietcode_abi_version, dietcode_manifest and dietcode_select work on machines without a GPU,
 *   and dietcode_launch returns DIETCODE_ERR_NO_DEVICE there.
 *
 * SHAPE VALUES
 *   `shape_values` holds one int64_t per shape variable of the operator, in the order the
 *   manifest lists that operator's shape variables (`n_values` must match). Values outside
 *   the tuned range still compute correctly, since micro-kernels are shape-generic; values
 *   below 1 are rejected with DIETCODE_ERR_INVALID_ARGUMENT.
 *
 * MANIFEST
 *   dietcode_manifest() returns a JSON object (UTF-8, owned by the pack, valid while it is
 *   loaded) naming the pack and the dietcode version that built it, its archs, each shape
 *   variable with its tuned range, and each op with its dtype, its argument list and its
 *   kernels (id and micro-kernel parameters). `dietcode inspect libNAME.so` prints it.
 *
 * RETURN CODES
 *   DIETCODE_OK (0) or a DIETCODE_ERR_* code (positive), except dietcode_select, which returns
 *   a kernel id (>= 0) or a negated DIETCODE_ERR_* code. After any failure
 *   dietcode_last_error() gives a one-line message.
 *
 * THREAD SAFETY
 *   Every function may be called from any number of threads at once. dietcode_launch works
 *   from several threads and streams concurrently and loads the kernels once per CUDA context.
 *   dietcode_last_error is per thread: it reports the last failure on the calling thread.
 *
 * VERSIONS
 *   ABI versions only add: nothing is removed or changes meaning, so a program written for
 *   version N works unchanged with a pack of any later version. Check with `>=`, never `==`:
 *     if (dietcode_abi_version() < 2) ... the pack lacks dietcode_select_arch ...
 *   Version 2 added dietcode_select_arch; version 3 added CPU packs (see CPU PACKS) and
 *   dietcode_set_num_threads / dietcode_num_threads; version 4 added constant weights
 *   (dietcode_declare_constant / dietcode_forget_constant, see CONSTANT WEIGHTS).
 *
 * ARCHITECTURES
 *   dietcode_launch picks the CUBIN for the current GPU's arch, falls back to PTX for a newer
 *   GPU, and returns DIETCODE_ERR_ARCH_MISMATCH for an older one. A pack may hold kernels
 *   that run on one arch only (wgmma: sm_90a); it then carries one dispatcher per group of
 *   archs (e.g. one for sm_90a over every kernel, one for sm_80 without the sm_90a-only
 *   ones), and dietcode_launch and dietcode_select_arch pick the dispatcher by the GPU the
 *   way they pick the CUBIN. The manifest lists them under each op's "dispatchers".
 *
 * CPU PACKS (ABI 3)
 *   A pack built from a tuning log of CPU templates (`dietcode build --target cpu`; the
 *   manifest's "target" is "cpu", a GPU pack's "cuda") exports this same ABI and runs its
 *   kernels on the host x86-64 CPU:
 *   - dietcode_launch takes HOST pointers and runs the op on the pack's own thread pool,
 *     returning when the output is written; `stream` must be NULL (anything else is
 *     DIETCODE_ERR_INVALID_ARGUMENT). The arguments are checked as for a GPU pack. The pack
 *     never loads a GPU driver. Several threads may launch at once: each call is correct, and
 *     calls share the pool by taking turns on it.
 *   - The pool has every core the process may run on (its CPU affinity), unless
 *     dietcode_set_num_threads says otherwise.
 *   - After a launch the pool's threads poll for the next one for 200 us before they sleep,
 *     so that launches separated by other short work (a model's other layers) find them
 *     awake; waking a sleeping pool costs tens of microseconds on a virtual machine. The
 *     environment variable DIETCODE_CPU_SPIN_US=N (0 to 1000000), read when the pool is
 *     created, sets that time: 0 gives the cores back at once, for a process whose other
 *     threads need them right after a launch (another pack's pool, an OpenMP team); more suits
 *     launches further apart. Any other value is ignored.
 *   - archs are x86-64 ISA levels: "x86-64-v3" (AVX2, FMA) and "x86-64-v4" (AVX-512). A
 *     kernel of an AVX-512 template runs only on a v4 CPU, an AVX2 one on v3 and v4, so a pack
 *     of both levels carries one dispatcher over every kernel for v4 and one over the AVX2
 *     kernels for v3. On first use the pack reads the CPU's level with cpuid (and the OS's
 *     support for the vector registers) and uses the dispatcher of the highest level it has;
 *     a CPU with none of the pack's levels gets DIETCODE_ERR_ARCH_MISMATCH and a
 *     dietcode_last_error naming the CPU's level and the pack's.
 *   - dietcode_select answers for the newest level; dietcode_select_arch takes the x86-64
 *     level number as `cc` (3 for x86-64-v3, 4 for x86-64-v4; 1 to 4 are accepted).
 *   - The environment variable DIETCODE_CPU_LEVEL=N (1 to 4), read once, caps the level the
 *     pack believes the CPU has: it can hide AVX-512 from a pack, never grant it. Tests use it,
 *     and so does `dietcode bench --arch x86-64-v3`, to run a pack's AVX2 kernels on an
 *     AVX-512 host.
 *   - DIETCODE_ERR_CUDA from a CPU pack means a kernel could not run (out of host memory);
 *     DIETCODE_ERR_NO_DEVICE is never returned.
 *
 * CONSTANT WEIGHTS (ABI 4)
 *   Inference calls an op many times with the same weights (dense's W, conv2d's filters). A
 *   caller that promises not to change them declares them: dietcode_declare_constant(op, arg,
 *   W), arg being the op's weights argument (1). A CPU pack then packs W into the panels its
 *   kernel reads once, on the first launch with W (per layout: an op whose kernels differ in
 *   panel width or K block over its shape values keeps one copy per layout in use, each the
 *   size of W rounded up to whole panels), and from then on launches with W skip that
 *   packing, as oneDNN's users do by reordering weights ahead of time. Launches with any other
 *   pointer run as before. A GPU pack checks and records declarations, and runs as before.
 *   - W's contents must not change from the declaration until dietcode_forget_constant(op,
 *     arg, W) returns: a launch may read the copy instead of W. Forgetting frees the copies
 *     (a launch running at that moment finishes on its own), so forget W before freeing it
 *     or writing to it; memory freed and reused at the same address while still declared
 *     would be read as the old weights. Declaring W again also drops its copies (for weights
 *     that changed), and keeps it declared.
 *   - Any number of pointers may be declared per op (one per layer of a model). Declaring,
 *     forgetting and launching may happen from any threads at once.
 *
 * This header is valid C99 and C++. */
#ifndef DIETCODE_PACK_ABI_H_
#define DIETCODE_PACK_ABI_H_

#include <stdint.h>

/* Marks the exported symbols. Packs are built with -fvisibility=hidden, so only what carries
 * this macro is visible; a consumer may predefine it (e.g. empty) before including. */
#ifndef DIETCODE_API
#if defined(__GNUC__) || defined(__clang__)
#define DIETCODE_API __attribute__((visibility("default")))
#else
#define DIETCODE_API
#endif
#endif

#define DIETCODE_ABI_VERSION 4

#ifdef __cplusplus
extern "C" {
#endif

enum {
  DIETCODE_OK = 0,
  DIETCODE_ERR_INVALID_ARGUMENT = 1, /* null pointer, wrong count, value < 1, misalignment */
  DIETCODE_ERR_UNKNOWN_OP = 2,
  DIETCODE_ERR_NO_DEVICE = 3,        /* no driver or no GPU */
  DIETCODE_ERR_ARCH_MISMATCH = 4,    /* no CUBIN or PTX for this GPU; no ISA level for this CPU */
  DIETCODE_ERR_CUDA = 5              /* a driver call failed; see last_error */
};

/* DIETCODE_ABI_VERSION of the pack. Versions only add (see VERSIONS): a caller needs
 * `dietcode_abi_version() >= N`, N being the version that added the newest function it calls. */
DIETCODE_API int dietcode_abi_version(void);

/* JSON: pack name, tool version, archs, shape variables with tuned ranges, ops with dtype,
 * arg list and kernels (id, micro-kernel params). See MANIFEST above. */
DIETCODE_API const char* dietcode_manifest(void);

/* Thread-local message for the last failure on the calling thread. */
DIETCODE_API const char* dietcode_last_error(void);

/* Kernel id that the dispatcher picks for these shape-variable values (in manifest order);
 * negative DIETCODE_ERR_* on error. Pure host code: no GPU needed. Answers for the newest arch
 * the pack was built for (see ARCHITECTURES). */
DIETCODE_API int dietcode_select(const char* op, const int64_t* shape_values, int n_values);

/* The same for a GPU of compute capability `cc` (major * 10 + minor: 80 for an A100, 90 for an
 * H100): the kernel dietcode_launch runs there. -DIETCODE_ERR_ARCH_MISMATCH when the pack has
 * no CUBIN or PTX that runs on it. Pure host code. For a CPU pack `cc` is the x86-64 level
 * (3: x86-64-v3, 4: x86-64-v4), and the mismatch is a level below every one of the pack's.
 * Since ABI 2. */
DIETCODE_API int dietcode_select_arch(const char* op, int cc, const int64_t* shape_values,
                                      int n_values);

/* Launch op on `stream` (a CUstream/cudaStream_t, NULL = default stream) in the current CUDA
 * context. args: device pointers in the op's argument order. Arguments are checked before any
 * GPU work. Returns DIETCODE_OK or a DIETCODE_ERR_* code. A CPU pack takes host pointers and a
 * NULL stream and returns when the op is done (see CPU PACKS). */
DIETCODE_API int dietcode_launch(const char* op, void* const* args, int n_args,
                                 const int64_t* shape_values, int n_values, void* stream);

/* The size of a CPU pack's thread pool, the calling thread included: n >= 1 threads, or 0 for
 * every core the process may run on (the default). Negative: DIETCODE_ERR_INVALID_ARGUMENT.
 * Takes effect for the launches that start after it returns; launches already running finish
 * on the pool they started on. A GPU pack accepts it (the same check) and ignores it.
 * Since ABI 3. */
DIETCODE_API int dietcode_set_num_threads(int n);

/* The number of threads a CPU pack's launches run on (what dietcode_set_num_threads set, or the
 * number of usable cores); 0 for a GPU pack, which has no pool. Since ABI 3. */
DIETCODE_API int dietcode_num_threads(void);

/* Declares that `data`, passed as argument `arg` of `op`, holds weights that stay unchanged
 * until dietcode_forget_constant(op, arg, data) (see CONSTANT WEIGHTS). `arg` must be the op's
 * weights argument (1 for dense and conv2d; batch_matmul ops have none) and `data` non-NULL:
 * DIETCODE_ERR_INVALID_ARGUMENT otherwise, DIETCODE_ERR_UNKNOWN_OP for an unknown op. Nothing
 * is read until a launch. Since ABI 4. */
DIETCODE_API int dietcode_declare_constant(const char* op, int arg, const void* data);

/* Ends a declaration and frees what the pack kept for it. DIETCODE_ERR_INVALID_ARGUMENT when
 * `data` was not declared for (op, arg). Since ABI 4. */
DIETCODE_API int dietcode_forget_constant(const char* op, int arg, const void* data);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DIETCODE_PACK_ABI_H_ */
