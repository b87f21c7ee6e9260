// cuTensorMapEncodeTiled in the measurer's driver table: optional (a driver without it still
// loads, with the entry null), fetched at the CUDA 12.0 ABI; and the stand-in driver's version
// of it (a TEST DOUBLE, tests/data/fake_driver) refuses what the driver API documents as invalid
// and keeps what it was told, which is what the pack tests read back.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "cuda/driver.h"
#include "data/fake_driver/fake_cuda_stats.h"
#include "pack/runtime/pack_tensor_maps.h"

namespace dietcode {
namespace {

using ::testing::HasSubstr;

const char* const kFake = DIETCODE_FAKE_CUDA;

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

std::string fake_requests() {
  void* handle = dlopen(kFake, RTLD_NOW | RTLD_NOLOAD);
  if (!handle) return "";
  auto take = reinterpret_cast<const char* (*)()>(dlsym(handle, "fake_cuda_take_requests"));
  std::string requests = take ? take() : "";
  dlclose(handle);
  return requests;
}

TEST(DriverTensorMap, IsFetchedAtTheCuda12AbiAndOptional) {
  ScopedEnv kernels("FAKE_CUDA_KERNELS", "1");
  fake_requests();
  Driver d;
  std::string why;
  ASSERT_TRUE(load_driver(kFake, &d, &why)) << why;
  EXPECT_NE(d.cuTensorMapEncodeTiled, nullptr);
  EXPECT_THAT(fake_requests(), HasSubstr("cuTensorMapEncodeTiled@12000;"));

  ScopedEnv old_driver("FAKE_CUDA_MISSING", "cuTensorMapEncodeTiled");
  Driver older;
  ASSERT_TRUE(load_driver(kFake, &older, &why)) << why;
  EXPECT_EQ(why, "");
  EXPECT_EQ(older.cuTensorMapEncodeTiled, nullptr);
  EXPECT_NE(older.cuLaunchKernel, nullptr);
}

// The double's encoder on a valid 3-D map, then with one documented rule broken at a time.
class FakeEncoder : public ::testing::Test {
 protected:
  void SetUp() override {
    ScopedEnv kernels("FAKE_CUDA_KERNELS", "1");
    std::string why;
    ASSERT_TRUE(load_driver(kFake, &d_, &why)) << why;
    ASSERT_NE(d_.cuTensorMapEncodeTiled, nullptr);
    void* handle = dlopen(kFake, RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(handle, nullptr);
    decode_ =
        reinterpret_cast<FakeCudaDecodeTensorMapFn>(dlsym(handle, "fake_cuda_decode_tensor_map"));
    ASSERT_NE(decode_, nullptr);
  }

  struct Call {
    CUtensorMapDataType type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    cuuint32_t rank = 3;
    uintptr_t address = 0x7f0000000000;
    cuuint64_t dims[5] = {512, 100, 4, 1, 1};
    cuuint64_t strides[4] = {1024, 102400, 409600, 409600};
    cuuint32_t box[5] = {64, 128, 1, 1, 1};
    cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
    CUtensorMapInterleave interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
    CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
    CUtensorMapL2promotion l2 = CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
    CUtensorMapFloatOOBfill oob = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
  };

  CUresult encode(const Call& c, CUtensorMap* map) {
    return d_.cuTensorMapEncodeTiled(map, c.type, c.rank, reinterpret_cast<void*>(c.address),
                                     c.dims, c.strides, c.box, c.element_strides, c.interleave,
                                     c.swizzle, c.l2, c.oob);
  }
  CUresult encode_changed(const std::function<void(Call&)>& change) {
    Call c;
    change(c);
    CUtensorMap map;
    return encode(c, &map);
  }

  Driver d_;
  FakeCudaDecodeTensorMapFn decode_ = nullptr;
};

TEST_F(FakeEncoder, KeepsWhatItWasTold) {
  CUtensorMap map;
  ASSERT_EQ(encode(Call(), &map), CUDA_SUCCESS);
  FakeTensorMap m;
  ASSERT_EQ(decode_(&map, &m), 1);
  EXPECT_EQ(m.rank, 3);
  EXPECT_EQ(m.data_type, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
  EXPECT_EQ(m.base, 0x7f0000000000u);
  EXPECT_EQ(m.dims[0], 512u);
  EXPECT_EQ(m.dims[1], 100u);
  EXPECT_EQ(m.dims[2], 4u);
  EXPECT_EQ(m.strides[0], 1024u);
  EXPECT_EQ(m.strides[1], 102400u);
  EXPECT_EQ(m.strides[2], 0u);  // rank 3 has two strides
  EXPECT_EQ(m.box[0], 64u);
  EXPECT_EQ(m.box[1], 128u);
  EXPECT_EQ(m.swizzle, CU_TENSOR_MAP_SWIZZLE_128B);
  EXPECT_EQ(m.l2_promotion, CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
  unsigned char garbage[128] = {1, 2, 3};
  EXPECT_EQ(decode_(garbage, &m), 0);
}

TEST_F(FakeEncoder, RefusesWhatTheDriverApiDocumentsAsInvalid) {
  const CUresult bad = CUDA_ERROR_INVALID_VALUE;
  EXPECT_EQ(encode_changed([](Call&) {}), CUDA_SUCCESS);
  EXPECT_EQ(encode_changed([](Call& c) { c.address += 8; }), bad);  // 16-byte aligned
  EXPECT_EQ(encode_changed([](Call& c) { c.address = 0; }), bad);
  EXPECT_EQ(encode_changed([](Call& c) { c.rank = 0; }), bad);  // rank 1..5
  EXPECT_EQ(encode_changed([](Call& c) { c.rank = 6; }), bad);
  EXPECT_EQ(encode_changed([](Call& c) { c.rank = 5; }), CUDA_SUCCESS);
  EXPECT_EQ(encode_changed([](Call& c) { c.type = CUtensorMapDataType(40); }), bad);
  EXPECT_EQ(encode_changed([](Call& c) { c.dims[1] = 0; }), bad);  // 1..2^32
  EXPECT_EQ(encode_changed([](Call& c) { c.dims[2] = (1ull << 32) + 1; }), bad);
  EXPECT_EQ(encode_changed([](Call& c) { c.strides[0] = 1032; }), bad);        // multiples of 16
  EXPECT_EQ(encode_changed([](Call& c) { c.strides[1] = 1ull << 40; }), bad);  // below 2^40
  EXPECT_EQ(encode_changed([](Call& c) { c.strides[1] = (1ull << 40) - 16; }), CUDA_SUCCESS);
  EXPECT_EQ(encode_changed([](Call& c) { c.box[1] = 0; }), bad);  // 1..256
  EXPECT_EQ(encode_changed([](Call& c) { c.box[1] = 257; }), bad);
  EXPECT_EQ(encode_changed([](Call& c) { c.box[1] = 256; }), CUDA_SUCCESS);
  EXPECT_EQ(encode_changed([](Call& c) { c.element_strides[0] = 0; }), bad);  // 1..8
  EXPECT_EQ(encode_changed([](Call& c) { c.element_strides[2] = 9; }), bad);
  // The inner box row: a multiple of 16 bytes, and within the swizzle span.
  EXPECT_EQ(encode_changed([](Call& c) { c.box[0] = 68; }), bad);
  EXPECT_EQ(encode_changed([](Call& c) { c.box[0] = 128; }), bad);  // 256 bytes > 128
  EXPECT_EQ(encode_changed([](Call& c) { c.swizzle = CU_TENSOR_MAP_SWIZZLE_64B; }), bad);
  EXPECT_EQ(encode_changed([](Call& c) {
              c.swizzle = CU_TENSOR_MAP_SWIZZLE_64B;
              c.box[0] = 32;
            }),
            CUDA_SUCCESS);
  // Interleaved layouts need rank 3 or more.
  EXPECT_EQ(encode_changed([](Call& c) {
              c.interleave = CU_TENSOR_MAP_INTERLEAVE_16B;
              c.rank = 2;
            }),
            bad);
  // NaN fill only for floating-point elements.
  EXPECT_EQ(encode_changed([](Call& c) {
              c.type = CU_TENSOR_MAP_DATA_TYPE_UINT16;
              c.oob = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;
            }),
            bad);
  // The map itself must be 64-byte aligned.
  alignas(64) unsigned char storage[256];
  EXPECT_EQ(encode(Call(), reinterpret_cast<CUtensorMap*>(storage + 32)), bad);
}

// What a pack encodes for an operand is accepted by the double as it is by a driver.
TEST_F(FakeEncoder, AcceptsThePackRuntimesMaps) {
  DietcodeArgs a{};
  a.a = reinterpret_cast<const void*>(0x7f0000000000);
  a.b = reinterpret_cast<const void*>(0x7f1000000000);
  a.batch = 1, a.m = 77, a.n = 3000, a.k = 4104;
  for (int which : {dietcode_pack::kTensorMapA, dietcode_pack::kTensorMapB}) {
    dietcode_pack::TensorMapLayout l;
    ASSERT_EQ(dietcode_pack::tensor_map_layout(which, a, 256, 64, 2, &l), nullptr);
    CUtensorMap map;
    ASSERT_EQ(dietcode_pack::encode_tensor_map(d_.cuTensorMapEncodeTiled, l, &map), CUDA_SUCCESS);
    FakeTensorMap m;
    ASSERT_EQ(decode_(&map, &m), 1);
    EXPECT_EQ(m.base, uint64_t(uintptr_t(l.base)));
    EXPECT_EQ(m.dims[1], which == dietcode_pack::kTensorMapA ? 77u : 3000u);
    EXPECT_EQ(m.strides[0], 8208u);
  }
}

}  // namespace
}  // namespace dietcode
