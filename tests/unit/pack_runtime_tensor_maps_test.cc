// The tensor-map view of a TMA kernel's operands (pack_tensor_maps.h), shared by the pack
// runtime and the measurer: what it tells cuTensorMapEncodeTiled for dense and batched calls,
// and every layout it refuses, with the reason a pack's error line repeats.
#include <gtest/gtest.h>

#include <string>

#include "pack/runtime/pack_tensor_maps.h"

namespace dietcode {
namespace {

using dietcode_pack::kTensorMapA;
using dietcode_pack::kTensorMapB;
using dietcode_pack::tensor_map_layout;
using dietcode_pack::TensorMapLayout;

const void* at(uintptr_t address) { return reinterpret_cast<const void*>(address); }

DietcodeArgs dense(long long m, long long n, long long k) {
  DietcodeArgs a{};
  a.a = at(0x10000);
  a.b = at(0x20000);
  a.batch = 1, a.m = m, a.n = n, a.k = k;
  a.stride_a = m * k, a.stride_b = n * k, a.stride_c = m * n;
  return a;
}

// The reason, or "" when the layout is accepted.
std::string refusal(int which, const DietcodeArgs& a, int box_rows = 128, int box_k = 64,
                    int elem_bytes = 2) {
  TensorMapLayout l;
  const char* why = tensor_map_layout(which, a, box_rows, box_k, elem_bytes, &l);
  return why ? why : "";
}

TEST(PackTensorMaps, DenseOperandsAreKByRowsWithOnePackedBatchElement) {
  DietcodeArgs a = dense(100, 300, 520);
  TensorMapLayout l;
  ASSERT_EQ(tensor_map_layout(kTensorMapA, a, 128, 64, 2, &l), nullptr);
  EXPECT_EQ(l.base, a.a);
  EXPECT_EQ(l.dims[0], 520u);
  EXPECT_EQ(l.dims[1], 100u);
  EXPECT_EQ(l.dims[2], 1u);
  EXPECT_EQ(l.strides[0], 1040u);
  EXPECT_EQ(l.strides[1], 1040u * 100);  // batch == 1: the packed size, never read
  EXPECT_EQ(l.box[0], 64u);
  EXPECT_EQ(l.box[1], 128u);
  EXPECT_EQ(l.box[2], 1u);
  ASSERT_EQ(tensor_map_layout(kTensorMapB, a, 256, 64, 2, &l), nullptr);
  EXPECT_EQ(l.base, a.b);
  EXPECT_EQ(l.dims[1], 300u);
  EXPECT_EQ(l.strides[0], 1040u);
  EXPECT_EQ(l.strides[1], 1040u * 300);
  EXPECT_EQ(l.box[1], 256u);
}

TEST(PackTensorMaps, BatchOneIgnoresTheBatchStride) {
  DietcodeArgs a = dense(8, 8, 64);
  a.stride_a = 0;  // a broadcast operand's stride: meaningless with one batch element
  a.stride_b = 7;  // not a multiple of 8 elements: never read either
  TensorMapLayout l;
  ASSERT_EQ(tensor_map_layout(kTensorMapA, a, 64, 64, 2, &l), nullptr);
  EXPECT_EQ(l.strides[1], 8u * 128);
  ASSERT_EQ(tensor_map_layout(kTensorMapB, a, 64, 64, 2, &l), nullptr);
  EXPECT_EQ(l.strides[1], 8u * 128);
}

TEST(PackTensorMaps, BatchedOperandsStepByTheirOwnStrides) {
  DietcodeArgs a = dense(30, 40, 64);
  a.batch = 12;
  a.stride_a = 30 * 64 + 64;  // padded batch elements
  a.stride_b = 40 * 64;
  TensorMapLayout l;
  ASSERT_EQ(tensor_map_layout(kTensorMapA, a, 64, 64, 2, &l), nullptr);
  EXPECT_EQ(l.dims[2], 12u);
  EXPECT_EQ(l.strides[1], (30u * 64 + 64) * 2);
  ASSERT_EQ(tensor_map_layout(kTensorMapB, a, 64, 64, 2, &l), nullptr);
  EXPECT_EQ(l.dims[1], 40u);
  EXPECT_EQ(l.strides[1], 40u * 64 * 2);
}

TEST(PackTensorMaps, EveryLayoutTheTmaCannotAddressIsRefusedWithItsReason) {
  const DietcodeArgs ok = dense(64, 64, 64);
  EXPECT_EQ(refusal(kTensorMapA, ok), "");
  EXPECT_EQ(refusal(2, ok), "no such operand");
  EXPECT_EQ(refusal(kTensorMapA, ok, 0), "box rows outside 1..256");
  EXPECT_EQ(refusal(kTensorMapA, ok, 257), "box rows outside 1..256");
  EXPECT_EQ(refusal(kTensorMapA, ok, 256), "");
  const std::string span = "box row is not one 128-byte swizzle span of 16-bit elements";
  EXPECT_EQ(refusal(kTensorMapA, ok, 128, 32), span);
  EXPECT_EQ(refusal(kTensorMapA, ok, 128, 32, 4), span);  // 128 bytes, but not 16-bit
  DietcodeArgs a = ok;
  a.k = 0;
  EXPECT_EQ(refusal(kTensorMapA, a), "an extent is not positive");
  a = ok, a.n = -1;
  EXPECT_EQ(refusal(kTensorMapB, a), "an extent is not positive");
  EXPECT_EQ(refusal(kTensorMapA, a), "");  // A does not involve N
  a = ok, a.batch = 0;
  EXPECT_EQ(refusal(kTensorMapA, a), "an extent is not positive");
  a = ok, a.m = 1LL << 32;
  EXPECT_EQ(refusal(kTensorMapA, a), "an extent is 2^32 or more");
  a = ok, a.m = (1LL << 32) - 8;
  EXPECT_EQ(refusal(kTensorMapA, a), "");
  a = ok, a.a = at(0x10008);
  EXPECT_EQ(refusal(kTensorMapA, a), "the operand is not 16-byte aligned");
  a = ok, a.b = at(0x20002);
  EXPECT_EQ(refusal(kTensorMapB, a), "the operand is not 16-byte aligned");
  a = ok, a.k = 60;
  EXPECT_EQ(refusal(kTensorMapA, a), "rows are not a multiple of 16 bytes apart (K % 8 != 0)");
  // Rows 2^40 bytes apart would need K >= 2^39 16-bit elements: the extent rule comes first.
  a = ok, a.k = 1LL << 39;
  EXPECT_EQ(refusal(kTensorMapA, a), "an extent is 2^32 or more");
  a = ok, a.batch = 2, a.stride_a = 0;
  EXPECT_EQ(refusal(kTensorMapA, a), "batch elements share storage (stride 0)");
  a = ok, a.batch = 2, a.stride_a = 64 * 64 + 4;
  EXPECT_EQ(refusal(kTensorMapA, a), "batch elements are not a multiple of 16 bytes apart");
  a = ok, a.batch = 2, a.stride_b = 1LL << 39;
  EXPECT_EQ(refusal(kTensorMapB, a), "batch elements are 2^40 bytes or more apart");
  a = ok, a.m = 1LL << 25, a.k = 1LL << 14;  // one batch element of 2^40 bytes, batch 1
  EXPECT_EQ(refusal(kTensorMapA, a), "batch elements are 2^40 bytes or more apart");
}

// What every map is encoded with, whatever the layout: a recording stand-in for the driver.
struct Recorded {
  CUtensorMapDataType type;
  cuuint32_t rank;
  void* address;
  cuuint64_t dims[3], strides[2];
  cuuint32_t box[3], element_strides[3];
  CUtensorMapInterleave interleave;
  CUtensorMapSwizzle swizzle;
  CUtensorMapL2promotion l2;
  CUtensorMapFloatOOBfill oob;
} g_recorded;

CUresult record(CUtensorMap*, CUtensorMapDataType type, cuuint32_t rank, void* address,
                const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                const cuuint32_t* element_strides, CUtensorMapInterleave interleave,
                CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                CUtensorMapFloatOOBfill oob) {
  g_recorded = {type,
                rank,
                address,
                {dims[0], dims[1], dims[2]},
                {strides[0], strides[1]},
                {box[0], box[1], box[2]},
                {element_strides[0], element_strides[1], element_strides[2]},
                interleave,
                swizzle,
                l2,
                oob};
  return CUDA_ERROR_INVALID_VALUE;  // passed through to the caller
}

TEST(PackTensorMaps, EncodesSixteenBitElementsWithTheSwizzleAndZeroFill) {
  DietcodeArgs a = dense(100, 300, 520);
  TensorMapLayout l;
  ASSERT_EQ(tensor_map_layout(kTensorMapB, a, 256, 64, 2, &l), nullptr);
  CUtensorMap map;
  EXPECT_EQ(dietcode_pack::encode_tensor_map(record, l, &map), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(g_recorded.type, CU_TENSOR_MAP_DATA_TYPE_UINT16);
  EXPECT_EQ(g_recorded.rank, 3u);
  EXPECT_EQ(g_recorded.address, a.b);
  EXPECT_EQ(g_recorded.dims[0], 520u);
  EXPECT_EQ(g_recorded.dims[1], 300u);
  EXPECT_EQ(g_recorded.dims[2], 1u);
  EXPECT_EQ(g_recorded.strides[0], 1040u);
  EXPECT_EQ(g_recorded.strides[1], 1040u * 300);
  EXPECT_EQ(g_recorded.box[0], 64u);
  EXPECT_EQ(g_recorded.box[1], 256u);
  EXPECT_EQ(g_recorded.box[2], 1u);
  for (cuuint32_t s : g_recorded.element_strides) EXPECT_EQ(s, 1u);
  EXPECT_EQ(g_recorded.interleave, CU_TENSOR_MAP_INTERLEAVE_NONE);
  EXPECT_EQ(g_recorded.swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
  EXPECT_EQ(g_recorded.l2, CU_TENSOR_MAP_L2_PROMOTION_L2_256B);
  EXPECT_EQ(g_recorded.oob, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

// Both maps of a call at once: A boxed by the tile's rows, B by its columns, and the operand a
// refusal is about.
TEST(PackTensorMaps, BothMapsOfACallAndTheOperandARefusalIsAbout) {
  DietcodeArgs a = dense(100, 300, 520);
  TensorMapLayout l[dietcode_pack::kTensorMaps];
  int refused = -1;
  ASSERT_EQ(dietcode_pack::gemm_tensor_map_layouts(a, 128, 64, 64, 2, l, &refused), nullptr);
  EXPECT_EQ(refused, -1);
  EXPECT_EQ(l[kTensorMapA].base, a.a);
  EXPECT_EQ(l[kTensorMapA].box[1], 128u);
  EXPECT_EQ(l[kTensorMapB].base, a.b);
  EXPECT_EQ(l[kTensorMapB].box[1], 64u);
  a.b = at(0x20008);
  EXPECT_STREQ(dietcode_pack::gemm_tensor_map_layouts(a, 128, 64, 64, 2, l, &refused),
               "the operand is not 16-byte aligned");
  EXPECT_EQ(refused, kTensorMapB);
  a.a = at(0x10002);
  EXPECT_STREQ(dietcode_pack::gemm_tensor_map_layouts(a, 128, 64, 64, 2, l, &refused),
               "the operand is not 16-byte aligned");
  EXPECT_EQ(refused, kTensorMapA);
}

}  // namespace
}  // namespace dietcode
