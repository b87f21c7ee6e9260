// oneDNN 2.x (libdnnl.so.2, Debian libdnnl2), reached at run time and never linked: the CPU
// baseline `dietcode bench` times fp32 GEMMs and convolutions against (onednn_baseline.cc).
//
// Why dlopen: most dietcode installations never bench on the CPU, and oneDNN drags in
// libOpenCL and libgomp. It is opened with RTLD_LOCAL (OpenBLAS, opened beside it, exports
// BLAS symbols too), from $DIETCODE_ONEDNN_LIBRARY when that is set, else by soname.
//
// No oneDNN header is needed to build dietcode, so the declarations below are our own, written
// against the 2.x C API (oneapi/dnnl/dnnl.h of 2.6.3). In 2.x a memory descriptor and an
// operation descriptor are plain structs the caller owns (dnnl_memory_desc_t is 696 bytes,
// dnnl_matmul_desc_t 2800, dnnl_convolution_desc_t 5976 in 2.6.3); the code only ever passes
// pointers to them, so they are opaque buffers here, sized with about 3x margin for other 2.x.
// oneDNN 3.x replaced them with handles and removed the *_desc_init functions: a 3.x library
// has no dnnl_matmul_desc_init and is refused with one line. Enumerators are plain ints with
// the 2.x values (the C enums are int-sized).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dietcode {

namespace dnnl {

using status_t = int;
using dims_t = int64_t[12];  // DNNL_MAX_NDIMS

// Opaque storage for dnnl_memory_desc_t / dnnl_{matmul,convolution}_desc_t (see above).
struct alignas(64) MemoryDesc {
  unsigned char bytes[2048];
};
struct alignas(64) OpDesc {
  unsigned char bytes[16384];
};

struct ExecArg {
  int arg;
  void* memory;
};

struct Version {  // dnnl_version_t
  int major, minor, patch;
  const char* hash;
  unsigned cpu_runtime, gpu_runtime;
};

using engine_t = void*;
using stream_t = void*;
using memory_t = void*;
using primitive_t = void*;
using primitive_desc_t = void*;
using primitive_attr_t = void*;
using post_ops_t = void*;

// Enumerators (dnnl_types.h, 2.x).
constexpr status_t success = 0, unimplemented = 3;
constexpr int f32 = 3;                                         // dnnl_data_type_t
constexpr int tag_any = 1, tag_ab = 3, tag_abc = 4, tag_acdb = 20;  // dnnl_format_tag_t
constexpr int cpu = 1;                                         // dnnl_engine_kind_t
constexpr unsigned stream_in_order = 1;                        // dnnl_stream_flags_t
constexpr int forward_inference = 96;                          // dnnl_prop_kind_t
constexpr int convolution_direct = 1, convolution_auto = 3;    // dnnl_alg_kind_t
constexpr int eltwise_relu = 31, eltwise_gelu_tanh = 207;
constexpr int query_impl_info_str = 8, query_src_md = 129, query_weights_md = 131,
              query_dst_md = 133;  // dnnl_query_t
constexpr int arg_src = 1, arg_weights = 33, arg_bias = 41, arg_dst = 17, arg_from = 1,
              arg_to = 17;  // DNNL_ARG_*
constexpr unsigned runtime_omp = 2;  // DNNL_RUNTIME_OMP
constexpr int fpmath_strict = 0;     // dnnl_fpmath_mode_t

}  // namespace dnnl

struct OnednnApi {
  std::string path;  // the file actually opened
  dnnl::Version version{};

  const dnnl::Version* (*dnnl_version)() = nullptr;
  dnnl::status_t (*dnnl_engine_create)(dnnl::engine_t*, int kind, size_t index) = nullptr;
  dnnl::status_t (*dnnl_engine_destroy)(dnnl::engine_t) = nullptr;
  dnnl::status_t (*dnnl_stream_create)(dnnl::stream_t*, dnnl::engine_t, unsigned flags) = nullptr;
  dnnl::status_t (*dnnl_stream_wait)(dnnl::stream_t) = nullptr;
  dnnl::status_t (*dnnl_stream_destroy)(dnnl::stream_t) = nullptr;

  dnnl::status_t (*dnnl_memory_desc_init_by_strides)(dnnl::MemoryDesc*, int ndims,
                                                     const int64_t* dims, int data_type,
                                                     const int64_t* strides) = nullptr;
  dnnl::status_t (*dnnl_memory_desc_init_by_tag)(dnnl::MemoryDesc*, int ndims,
                                                 const int64_t* dims, int data_type,
                                                 int tag) = nullptr;
  int (*dnnl_memory_desc_equal)(const dnnl::MemoryDesc*, const dnnl::MemoryDesc*) = nullptr;
  size_t (*dnnl_memory_desc_get_size)(const dnnl::MemoryDesc*) = nullptr;
  dnnl::status_t (*dnnl_memory_create)(dnnl::memory_t*, const dnnl::MemoryDesc*, dnnl::engine_t,
                                       void* handle) = nullptr;
  dnnl::status_t (*dnnl_memory_destroy)(dnnl::memory_t) = nullptr;

  dnnl::status_t (*dnnl_matmul_desc_init)(dnnl::OpDesc*, const dnnl::MemoryDesc* src,
                                          const dnnl::MemoryDesc* weights,
                                          const dnnl::MemoryDesc* bias,
                                          const dnnl::MemoryDesc* dst) = nullptr;
  dnnl::status_t (*dnnl_dilated_convolution_forward_desc_init)(
      dnnl::OpDesc*, int prop_kind, int alg_kind, const dnnl::MemoryDesc* src,
      const dnnl::MemoryDesc* weights, const dnnl::MemoryDesc* bias, const dnnl::MemoryDesc* dst,
      const int64_t* strides, const int64_t* dilates, const int64_t* padding_l,
      const int64_t* padding_r) = nullptr;
  dnnl::status_t (*dnnl_reorder_primitive_desc_create)(dnnl::primitive_desc_t*,
                                                       const dnnl::MemoryDesc* src,
                                                       dnnl::engine_t src_engine,
                                                       const dnnl::MemoryDesc* dst,
                                                       dnnl::engine_t dst_engine,
                                                       dnnl::primitive_attr_t attr) = nullptr;

  dnnl::status_t (*dnnl_primitive_attr_create)(dnnl::primitive_attr_t*) = nullptr;
  dnnl::status_t (*dnnl_primitive_attr_destroy)(dnnl::primitive_attr_t) = nullptr;
  dnnl::status_t (*dnnl_primitive_attr_set_post_ops)(dnnl::primitive_attr_t,
                                                     dnnl::post_ops_t) = nullptr;
  dnnl::status_t (*dnnl_primitive_attr_set_fpmath_mode)(dnnl::primitive_attr_t, int) = nullptr;
  dnnl::status_t (*dnnl_post_ops_create)(dnnl::post_ops_t*) = nullptr;
  dnnl::status_t (*dnnl_post_ops_destroy)(dnnl::post_ops_t) = nullptr;
  dnnl::status_t (*dnnl_post_ops_append_eltwise)(dnnl::post_ops_t, float scale, int alg_kind,
                                                 float alpha, float beta) = nullptr;

  dnnl::status_t (*dnnl_primitive_desc_create)(dnnl::primitive_desc_t*, const dnnl::OpDesc*,
                                               dnnl::primitive_attr_t, dnnl::engine_t,
                                               dnnl::primitive_desc_t hint) = nullptr;
  dnnl::status_t (*dnnl_primitive_desc_destroy)(dnnl::primitive_desc_t) = nullptr;
  dnnl::status_t (*dnnl_primitive_desc_query)(dnnl::primitive_desc_t, int what, int index,
                                              void* result) = nullptr;
  const dnnl::MemoryDesc* (*dnnl_primitive_desc_query_md)(dnnl::primitive_desc_t, int what,
                                                          int index) = nullptr;
  dnnl::status_t (*dnnl_primitive_create)(dnnl::primitive_t*, dnnl::primitive_desc_t) = nullptr;
  dnnl::status_t (*dnnl_primitive_destroy)(dnnl::primitive_t) = nullptr;
  dnnl::status_t (*dnnl_primitive_execute)(dnnl::primitive_t, dnnl::stream_t, int nargs,
                                           const dnnl::ExecArg* args) = nullptr;

  // From the libgomp oneDNN loads (looked up through oneDNN's handle, so the same copy it
  // uses); null when oneDNN was built for another threading runtime.
  void (*omp_set_num_threads)(int) = nullptr;
  int (*omp_get_max_threads)() = nullptr;

  // The instruction set oneDNN's CPU kernels use, a dnnl_cpu_isa_t (ONEDNN_MAX_CPU_ISA, read
  // when oneDNN first runs, caps it); null where the library does not export it.
  int (*dnnl_get_effective_cpu_isa)() = nullptr;

  // "oneDNN 2.6.3"
  std::string label() const;
  // "avx512_core", "avx2", ... (oneDNN's own names); "" when unknown.
  std::string effective_isa() const;
};

// $DIETCODE_ONEDNN_LIBRARY alone when set (and not empty), else {"libdnnl.so.2"}.
std::vector<std::string> onednn_candidates();

// Opens the first loadable file and resolves every function; false with *why set to one line,
// e.g. "no oneDNN: libdnnl.so.2: cannot open shared object file: No such file or directory;
// install the Debian package libdnnl2 (or set DIETCODE_ONEDNN_LIBRARY)", or "no oneDNN:
// /x/libdnnl.so.3 has no dnnl_matmul_desc_init (dietcode needs the oneDNN 2.x C API,
// libdnnl.so.2)".
bool load_onednn(const std::vector<std::string>& files, OnednnApi* out, std::string* why);

// The process-wide instance from onednn_candidates(), loaded once; EnvironmentError with the
// line above when it cannot be loaded.
const OnednnApi& onednn_api();

// "dnnl_unimplemented" and the like.
std::string onednn_status_name(dnnl::status_t status);

// Throws EnvironmentError "oneDNN: WHAT: dnnl_..." unless success.
void check_onednn(dnnl::status_t status, const std::string& what);

}  // namespace dietcode
