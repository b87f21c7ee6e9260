#include "x86/host_cpu.h"

#include <cpuid.h>
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "common/error.h"
#include "x86/cpu_thread_pool.h"

namespace dietcode {

namespace {

struct Regs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

// CPUID leaf/subleaf; zeros when the leaf is beyond the maximum the CPU reports.
Regs cpuid(unsigned leaf, unsigned subleaf = 0) {
  Regs r;
  const unsigned max = __get_cpuid_max(leaf & 0x80000000u, nullptr);
  if (max == 0 || leaf > max) return r;
  __cpuid_count(leaf, subleaf, r.a, r.b, r.c, r.d);
  return r;
}

uint64_t xgetbv0() {
  unsigned eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (uint64_t(edx) << 32) | eax;
}

bool bit(unsigned value, int n) { return (value >> n) & 1u; }

std::string trim(std::string s) {
  const char* space = " \t\r\n";
  const size_t first = s.find_first_not_of(space);
  if (first == std::string::npos) return "";
  s.erase(s.find_last_not_of(space) + 1);
  return s.substr(first);
}

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  return trim(line);
}

// "32K", "512K", "32768K", "1M", "2G", "49152": bytes; 0 when it does not parse.
int64_t parse_cache_size(const std::string& text) {
  if (text.empty()) return 0;
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    return 0;
  }
  if (value < 0) return 0;
  const std::string unit = trim(text.substr(used));
  if (unit.empty() || unit == "B") return value;
  if (unit == "K" || unit == "KB" || unit == "KiB") return value << 10;
  if (unit == "M" || unit == "MB" || unit == "MiB") return value << 20;
  if (unit == "G" || unit == "GB" || unit == "GiB") return value << 30;
  return 0;
}

// Distinct (package, core) pairs among `cpus`; 0 when the topology files are missing.
int count_physical_cores(const std::string& root, const std::vector<int>& cpus) {
  std::set<std::pair<std::string, std::string>> cores;
  for (int cpu : cpus) {
    const std::string dir = root + "/cpu" + std::to_string(cpu) + "/topology/";
    const std::string core = read_line(dir + "core_id");
    if (core.empty()) return 0;
    cores.insert({read_line(dir + "physical_package_id"), core});
  }
  return int(cores.size());
}

// ---- The FMA probe ----------------------------------------------------------------------------

constexpr int kChains = 12;

// Each returns a value derived from every chain so that none is dead code. FLOPs per iteration:
// kChains x lanes x 2.
__attribute__((target("avx2,fma"))) float fma_chains_avx2(int64_t iterations, float seed) {
  __m256 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm256_set1_ps(seed + 0.01f * float(j));
  const __m256 mul = _mm256_set1_ps(0.9999999f);
  const __m256 add = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kChains; ++j) acc[j] = _mm256_fmadd_ps(acc[j], mul, add);
  }
  __m256 sum = acc[0];
  for (int j = 1; j < kChains; ++j) sum = _mm256_add_ps(sum, acc[j]);
  float lanes[8];
  _mm256_storeu_ps(lanes, sum);
  float total = 0;
  for (float lane : lanes) total += lane;
  return total;
}

__attribute__((target("avx512f"))) float fma_chains_avx512(int64_t iterations, float seed) {
  __m512 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm512_set1_ps(seed + 0.01f * float(j));
  const __m512 mul = _mm512_set1_ps(0.9999999f);
  const __m512 add = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kChains; ++j) acc[j] = _mm512_fmadd_ps(acc[j], mul, add);
  }
  __m512 sum = acc[0];
  for (int j = 1; j < kChains; ++j) sum = _mm512_add_ps(sum, acc[j]);
  float lanes[16];
  _mm512_storeu_ps(lanes, sum);
  float total = 0;
  for (float lane : lanes) total += lane;
  return total;
}

// SSE2 (every x86-64): a multiply and an add per chain step, counted as 2 FLOPs per lane.
float mul_add_chains_sse(int64_t iterations, float seed) {
  __m128 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm_set1_ps(seed + 0.01f * float(j));
  const __m128 mul = _mm_set1_ps(0.9999999f);
  const __m128 add = _mm_set1_ps(1e-7f);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kChains; ++j) acc[j] = _mm_add_ps(_mm_mul_ps(acc[j], mul), add);
  }
  __m128 sum = acc[0];
  for (int j = 1; j < kChains; ++j) sum = _mm_add_ps(sum, acc[j]);
  float lanes[4];
  _mm_storeu_ps(lanes, sum);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

struct Probe {
  float (*fn)(int64_t, float);
  int lanes;
};

Probe pick_probe(const HostCpu& cpu, int vector_bits) {
  if (cpu.avx512f && (vector_bits == 0 || vector_bits >= 512)) return {fma_chains_avx512, 16};
  if (cpu.avx2 && cpu.fma && (vector_bits == 0 || vector_bits >= 256)) return {fma_chains_avx2, 8};
  return {mul_add_chains_sse, 4};
}

void pin_this_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);  // best effort
}

std::atomic<float> g_probe_sink{0};

}  // namespace

CpuidBits read_cpuid_bits() {
  CpuidBits bits;
  const Regs l1 = cpuid(1);
  bits.sse3 = bit(l1.c, 0);
  bits.ssse3 = bit(l1.c, 9);
  bits.fma = bit(l1.c, 12);
  bits.cx16 = bit(l1.c, 13);
  bits.sse4_1 = bit(l1.c, 19);
  bits.sse4_2 = bit(l1.c, 20);
  bits.movbe = bit(l1.c, 22);
  bits.popcnt = bit(l1.c, 23);
  bits.osxsave = bit(l1.c, 27);
  bits.avx = bit(l1.c, 28);
  bits.f16c = bit(l1.c, 29);
  const Regs l7 = cpuid(7, 0);
  bits.bmi1 = bit(l7.b, 3);
  bits.avx2 = bit(l7.b, 5);
  bits.bmi2 = bit(l7.b, 8);
  bits.avx512f = bit(l7.b, 16);
  bits.avx512dq = bit(l7.b, 17);
  bits.avx512cd = bit(l7.b, 28);
  bits.avx512bw = bit(l7.b, 30);
  bits.avx512vl = bit(l7.b, 31);
  const Regs e1 = cpuid(0x80000001u);
  bits.lahf_lm = bit(e1.c, 0);
  bits.lzcnt = bit(e1.c, 5);
  bits.xcr0 = bits.osxsave ? xgetbv0() : 0;
  return bits;
}

bool os_saves_ymm(const CpuidBits& bits) {
  return bits.osxsave && (bits.xcr0 & 0x6) == 0x6;  // SSE and AVX state
}

bool os_saves_zmm(const CpuidBits& bits) {
  return os_saves_ymm(bits) && (bits.xcr0 & 0xE0) == 0xE0;  // opmask, ZMM_Hi256, Hi16_ZMM
}

int isa_level_from_bits(const CpuidBits& b) {
  const bool v2 = b.cx16 && b.lahf_lm && b.popcnt && b.sse3 && b.sse4_1 && b.sse4_2 && b.ssse3;
  if (!v2) return 1;
  const bool v3 = b.avx && b.avx2 && b.bmi1 && b.bmi2 && b.f16c && b.fma && b.lzcnt && b.movbe &&
                  os_saves_ymm(b);
  if (!v3) return 2;
  const bool v4 = b.avx512f && b.avx512bw && b.avx512cd && b.avx512dq && b.avx512vl &&
                  os_saves_zmm(b);
  return v4 ? 4 : 3;
}

std::string isa_level_name(int level) {
  switch (level) {
    case 1:
      return "x86-64";
    case 2:
      return "x86-64-v2";
    case 3:
      return "x86-64-v3";
    case 4:
      return "x86-64-v4";
  }
  throw std::invalid_argument("isa_level_name: no x86-64 ISA level " + std::to_string(level));
}

int isa_level_number(const std::string& name) {
  for (int level = 1; level <= 4; ++level)
    if (name == isa_level_name(level)) return level;
  throw UserError("unknown ISA level \"" + name + "\"; expected x86-64-v3 or x86-64-v4");
}

int cpu_template_level(const std::string& arch, const HostCpu& cpu, const std::string& option) {
  int level = 0;
  try {
    level = isa_level_number(arch);
  } catch (const UserError& e) {
    throw UserError(option + ": " + e.what());
  }
  if (level < 3)
    throw UserError(option + " " + arch +
                    ": every CPU template needs x86-64-v3 (AVX2 and FMA) or newer");
  if (level > cpu.isa_level_number)
    throw EnvironmentError(option + " " + arch + ": " + cpu.model_name + " is " + cpu.isa_level +
                           " and cannot run " + arch + " code");
  return level;
}

CacheSizes read_sysfs_caches(const std::string& root) {
  CacheSizes sizes;
  const std::string base = root + "/cpu0/cache/index";
  // Linux numbers the leaves densely from 0; stop at the first missing one (allowing a gap of a
  // few in case an odd kernel skips one).
  for (int index = 0, missing = 0; index < 32 && missing < 4; ++index) {
    const std::string dir = base + std::to_string(index) + "/";
    const std::string level = read_line(dir + "level");
    if (level.empty()) {
      ++missing;
      continue;
    }
    const std::string type = read_line(dir + "type");
    if (type != "Data" && type != "Unified") continue;
    const int64_t size = parse_cache_size(read_line(dir + "size"));
    if (level == "1" && sizes.l1d == 0) sizes.l1d = size;
    if (level == "2" && sizes.l2 == 0) sizes.l2 = size;
    if (level == "3" && sizes.l3 == 0) sizes.l3 = size;
  }
  return sizes;
}

CacheSizes read_cpuid_caches() {
  CacheSizes sizes;
  const Regs vendor = cpuid(0);
  char name[13] = {};
  std::memcpy(name, &vendor.b, 4);
  std::memcpy(name + 4, &vendor.d, 4);
  std::memcpy(name + 8, &vendor.c, 4);
  const bool amd = std::string(name) == "AuthenticAMD" || std::string(name) == "HygonGenuine";
  const bool topoext = bit(cpuid(0x80000001u).c, 22);
  // Deterministic cache parameters: leaf 4 (Intel) or 0x8000001D (AMD with TOPOEXT).
  const unsigned leaf = amd ? (topoext ? 0x8000001Du : 0) : 4u;
  if (leaf != 0) {
    for (unsigned sub = 0; sub < 16; ++sub) {
      const Regs r = cpuid(leaf, sub);
      const unsigned type = r.a & 0x1f;  // 1 data, 2 instruction, 3 unified, 0 end
      if (type == 0) break;
      if (type == 2) continue;
      const unsigned level = (r.a >> 5) & 0x7;
      const int64_t ways = ((r.b >> 22) & 0x3ff) + 1;
      const int64_t partitions = ((r.b >> 12) & 0x3ff) + 1;
      const int64_t line = (r.b & 0xfff) + 1;
      const int64_t sets = int64_t(r.c) + 1;
      const int64_t size = ways * partitions * line * sets;
      if (level == 1 && sizes.l1d == 0) sizes.l1d = size;
      if (level == 2 && sizes.l2 == 0) sizes.l2 = size;
      if (level == 3 && sizes.l3 == 0) sizes.l3 = size;
    }
  }
  if (amd && sizes.l1d == 0 && sizes.l2 == 0) {
    sizes.l1d = int64_t(cpuid(0x80000005u).c >> 24) << 10;
    const Regs l23 = cpuid(0x80000006u);
    sizes.l2 = int64_t(l23.c >> 16) << 10;
    sizes.l3 = int64_t(l23.d >> 18) * (512 << 10);
  }
  return sizes;
}

HostCpu detect_host_cpu() { return detect_host_cpu("/sys/devices/system/cpu"); }

HostCpu detect_host_cpu(const std::string& sysfs_cpu_root) {
  HostCpu cpu;
  const Regs vendor = cpuid(0);
  char name[13] = {};
  std::memcpy(name, &vendor.b, 4);
  std::memcpy(name + 4, &vendor.d, 4);
  std::memcpy(name + 8, &vendor.c, 4);
  cpu.vendor = name;
  if (__get_cpuid_max(0x80000000u, nullptr) >= 0x80000004u) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      const Regs r = cpuid(0x80000002u + i);
      std::memcpy(brand + 16 * i, &r.a, 4);
      std::memcpy(brand + 16 * i + 4, &r.b, 4);
      std::memcpy(brand + 16 * i + 8, &r.c, 4);
      std::memcpy(brand + 16 * i + 12, &r.d, 4);
    }
    cpu.model_name = trim(brand);
  }
  cpu.bits = read_cpuid_bits();
  cpu.isa_level_number = isa_level_from_bits(cpu.bits);
  cpu.isa_level = isa_level_name(cpu.isa_level_number);
  cpu.avx2 = cpu.bits.avx2 && os_saves_ymm(cpu.bits);
  cpu.fma = cpu.bits.fma && os_saves_ymm(cpu.bits);
  cpu.avx512f = cpu.bits.avx512f && os_saves_zmm(cpu.bits);

  const std::vector<int> cpus = CpuThreadPool::usable_cpus();
  cpu.logical_cores = int(cpus.size());
  cpu.physical_cores = count_physical_cores(sysfs_cpu_root, cpus);

  cpu.caches = read_sysfs_caches(sysfs_cpu_root);
  cpu.cache_source = "sysfs";
  if (cpu.caches.l1d == 0 && cpu.caches.l2 == 0 && cpu.caches.l3 == 0) {
    cpu.caches = read_cpuid_caches();
    cpu.cache_source = "cpuid";
  }
  return cpu;
}

double HostCpu::fp32_peak_gflops(int threads, int vector_bits) const {
  if (threads <= 0) threads = logical_cores;
  const Probe probe = pick_probe(*this, vector_bits);
  const double flops_per_iteration = double(kChains) * probe.lanes * 2.0;

  // Calibrate on this thread: enough iterations for ~25 ms per run.
  using Clock = std::chrono::steady_clock;
  int64_t iterations = 1 << 14;
  for (;;) {
    const auto t0 = Clock::now();
    g_probe_sink.store(probe.fn(iterations, 1.0f), std::memory_order_relaxed);
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (seconds > 2e-3 || iterations >= (int64_t(1) << 34)) {
      iterations = std::max<int64_t>(1024, int64_t(double(iterations) * 25e-3 / seconds));
      break;
    }
    iterations *= 4;
  }

  const std::vector<double> runs = time_pinned_runs(threads, 3, [&](int t, int) {
    g_probe_sink.store(probe.fn(iterations, 1.0f + 1e-3f * float(t)), std::memory_order_relaxed);
  });
  double best = 0;
  for (double seconds : runs)
    if (seconds > 0)
      best = std::max(best, flops_per_iteration * double(iterations) * threads / seconds * 1e-9);
  return best;
}

std::vector<double> time_pinned_runs(int threads, int runs,
                                     const std::function<void(int thread, int run)>& body) {
  using Clock = std::chrono::steady_clock;
  threads = std::max(1, threads);
  // The pool's placement: the caller's CPU first, and every online CPU when an OpenMP runtime
  // has bound the caller to fewer CPUs than there are threads to time.
  const std::vector<int> cpus = CpuThreadPool::close_placement(threads);
  std::vector<Clock::time_point> starts(size_t(threads) * runs), ends(starts.size());
  std::barrier sync(threads);
  auto worker = [&](int t) {
    pin_this_thread(cpus[size_t(t) % cpus.size()]);
    for (int run = 0; run < runs; ++run) {
      sync.arrive_and_wait();
      starts[size_t(run) * threads + t] = Clock::now();
      body(t, run);
      ends[size_t(run) * threads + t] = Clock::now();
    }
  };
  std::vector<std::thread> workers;
  for (int t = 1; t < threads; ++t) workers.emplace_back(worker, t);
  {
    // The calling thread takes part as thread 0, pinned for the runs only.
    cpu_set_t saved;
    const bool have_saved = pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved) == 0;
    worker(0);
    if (have_saved) pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
  }
  for (std::thread& w : workers) w.join();

  std::vector<double> seconds(size_t(runs), 0.0);
  for (int run = 0; run < runs; ++run) {
    Clock::time_point first = starts[size_t(run) * threads], last = ends[size_t(run) * threads];
    for (int t = 1; t < threads; ++t) {
      first = std::min(first, starts[size_t(run) * threads + t]);
      last = std::max(last, ends[size_t(run) * threads + t]);
    }
    seconds[size_t(run)] = std::chrono::duration<double>(last - first).count();
  }
  return seconds;
}

bool cpu_supports_isa_level(const HostCpu& cpu, int level) {
  return level >= 1 && level <= cpu.isa_level_number;
}

bool cpu_supports_isa_level(const HostCpu& cpu, const std::string& level) {
  return cpu_supports_isa_level(cpu, isa_level_number(level));
}

nlohmann::json to_json(const HostCpu& cpu) {
  return {
      {"vendor", cpu.vendor},
      {"model_name", cpu.model_name},
      {"isa_level", cpu.isa_level},
      {"avx2", cpu.avx2},
      {"fma", cpu.fma},
      {"avx512f", cpu.avx512f},
      {"logical_cores", cpu.logical_cores},
      {"physical_cores", cpu.physical_cores},
      {"cache",
       {{"l1d", cpu.caches.l1d},
        {"l2", cpu.caches.l2},
        {"l3", cpu.caches.l3},
        {"source", cpu.cache_source}}},
  };
}

}  // namespace dietcode
