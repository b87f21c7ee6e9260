/* TEST DOUBLE of the driver's tensor maps (see fake_cuda.c): cuTensorMapEncodeTiled checks its
 * arguments as the driver API documents (CUDA 12.0+, "Tensor Map Object Management") and
 * writes what it was told into the map's 128 opaque bytes, in a layout of its own; a launch of
 * a kernel that takes tensor maps reads them back (fake_tensor_map_decode), so a test can see
 * the maps a program passed (fake_cuda_last_tensor_maps, fake_cuda_stats.h).
 *
 * How many parameters a kernel takes comes from its image, as the driver learns it: in a CUBIN,
 * the EIATTR_KPARAM_INFO records of the section .nv.info.<entry>; in PTX text, the
 * <entry>_param_<i> names of its .entry line. */
#define _GNU_SOURCE /* memmem */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fake_cuda_internal.h"
#include "fake_cuda_stats.h"

/* The double's encoding of a map; the first word says it is one. */
enum { kTensorMapMagic = 0x544d4150 };
struct encoded_map {
  uint32_t magic;
  uint8_t rank, data_type, interleave, swizzle, l2_promotion, oob_fill;
  uint8_t box_minus_1[5]; /* boxDim is 1..256 */
  uint8_t element_strides[5];
  uint64_t base;
  uint64_t dims[5];
  uint64_t strides[4];
};
_Static_assert(sizeof(struct encoded_map) <= sizeof(CUtensorMap), "a map holds 128 bytes");

static int element_bytes(CUtensorMapDataType t) {
  switch (t) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8:
      return 1;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
      return 2;
    case CU_TENSOR_MAP_DATA_TYPE_UINT32:
    case CU_TENSOR_MAP_DATA_TYPE_INT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
      return 4;
    case CU_TENSOR_MAP_DATA_TYPE_UINT64:
    case CU_TENSOR_MAP_DATA_TYPE_INT64:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
      return 8;
    default:
      return 0; /* not one of the CUDA 12.0 types */
  }
}

static int is_float(CUtensorMapDataType t) {
  return t >= CU_TENSOR_MAP_DATA_TYPE_FLOAT16 && t <= CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ;
}

static CUresult encode_tiled(CUtensorMap* map, CUtensorMapDataType data_type, cuuint32_t rank,
                             void* address, const cuuint64_t* dims, const cuuint64_t* strides,
                             const cuuint32_t* box, const cuuint32_t* element_strides,
                             CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                             CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
  FAKE_SHUT_DOWN_GUARD();
  int bytes = element_bytes(data_type);
  if (!map || (uintptr_t)map % 64 != 0 || !bytes) return CUDA_ERROR_INVALID_VALUE;
  if ((unsigned)interleave > CU_TENSOR_MAP_INTERLEAVE_32B ||
      (unsigned)swizzle > CU_TENSOR_MAP_SWIZZLE_128B ||
      (unsigned)l2 > CU_TENSOR_MAP_L2_PROMOTION_L2_256B ||
      (unsigned)oob > CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
    return CUDA_ERROR_INVALID_VALUE;
  if (rank < 1 || rank > 5 || (interleave != CU_TENSOR_MAP_INTERLEAVE_NONE && rank < 3))
    return CUDA_ERROR_INVALID_VALUE;
  if (!dims || !box || !element_strides || (rank > 1 && !strides)) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t align = interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
  if (!address || (uintptr_t)address % align != 0) return CUDA_ERROR_INVALID_VALUE;
  for (cuuint32_t i = 0; i < rank; ++i) {
    if (dims[i] == 0 || dims[i] > ((uint64_t)1 << 32)) return CUDA_ERROR_INVALID_VALUE;
    if (box[i] == 0 || box[i] > 256) return CUDA_ERROR_INVALID_VALUE;
    if (element_strides[i] == 0 || element_strides[i] > 8) return CUDA_ERROR_INVALID_VALUE;
  }
  for (cuuint32_t i = 0; i + 1 < rank; ++i)
    if (strides[i] % align != 0 || strides[i] >= ((uint64_t)1 << 40))
      return CUDA_ERROR_INVALID_VALUE;
  const uint64_t inner = (uint64_t)box[0] * (uint64_t)bytes;
  if (interleave == CU_TENSOR_MAP_INTERLEAVE_NONE) {
    if (inner % 16 != 0) return CUDA_ERROR_INVALID_VALUE;
    static const uint64_t span[] = {0, 32, 64, 128}; /* by CUtensorMapSwizzle */
    if (swizzle != CU_TENSOR_MAP_SWIZZLE_NONE && inner > span[swizzle])
      return CUDA_ERROR_INVALID_VALUE;
  }
  if (oob == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA && !is_float(data_type))
    return CUDA_ERROR_INVALID_VALUE;

  struct encoded_map e;
  memset(&e, 0, sizeof e);
  e.magic = kTensorMapMagic;
  e.rank = (uint8_t)rank;
  e.data_type = (uint8_t)data_type;
  e.interleave = (uint8_t)interleave;
  e.swizzle = (uint8_t)swizzle;
  e.l2_promotion = (uint8_t)l2;
  e.oob_fill = (uint8_t)oob;
  e.base = (uint64_t)(uintptr_t)address;
  for (cuuint32_t i = 0; i < rank; ++i) {
    e.dims[i] = dims[i];
    e.box_minus_1[i] = (uint8_t)(box[i] - 1);
    e.element_strides[i] = (uint8_t)element_strides[i];
    if (i + 1 < rank) e.strides[i] = strides[i];
  }
  memset(map, 0, sizeof *map);
  memcpy(map, &e, sizeof e);
  atomic_fetch_add_explicit(&g_fake.tensor_map_encodes, 1, memory_order_relaxed);
  return CUDA_SUCCESS;
}

int fake_tensor_map_decode(const void* map, FakeTensorMap* out) {
  struct encoded_map e;
  if (!map) return 0;
  memcpy(&e, map, sizeof e);
  if (e.magic != kTensorMapMagic || e.rank < 1 || e.rank > 5) return 0;
  memset(out, 0, sizeof *out);
  out->rank = e.rank;
  out->data_type = e.data_type;
  out->interleave = e.interleave;
  out->swizzle = e.swizzle;
  out->l2_promotion = e.l2_promotion;
  out->oob_fill = e.oob_fill;
  out->base = e.base;
  for (int i = 0; i < e.rank; ++i) {
    out->dims[i] = e.dims[i];
    out->box[i] = (uint32_t)e.box_minus_1[i] + 1;
    out->element_strides[i] = e.element_strides[i];
    if (i + 1 < e.rank) out->strides[i] = e.strides[i];
  }
  return 1;
}

/* ---- how many parameters a kernel takes -------------------------------------------------- */

static uint64_t read_u64(const unsigned char* p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}
static uint32_t read_u32(const unsigned char* p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}
static uint16_t read_u16(const unsigned char* p) {
  uint16_t v;
  memcpy(&v, p, 2);
  return v;
}

/* EIATTR_KPARAM_INFO records in .nv.info.<name>; -1 when the image has no such section. Each
 * record of the section is a format byte, an attribute byte and either a 16-bit value or
 * (format 4, EIFMT_SVAL) a 16-bit size and that many bytes. */
static int cubin_params(const unsigned char* image, size_t size, const char* name) {
  if (size < 64) return -1;
  uint64_t shoff = read_u64(image + 0x28);
  uint16_t shentsize = read_u16(image + 0x3a), shnum = read_u16(image + 0x3c);
  uint16_t shstrndx = read_u16(image + 0x3e);
  if (shentsize < 0x40 || shstrndx >= shnum || shoff + (uint64_t)shnum * shentsize > size)
    return -1;
  const unsigned char* strtab_header = image + shoff + (uint64_t)shstrndx * shentsize;
  uint64_t str_off = read_u64(strtab_header + 0x18), str_size = read_u64(strtab_header + 0x20);
  if (str_off + str_size > size) return -1;
  char wanted[300];
  snprintf(wanted, sizeof wanted, ".nv.info.%s", name);
  for (uint16_t i = 0; i < shnum; ++i) {
    const unsigned char* sh = image + shoff + (uint64_t)i * shentsize;
    uint32_t name_off = read_u32(sh);
    uint64_t off = read_u64(sh + 0x18), len = read_u64(sh + 0x20);
    if (name_off >= str_size || off + len > size) continue;
    const char* section = (const char*)image + str_off + name_off;
    if (strnlen(section, str_size - name_off) == str_size - name_off || strcmp(section, wanted))
      continue;
    int params = 0;
    for (uint64_t at = 0; at + 4 <= len;) {
      uint8_t format = image[off + at], attribute = image[off + at + 1];
      uint64_t next = at + 4 + (format == 4 ? read_u16(image + off + at + 2) : 0);
      if (format == 4 && attribute == 0x17 /* EIATTR_KPARAM_INFO */) ++params;
      at = next;
    }
    return params;
  }
  return -1;
}

/* The <name>_param_<i> names in PTX text: the highest i + 1, or -1 when there are none. */
static int ptx_params(const unsigned char* image, size_t size, const char* name) {
  char prefix[300];
  int n = snprintf(prefix, sizeof prefix, "%s_param_", name), params = -1;
  const unsigned char* p = image;
  const unsigned char* end = image + size;
  while (n > 0 && (size_t)(end - p) > (size_t)n) {
    const unsigned char* hit = memmem(p, (size_t)(end - p), prefix, (size_t)n);
    if (!hit) break;
    int index = 0, digits = 0;
    for (const unsigned char* d = hit + n; d < end && *d >= '0' && *d <= '9'; ++d, ++digits)
      index = index * 10 + (*d - '0');
    if (digits && index + 1 > params) params = index + 1;
    p = hit + n;
  }
  return params;
}

int fake_function_params(const unsigned char* image, size_t size, const char* name) {
  if (size >= 5 && memcmp(image, "\177ELF", 4) == 0 && image[4] == 2)
    return cubin_params(image, size, name);
  return ptx_params(image, size, name);
}

/* ---- what launches received -------------------------------------------------------------- */

/* The calling thread's last successful launch: the maps it passed, decoded. */
static __thread FakeTensorMap t_last_maps[FAKE_MAX_TENSOR_MAPS];
static __thread int t_last_count;

CUresult fake_tensor_map_params(int n_params, void** params) {
  FakeTensorMap maps[FAKE_MAX_TENSOR_MAPS];
  int count = 0;
  /* Every parameter after DietcodeArgs is a tensor map (the only kind of kernel packs have). */
  for (int i = 1; i < n_params; ++i) {
    if (count == FAKE_MAX_TENSOR_MAPS || !params[i] ||
        !fake_tensor_map_decode(params[i], &maps[count]))
      return CUDA_ERROR_INVALID_VALUE; /* what a kernel would read is no tensor map */
    ++count;
  }
  memcpy(t_last_maps, maps, sizeof(FakeTensorMap) * (size_t)count);
  t_last_count = count;
  return CUDA_SUCCESS;
}

FAKE_EXPORT int fake_cuda_last_tensor_maps(FakeTensorMap* out, int max) {
  int n = t_last_count < max ? t_last_count : max;
  if (n > 0) memcpy(out, t_last_maps, sizeof(FakeTensorMap) * (size_t)n);
  return t_last_count;
}

FAKE_EXPORT int fake_cuda_decode_tensor_map(const void* map, FakeTensorMap* out) {
  return fake_tensor_map_decode(map, out);
}

void* fake_tensor_map_entry(const char* name) {
  return strcmp(name, "cuTensorMapEncodeTiled") == 0 ? (void*)encode_tiled : NULL;
}
