#include "cuda/driver.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace dietcode {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The stand-in libcuda.so.1 built from tests/data/fake_driver (a test double).
const char* const kFake = DIETCODE_FAKE_CUDA;

// The fake's record of the entry points asked for, "name@version;...", cleared on reading.
std::string fake_requests() {
  void* handle = dlopen(kFake, RTLD_NOW | RTLD_NOLOAD);
  if (!handle) return "";
  auto take = reinterpret_cast<const char* (*)()>(dlsym(handle, "fake_cuda_take_requests"));
  std::string requests = take ? take() : "";
  dlclose(handle);
  return requests;
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

TEST(Driver, LoadsTheRealDriverOrSaysWhyNot) {
  std::string why;
  const Driver* d = driver_or_null(&why);
  void* probe = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!probe) {
    // No driver on this machine: the reason is the loader's own, on one line.
    EXPECT_EQ(d, nullptr);
    EXPECT_EQ(why, std::string("no CUDA driver: ") + dlerror());
    EXPECT_THAT(why, HasSubstr("libcuda.so.1"));
    try {
      driver();
      FAIL() << "driver() returned without a driver";
    } catch (const EnvironmentError& e) {
      EXPECT_EQ(e.what(), why);
    }
    return;
  }
  dlclose(probe);
  if (!d) {
    // A driver but no usable GPU (a container without the device, say).
    EXPECT_THAT(why, HasSubstr("no CUDA device: cuInit failed: CUDA_ERROR_"));
    return;
  }
  int count = 0;
  EXPECT_EQ(d->cuDeviceGetCount(&count), CUDA_SUCCESS);
  EXPECT_GT(count, 0);
  EXPECT_GE(d->version, 11030);
  EXPECT_EQ(&driver(), d);
}

TEST(Driver, FetchesEveryEntryPointByItsAbiVersion) {
  fake_requests();
  Driver d;
  std::string why;
  ASSERT_TRUE(load_driver(kFake, &d, &why)) << why;
  EXPECT_EQ(why, "");
  EXPECT_EQ(d.version, 13000);
  int count = 0;
  EXPECT_EQ(d.cuDeviceGetCount(&count), CUDA_SUCCESS);
  EXPECT_EQ(count, 1);
  EXPECT_NE(d.cuLaunchKernel, nullptr);
  EXPECT_NE(d.cuEventDestroy, nullptr);

  const std::string asked = fake_requests();
  // The versions of the PFN types in driver.h: CUDA 13 re-issued cuCtxSynchronize and
  // cuCtxGetDevice with a context argument, so asking for "the newest" would break them.
  EXPECT_THAT(asked, HasSubstr("cuCtxSynchronize@2000;"));
  EXPECT_THAT(asked, HasSubstr("cuCtxGetDevice@2000;"));
  EXPECT_THAT(asked, HasSubstr("cuMemAlloc@3020;"));
  EXPECT_THAT(asked, HasSubstr("cuDevicePrimaryCtxRelease@11000;"));
  EXPECT_THAT(asked, HasSubstr("cuLaunchKernel@4000;"));
  EXPECT_THAT(asked, HasSubstr("cuEventElapsedTime@12080;"));
  EXPECT_THAT(asked, Not(HasSubstr("@13000")));
}

TEST(Driver, CuInitFailureIsNoDevice) {
  ScopedEnv no_device("FAKE_CUDA_INIT_RESULT", "100");
  Driver d;
  std::string why;
  EXPECT_FALSE(load_driver(kFake, &d, &why));
  EXPECT_EQ(why, "no CUDA device: cuInit failed: CUDA_ERROR_NO_DEVICE");
}

TEST(Driver, AMissingEntryPointNamesItAndItsVersion) {
  ScopedEnv missing("FAKE_CUDA_MISSING", "cuMemGetInfo");
  Driver d;
  std::string why;
  EXPECT_FALSE(load_driver(kFake, &d, &why));
  EXPECT_EQ(why, std::string("no CUDA driver: ") + kFake +
                     " has no cuMemGetInfo for the CUDA 3.2 ABI; update the NVIDIA driver");
}

TEST(Driver, ALibraryWithoutCuGetProcAddressIsNoDriver) {
  Driver d;
  std::string why;
  EXPECT_FALSE(load_driver("libm.so.6", &d, &why));
  EXPECT_EQ(why,
            "no CUDA driver: libm.so.6 has no cuGetProcAddress (a driver for CUDA 11.3 or newer "
            "is needed)");
  EXPECT_FALSE(load_driver("/nonexistent/libcuda.so.1", &d, &why));
  EXPECT_EQ(why,
            "no CUDA driver: /nonexistent/libcuda.so.1: cannot open shared object file: No such "
            "file or directory");
}

TEST(Driver, CheckThrowsACudaErrorThatKeepsTheCode) {
  EXPECT_NO_THROW(check(CUDA_SUCCESS, "cuInit"));
  try {
    check(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc(1 TiB)");
    FAIL() << "check did not throw";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.code(), CUDA_ERROR_OUT_OF_MEMORY);
    // With a driver the name and description are the driver's; without, the number.
    const std::string expected = driver_or_null()
                                     ? "cuMemAlloc(1 TiB): CUDA_ERROR_OUT_OF_MEMORY (out of memory)"
                                     : "cuMemAlloc(1 TiB): CUresult 2";
    EXPECT_EQ(e.what(), expected);
    const EnvironmentError& as_environment = e;  // exit 2 when it reaches the CLI
    (void)as_environment;
  }
}

}  // namespace
}  // namespace dietcode
