// Launches one op of a kernel pack on the stand-in driver (a TEST DOUBLE, tests/data/fake_driver,
// on LD_LIBRARY_PATH as libcuda.so.1 with FAKE_CUDA_KERNELS=1) and prints what the launch
// passed to the driver, for tests/e2e/pack_tma_test.cc:
//
//   tma_client LIB OP [--offset ARG BYTES]... [--repeat N] VALUE...
//
// Arguments are device addresses 16 TiB apart (never dereferenced: nothing runs), argument i
// at (i + 1) << 44 plus its --offset. Prints
//   rc CODE | LAST_ERROR          of the last launch (the first failing one, if any)
//   maps N                        tensor maps the last launch passed, then one line each:
//   map I base 0x... dims D0,D1,D2 strides S0,S1 box B0,B1,B2 elem E0,E1,E2 type T swizzle S
//       l2 L oob O interleave I
//   encodes N                     cuTensorMapEncodeTiled calls over all launches
//   launches N                    driver launches made
#include <cuda.h>
#include <dlfcn.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fake_driver/fake_cuda_stats.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s LIB OP [--offset ARG BYTES]... [--repeat N] VALUE...\n",
                 argv[0]);
    return 2;
  }
  std::vector<uintptr_t> offsets(8, 0);
  std::vector<int64_t> values;
  long repeat = 1;
  for (int i = 3; i < argc; ++i) {
    if (std::strcmp(argv[i], "--offset") == 0 && i + 2 < argc) {
      offsets[size_t(std::atoi(argv[i + 1]))] = uintptr_t(std::atoll(argv[i + 2]));
      i += 2;
    } else if (std::strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
      repeat = std::atol(argv[++i]);
    } else {
      values.push_back(std::atoll(argv[i]));
    }
  }
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  auto stats =
      driver ? reinterpret_cast<FakeCudaStatsFn>(dlsym(driver, "fake_cuda_stats")) : nullptr;
  auto last_maps =
      driver
          ? reinterpret_cast<FakeCudaLastTensorMapsFn>(dlsym(driver, "fake_cuda_last_tensor_maps"))
          : nullptr;
  if (!stats || !last_maps) return std::fprintf(stderr, "libcuda.so.1 is not the fake\n"), 2;
  void* pack = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!pack) return std::fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror()), 2;
  auto launch =
      reinterpret_cast<int (*)(const char*, void* const*, int, const int64_t*, int, void*)>(
          dlsym(pack, "dietcode_launch"));
  auto last_error = reinterpret_cast<const char* (*)()>(dlsym(pack, "dietcode_last_error"));
  if (!launch || !last_error) return std::fprintf(stderr, "not a dietcode pack\n"), 2;

  void* args[3];
  for (int i = 0; i < 3; ++i)
    args[i] = reinterpret_cast<void*>((uintptr_t(i + 1) << 44) + offsets[size_t(i)]);
  FakeCudaStats before, after;
  stats(&before);
  int rc = 0;
  for (long r = 0; r < repeat && rc == 0; ++r)
    rc = launch(argv[2], args, 3, values.data(), int(values.size()), nullptr);
  stats(&after);
  std::printf("rc %d | %s\n", rc, rc ? last_error() : "");
  FakeTensorMap maps[FAKE_MAX_TENSOR_MAPS];
  int n = last_maps(maps, FAKE_MAX_TENSOR_MAPS);
  std::printf("maps %d\n", n);
  for (int i = 0; i < n && i < FAKE_MAX_TENSOR_MAPS; ++i) {
    const FakeTensorMap& m = maps[i];
    std::string dims, strides, box, elem;
    for (int d = 0; d < m.rank; ++d) {
      const char* sep = d ? "," : "";
      dims += sep + std::to_string(m.dims[d]);
      box += sep + std::to_string(m.box[d]);
      elem += sep + std::to_string(m.element_strides[d]);
      if (d + 1 < m.rank) strides += sep + std::to_string(m.strides[d]);
    }
    std::printf(
        "map %d base 0x%" PRIx64
        " dims %s strides %s box %s elem %s type %d swizzle %d l2 %d oob %d interleave %d\n",
        i, m.base, dims.c_str(), strides.c_str(), box.c_str(), elem.c_str(), m.data_type, m.swizzle,
        m.l2_promotion, m.oob_fill, m.interleave);
  }
  std::printf("encodes %" PRId64 "\n", after.tensor_map_encodes - before.tensor_map_encodes);
  std::printf("launches %" PRId64 "\n", after.launches - before.launches);
  return 0;
}
