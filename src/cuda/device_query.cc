#include "cuda/device_query.h"

#include <string>

#include "common/error.h"
#include "cuda/driver.h"
#include "cuda/peak_figures.h"

namespace dietcode {

namespace {

CUdevice device_handle(const Driver& d, int ordinal) {
  int count = 0;
  check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count == 0) throw EnvironmentError("no CUDA device: the driver sees no GPU");
  if (ordinal < 0 || ordinal >= count) {
    throw EnvironmentError("no CUDA device " + std::to_string(ordinal) + ": the driver sees " +
                           std::to_string(count) + (count == 1 ? " GPU" : " GPUs"));
  }
  CUdevice device = 0;
  check(d.cuDeviceGet(&device, ordinal), "cuDeviceGet");
  return device;
}

int attribute(const Driver& d, CUdevice device, CUdevice_attribute which, const char* what) {
  int value = 0;
  std::string where = std::string("cuDeviceGetAttribute(") + what + ")";
  check(d.cuDeviceGetAttribute(&value, which, device), where.c_str());
  return value;
}

GpuSpec query(const Driver& d, int ordinal, const std::vector<GpuSpec>& shipped) {
  CUdevice dev = device_handle(d, ordinal);
  GpuSpec s;
  s.id = "device" + std::to_string(ordinal);
  char name[256] = {};
  check(d.cuDeviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName");
  s.name = name;

#define DIETCODE_ATTR(attr) attribute(d, dev, CU_DEVICE_ATTRIBUTE_##attr, #attr)
  s.cc_major = DIETCODE_ATTR(COMPUTE_CAPABILITY_MAJOR);
  s.cc_minor = DIETCODE_ATTR(COMPUTE_CAPABILITY_MINOR);
  s.sms = DIETCODE_ATTR(MULTIPROCESSOR_COUNT);
  s.warp_size = DIETCODE_ATTR(WARP_SIZE);
  s.max_threads_per_block = DIETCODE_ATTR(MAX_THREADS_PER_BLOCK);
  s.max_threads_per_sm = DIETCODE_ATTR(MAX_THREADS_PER_MULTIPROCESSOR);
  s.max_blocks_per_sm = DIETCODE_ATTR(MAX_BLOCKS_PER_MULTIPROCESSOR);
  s.regs_per_sm = DIETCODE_ATTR(MAX_REGISTERS_PER_MULTIPROCESSOR);
  s.regs_per_block = DIETCODE_ATTR(MAX_REGISTERS_PER_BLOCK);
  s.smem_per_block = DIETCODE_ATTR(MAX_SHARED_MEMORY_PER_BLOCK);
  s.smem_per_block_optin = DIETCODE_ATTR(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  s.smem_per_sm = DIETCODE_ATTR(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  s.l2_bytes = DIETCODE_ATTR(L2_CACHE_SIZE);
  s.clock_ghz = DIETCODE_ATTR(CLOCK_RATE) / 1e6;  // kHz
  const int memory_clock_khz = DIETCODE_ATTR(MEMORY_CLOCK_RATE);
  const int bus_width_bits = DIETCODE_ATTR(GLOBAL_MEMORY_BUS_WIDTH);
#undef DIETCODE_ATTR
  // The hardware cap on registers per thread is not an attribute; 255 since Kepler.
  s.max_regs_per_thread = 255;

  fill_peak_figures(s, shipped, memory_bandwidth_gbs(memory_clock_khz, bus_width_bits));
  s.queried = true;
  return s;
}

}  // namespace

double memory_bandwidth_gbs(int memory_clock_khz, int bus_width_bits) {
  if (memory_clock_khz <= 0 || bus_width_bits <= 0) return 0.0;
  return 2.0 * memory_clock_khz * 1e3 * (bus_width_bits / 8.0) / 1e9;
}

std::vector<GpuSpec> query_devices() {
  const Driver& d = driver();
  int count = 0;
  check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count == 0) throw EnvironmentError("no CUDA device: the driver sees no GPU");
  const std::vector<GpuSpec> shipped = shipped_configs();
  std::vector<GpuSpec> devices;
  for (int i = 0; i < count; ++i) devices.push_back(query(d, i, shipped));
  return devices;
}

GpuSpec query_device(int ordinal) { return query(driver(), ordinal, shipped_configs()); }

size_t device_total_memory(int ordinal) {
  const Driver& d = driver();
  size_t bytes = 0;
  check(d.cuDeviceTotalMem(&bytes, device_handle(d, ordinal)), "cuDeviceTotalMem");
  return bytes;
}

}  // namespace dietcode
