// The argument checks a kernel pack makes before any GPU work (pack_runtime_checks.h), on ops
// written here the way pack_source.cc generates them: the extent of each tensor (conv2d NHWC
// input and KRSC filter, batched operands, a bias), outputs that overlap inputs, conv2d
// geometry past 32 bits, and shape values past the cap.
#include "pack/runtime/pack_runtime_checks.h"
#include "pack/runtime/pack_runtime.h"  // a GPU pack's KernelDesc and launch geometry

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dietcode_pack {
namespace {

const char* const kConvArgs[] = {"X", "W", "Y"};
const char* const kConvVars[] = {"N", "H", "W", "C", "K", "R", "S"};

// conv2d, padding 1, stride 1, dilation 1, as pack_source.cc writes its shape function.
int conv_shape(const int64_t* v, DietcodeArgs* a) {
  const int64_t n = v[0], h = v[1], w = v[2], c = v[3], k = v[4], r = v[5], s = v[6];
  const int64_t p = (h + 2 - 1 * (r - 1) - 1) / 1 + 1, q = (w + 2 - 1 * (s - 1) - 1) / 1 + 1;
  a->batch = 1;
  a->conv_n = int(n), a->conv_h = int(h), a->conv_w = int(w), a->conv_c = int(c);
  a->conv_k = int(k), a->conv_r = int(r), a->conv_s = int(s), a->conv_p = int(p);
  a->conv_q = int(q);
  a->stride_h = a->stride_w = 1, a->pad_h = a->pad_w = 1, a->dilation_h = a->dilation_w = 1;
  a->m = n * p * q, a->n = k, a->k = r * s * c;
  a->stride_c = a->m * a->n;
  return 1;
}

const char* const kBmmArgs[] = {"A", "B", "bias", "Y"};
const char* const kBmmVars[] = {"B", "T"};

// batch_matmul [B,T,64] . [B,64,32] + bias[32].
int bmm_shape(const int64_t* v, DietcodeArgs* a) {
  a->batch = v[0], a->m = v[1], a->n = 32, a->k = 64;
  a->stride_a = v[1] * 64, a->stride_b = 64 * 32, a->stride_c = v[1] * 32;
  return 1;
}

int select_first(const int64_t*) { return 0; }
const ArchSelect kSelectFirst[] = {{90, false, select_first}};

const OpDesc kOps[] = {
    {"conv", kConvArgs, 3, -1, 1, 4, kConvVars, 7, kSelectFirst, 1, conv_shape, nullptr, 0},
    {"bmm", kBmmArgs, 4, 2, -1, 2, kBmmVars, 2, kSelectFirst, 1, bmm_shape, nullptr, 0},
};

}  // namespace

const PackDesc kPack = {"checks", "{}", kOps, 2};

namespace {

DietcodeArgs shape(const OpDesc& op, std::vector<int64_t> values) {
  DietcodeArgs a{};
  op.fill_shape(values.data(), &a);
  return a;
}

void* at(uintptr_t address) { return reinterpret_cast<void*>(address); }

TEST(PackRuntimeChecks, Conv2dTensorsAreNhwcInputKrscFilterAndNpqkOutput) {
  DietcodeArgs a = shape(kOps[0], {2, 8, 8, 4, 16, 3, 3});
  EXPECT_EQ(tensor_bytes(kOps[0], a, 0), 2 * 8 * 8 * 4 * 4);   // input
  EXPECT_EQ(tensor_bytes(kOps[0], a, 1), 16 * 3 * 3 * 4 * 4);  // filter
  EXPECT_EQ(tensor_bytes(kOps[0], a, 2), 2 * 8 * 8 * 16 * 4);  // output, P = Q = 8
  EXPECT_EQ(check_conv_geometry(kOps[0], a), DIETCODE_OK);
}

TEST(PackRuntimeChecks, AnOutputSharingEvenOneByteWithAnInputIsRefused) {
  DietcodeArgs a = shape(kOps[0], {2, 8, 8, 4, 16, 3, 3});
  void* apart[] = {at(0x10000), at(0x20000), at(0x30000)};
  EXPECT_EQ(check_extents(kOps[0], apart, a), DIETCODE_OK);
  void* touching[] = {at(0x10000), at(0x20000), at(0x20000 + 2304)};  // right after the filter
  EXPECT_EQ(check_extents(kOps[0], touching, a), DIETCODE_OK);
  void* last_byte[] = {at(0x10000), at(0x20000), at(0x20000 + 2303)};
  EXPECT_EQ(check_extents(kOps[0], last_byte, a), DIETCODE_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(g_last_error),
            "op conv: output Y (0x208ff, 8192 bytes) overlaps input W (0x20000, 2304 bytes)");
  void* before[] = {at(0x10000), at(0x20000), at(0x10000 - 8192 + 8)};  // Y ends inside X
  EXPECT_EQ(check_extents(kOps[0], before, a), DIETCODE_ERR_INVALID_ARGUMENT);
}

TEST(PackRuntimeChecks, ABiasAndBatchedOperandsHaveTheirOwnExtents) {
  DietcodeArgs a = shape(kOps[1], {3, 10});
  EXPECT_EQ(tensor_bytes(kOps[1], a, 0), 3 * 10 * 64 * 2);
  EXPECT_EQ(tensor_bytes(kOps[1], a, 1), 3 * 64 * 32 * 2);
  EXPECT_EQ(tensor_bytes(kOps[1], a, 2), 32 * 2);
  EXPECT_EQ(tensor_bytes(kOps[1], a, 3), 3 * 10 * 32 * 2);
  void* on_bias[] = {at(0x100000), at(0x200000), at(0x300000), at(0x300000 - 1920 + 2)};
  EXPECT_EQ(check_extents(kOps[1], on_bias, a), DIETCODE_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(g_last_error),
            "op bmm: output Y (0x2ff882, 1920 bytes) overlaps input bias (0x300000, 64 bytes)");
}

TEST(PackRuntimeChecks, Conv2dGeometryPast32BitsOrANegativeOutputIsRefused) {
  // H = 2^32 + 8 truncates to 8 in the 32-bit field; M still counts the real rows.
  DietcodeArgs big = shape(kOps[0], {1, (int64_t(1) << 32) + 8, 8, 4, 16, 3, 3});
  EXPECT_EQ(check_conv_geometry(kOps[0], big), DIETCODE_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(g_last_error),
            "op conv: these shape values give a conv2d dimension past 32 bits");
  // A 9x9 filter on a 4x4 input with padding 1: P = Q = -2, so M = N * P * Q is positive.
  DietcodeArgs negative = shape(kOps[0], {1, 4, 4, 4, 16, 9, 9});
  EXPECT_GT(negative.m, 0);
  EXPECT_EQ(check_conv_geometry(kOps[0], negative), DIETCODE_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(g_last_error),
            "op conv: these shape values give a negative output size (P -2, Q -2)");
}

TEST(PackRuntimeChecks, ShapeValuesStopAt2To31AndExtentsAtTheEndOfMemory) {
  int64_t values[] = {2, 2147483648LL};
  EXPECT_EQ(check_values(kOps[1], values, 2), DIETCODE_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(g_last_error), "op bmm: shape value T = 2147483648 is above 2147483647");
  values[1] = 2147483647;
  EXPECT_EQ(check_values(kOps[1], values, 2), DIETCODE_OK);
  DietcodeArgs a = shape(kOps[1], {3, 10});
  void* top[] = {at(UINTPTR_MAX - 1023), at(0x200000), at(0x300000), at(0x400000)};
  EXPECT_EQ(check_extents(kOps[1], top, a), DIETCODE_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(g_last_error),
            "op bmm: argument A (0xfffffffffffffc00, 3840 bytes) runs past the end of the "
            "address space");
}

TEST(PackRuntimeChecks, TheLaunchArithmeticSaysTooLargeInsteadOfOverflowing) {
  KernelDesc k{};
  k.tile_m = 64, k.tile_n = 64, k.split_k = 4, k.reduce_threads = 256;
  DietcodeArgs a{};
  a.batch = 1, a.m = INT64_MAX, a.n = INT64_MAX, a.k = 8;
  int64_t grid[3];
  EXPECT_FALSE(main_grid(k, a, grid));  // N / 64 tiles is past 2^31 - 1
  EXPECT_EQ(grid[1], kMaxGridYZ);
  EXPECT_FALSE(reduce_grid(k, a, grid));
  EXPECT_EQ(workspace_bytes(k, a), -1);
  a.batch = INT64_MAX / 2, a.m = 1, a.n = 1;
  EXPECT_FALSE(main_grid(k, a, grid));  // batch * split_k overflows
  EXPECT_EQ(ceil_div(INT64_MAX, 2), INT64_MAX / 2 + 1);
}

TEST(PackRuntimeChecks, UnknownOpsAreNamedWithThePacksOps) {
  EXPECT_EQ(find_op("bmm"), &kOps[1]);
  EXPECT_EQ(unknown_op("gemm"), DIETCODE_ERR_UNKNOWN_OP);
  EXPECT_EQ(std::string(g_last_error), "unknown op 'gemm' (pack checks has: conv, bmm)");
  EXPECT_TRUE(aligned(at(0x1010), 16));
  EXPECT_FALSE(aligned(at(0x1018), 16));
  EXPECT_TRUE(aligned(at(0x1014), 12));  // not a power of two: still exact
}

}  // namespace
}  // namespace dietcode_pack
