// The driver's RAII handles on a real GPU: context, memory, a module JIT-compiled from PTX, a
// launch timed with events, and the device query. Skips itself where there is no GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/device_buffer.h"
#include "cuda/device_query.h"
#include "cuda/driver.h"
#include "cuda/event.h"
#include "cuda/l2_flush.h"
#include "cuda/module.h"
#include "cuda/primary_context.h"
#include "cuda/stream.h"

namespace dietcode {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// out[i] = i for i < n. Hand-written PTX, so this test needs no NVRTC; the driver JITs it.
const char kFillIndexPtx[] = R"(
.version 7.0
.target sm_70
.address_size 64

.visible .entry fill_index(.param .u64 out, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.s32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.s32 %rd3, %r5, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r5;
DONE:
  ret;
}
)";

class CudaHandles : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!driver_or_null(&why)) GTEST_SKIP() << why;
  }
};

// The L2 flush tune and bench share (cuda/l2_flush.h): its grid-stride loop writes every word
// of a buffer larger than one pass of its capped grid, and nothing past the bytes it is given.
TEST_F(CudaHandles, TheL2FlushWritesEveryWordItIsGivenAndNoMore) {
  PrimaryContext context(0);
  const int64_t words = int64_t(L2FlushGrid::kMaxBlocks) * L2FlushGrid::kThreads * 3 + 5;
  DeviceBuffer buffer(size_t(words + 1) * sizeof(uint32_t));
  buffer.fill_words(0u);
  Module module(l2_flush_ptx(), "l2_flush.ptx");
  launch_l2_flush(module.function(kL2FlushEntry), nullptr, buffer.ptr(), words * 4, 0xC0FFEEu);
  context.synchronize();
  const std::vector<uint32_t> got = buffer.download<uint32_t>();
  ASSERT_EQ(got.size(), size_t(words + 1));
  for (int64_t i = 0; i < words; ++i) ASSERT_EQ(got[size_t(i)], 0xC0FFEEu) << i;
  EXPECT_EQ(got.back(), 0u);
}

TEST_F(CudaHandles, LaunchesAPtxKernelAndTimesIt) {
  PrimaryContext context(0);
  const int n = 1000;
  DeviceBuffer out(n * sizeof(uint32_t));
  out.fill_words(0xFFFFFFFFu);
  Module module(kFillIndexPtx, "fill_index.ptx");
  CUfunction kernel = module.function("fill_index");
  EXPECT_GT(function_attribute(kernel, CU_FUNC_ATTRIBUTE_NUM_REGS), 0);
  set_max_dynamic_smem(kernel, 0);

  Stream stream;
  Event start, end;
  CUdeviceptr ptr = out.ptr();
  int count = n - 1;  // the last element must stay untouched
  void* args[] = {&ptr, &count};
  start.record(stream.get());
  check(driver().cuLaunchKernel(kernel, (n + 127) / 128, 1, 1, 128, 1, 1, 0, stream.get(), args,
                                nullptr),
        "cuLaunchKernel(fill_index)");
  end.record(stream.get());
  stream.synchronize();
  EXPECT_GE(Event::elapsed_ms(start, end), 0.0f);

  std::vector<uint32_t> host = out.download<uint32_t>();
  ASSERT_EQ(host.size(), static_cast<size_t>(n));
  for (int i = 0; i < n - 1; ++i) ASSERT_EQ(host[i], static_cast<uint32_t>(i)) << i;
  EXPECT_EQ(host[n - 1], 0xFFFFFFFFu);
  context.synchronize();
}

TEST_F(CudaHandles, BuffersCopyBothWaysAndCheckTheirRange) {
  PrimaryContext context(0);
  DeviceBuffer buffer(64);
  std::vector<unsigned char> in(64);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<unsigned char>(i * 3);
  buffer.upload(in);
  EXPECT_EQ(buffer.download<unsigned char>(), in);
  buffer.fill_bytes(7);
  EXPECT_EQ(buffer.download<unsigned char>(), std::vector<unsigned char>(64, 7));
  EXPECT_THROW(buffer.upload(in.data(), 16, 56), std::out_of_range);
  DeviceBuffer moved = std::move(buffer);
  EXPECT_EQ(buffer.ptr(), 0u);
  EXPECT_EQ(moved.bytes(), 64u);
  EXPECT_EQ(DeviceBuffer(0).ptr(), 0u);  // empty: allocates nothing
}

TEST_F(CudaHandles, BadPtxAndMissingKernelsAreCudaErrors) {
  PrimaryContext context(0);
  try {
    Module broken(".version 7.0\n.target sm_70\n.address_size 64\nthis is not ptx\n", "broken");
    FAIL() << "broken PTX loaded";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.code(), CUDA_ERROR_INVALID_PTX);
    EXPECT_THAT(e.what(), StartsWith("cuModuleLoadDataEx(broken): CUDA_ERROR_INVALID_PTX"));
  }
  Module module(kFillIndexPtx, "fill_index.ptx");
  try {
    module.function("no_such_kernel");
    FAIL() << "found a kernel that does not exist";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.code(), CUDA_ERROR_NOT_FOUND);
    EXPECT_THAT(e.what(), StartsWith("cuModuleGetFunction(fill_index.ptx, no_such_kernel): "
                                     "CUDA_ERROR_NOT_FOUND"));
  }
}

TEST_F(CudaHandles, AMissingDeviceIsAnEnvironmentError) {
  int count = 0;
  check(driver().cuDeviceGetCount(&count), "cuDeviceGetCount");
  try {
    PrimaryContext context(count);
    FAIL() << "device " << count << " exists";
  } catch (const EnvironmentError& e) {
    EXPECT_EQ(e.what(), "no CUDA device " + std::to_string(count) + ": the driver sees " +
                            std::to_string(count) + (count == 1 ? " GPU" : " GPUs"));
  }
}

TEST_F(CudaHandles, DeviceQueryReadsTheLimits) {
  std::vector<GpuSpec> devices = query_devices();
  ASSERT_FALSE(devices.empty());
  for (const GpuSpec& d : devices) {
    SCOPED_TRACE(d.name);
    EXPECT_TRUE(d.queried);
    EXPECT_THAT(d.id, StartsWith("device"));
    EXPECT_THAT(d.arch(), StartsWith("sm_"));
    EXPECT_GT(d.sms, 0);
    EXPECT_EQ(d.warp_size, 32);
    EXPECT_GE(d.smem_per_block_optin, d.smem_per_block);
    EXPECT_GE(d.smem_per_sm, d.smem_per_block_optin);
    EXPECT_GT(d.l2_bytes, 0);
    EXPECT_GT(d.clock_ghz, 0.3);
    EXPECT_GT(d.fp32_tflops, 0);
    EXPECT_GT(d.mem_bandwidth_gbs, 0);
  }
  EXPECT_GT(device_total_memory(0), size_t{1} << 30);
}

}  // namespace
}  // namespace dietcode
