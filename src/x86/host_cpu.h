// The machine the CPU target runs on: what `dietcode devices`, tune and bench record about it,
// and what decides which ISA level's shared object may run here.
//
//   HostCpu cpu = detect_host_cpu();
//   cpu.isa_level            "x86-64-v3"
//   cpu.fp32_peak_gflops(2)  ~196 on a 2-core Zen 3 guest (ymm), ~490 on a 2-core AVX-512 Xeon
//                            guest (zmm); a ~90 ms probe
//
// The ISA level is the x86-64 psABI's (the levels GCC and Clang accept in -march=):
//   x86-64     baseline (SSE2)
//   x86-64-v2  + CMPXCHG16B LAHF-SAHF POPCNT SSE3 SSE4.1 SSE4.2 SSSE3
//   x86-64-v3  + AVX AVX2 BMI1 BMI2 F16C FMA LZCNT MOVBE, and the OS saves YMM state
//   x86-64-v4  + AVX512F AVX512BW AVX512CD AVX512DQ AVX512VL, and the OS saves ZMM state
// "The OS saves the state" is XCR0 (xgetbv(0), only readable when CPUID says OSXSAVE): bits 1|2
// (SSE, AVX) for v3, and also 5|6|7 (opmask, ZMM_Hi256, Hi16_ZMM) for v4. A CPU with AVX-512 under
// a kernel or hypervisor that does not enable ZMM state is v3: AVX-512 code would SIGILL there.
//
// The decision is a pure function of CpuidBits (isa_level_from_bits) and the cache reading
// takes its sysfs root as a parameter, so both are tested without the hardware they describe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dietcode {

// The CPUID feature bits and XCR0 the ISA level depends on.
struct CpuidBits {
  // x86-64-v2
  bool cx16 = false, lahf_lm = false, popcnt = false, sse3 = false, sse4_1 = false,
       sse4_2 = false, ssse3 = false;
  // x86-64-v3
  bool avx = false, avx2 = false, bmi1 = false, bmi2 = false, f16c = false, fma = false,
       lzcnt = false, movbe = false;
  // x86-64-v4
  bool avx512f = false, avx512bw = false, avx512cd = false, avx512dq = false, avx512vl = false;
  // OS support: CPUID.1:ECX.OSXSAVE and XCR0 (0 when OSXSAVE is clear).
  bool osxsave = false;
  uint64_t xcr0 = 0;
};

// This CPU's bits (cpuid, and xgetbv when OSXSAVE is set).
CpuidBits read_cpuid_bits();

// 1 (x86-64) .. 4 (x86-64-v4) from the bits, per the table above.
int isa_level_from_bits(const CpuidBits& bits);

// Whether the OS has enabled YMM state (XCR0 bits 1 and 2) / ZMM state (also 5, 6, 7).
bool os_saves_ymm(const CpuidBits& bits);
bool os_saves_zmm(const CpuidBits& bits);

// "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4" for 1..4; std::invalid_argument otherwise.
std::string isa_level_name(int level);

// The inverse: 1..4 for the four names above. Anything else is a UserError with one line:
//   unknown ISA level "x86-64-v5"; expected x86-64-v3 or x86-64-v4
int isa_level_number(const std::string& name);

// Cache sizes in bytes; 0 where unknown. L1d and L2 per core, L3 as seen by cpu0 (per CCX on
// Zen: the cache cpu0 shares with its neighbours).
struct CacheSizes {
  int64_t l1d = 0, l2 = 0, l3 = 0;
};

// From ROOT/cpu0/cache/index*/{level,type,size} (ROOT is normally /sys/devices/system/cpu):
// level 1 with type Data (or Unified), level 2 and level 3 of type Data or Unified; sizes like
// "32K", "512K", "32768K", "1M" or a plain byte count. Missing files or folders give zeros.
CacheSizes read_sysfs_caches(const std::string& root);

// From CPUID: leaf 4 (Intel) or 0x8000001D (AMD, with TOPOEXT), else 0x80000005/0x80000006
// (AMD's legacy L1d/L2/L3 leaves). Zeros where nothing answers.
CacheSizes read_cpuid_caches();

struct HostCpu {
  std::string vendor;      // "AuthenticAMD", "GenuineIntel"
  std::string model_name;  // the brand string, trimmed: "AMD EPYC 7B13 64-Core Processor"
  std::string isa_level;   // "x86-64-v3"
  int isa_level_number = 1;
  bool avx2 = false, fma = false, avx512f = false;  // usable: also needs the OS's XSAVE state
  CpuidBits bits;

  int logical_cores = 1;   // CPUs in this process's affinity mask (sched_getaffinity)
  int physical_cores = 0;  // distinct (package, core) pairs among them; 0 when unknown
  CacheSizes caches;
  std::string cache_source;  // "sysfs" or "cpuid"

  // fp32 FMA throughput in GFLOP/s on `threads` threads (0 = logical_cores), each pinned to
  // its own CPU of the affinity mask: 12 independent FMA chains per thread (zmm when avx512f,
  // else ymm when avx2 and fma, else SSE mul + add), best of 3 runs of ~25 ms.
  // vector_bits caps the width: 256 measures ymm FMAs on an AVX-512 CPU too (the AVX2
  // template's peak, which on many CPUs is half the zmm one); 0 takes the widest.
  // Measured on every call (~80 ms); cache it if you call it often.
  double fp32_peak_gflops(int threads, int vector_bits = 0) const;
};

// Runs body(thread, run) on `threads` threads, each pinned to its own CPU of the affinity mask
// (the caller is thread 0 and gets its affinity back), `runs` times with a barrier before each
// run. Returns each run's seconds, from the first thread's start to the last thread's end: the
// harness of every probe here.
std::vector<double> time_pinned_runs(int threads, int runs,
                                     const std::function<void(int thread, int run)>& body);

// The host, read once per call (cpuid, sysfs, sched_getaffinity; no probe).
HostCpu detect_host_cpu();
// The same with the sysfs root for the caches (tests).
HostCpu detect_host_cpu(const std::string& sysfs_cpu_root);

// An `--arch LEVEL` for the CPU templates on `cpu` (tune and bench take one), as a level number.
// `option` starts each message ("--arch", "dietcode tune: --arch"). UserError for an unknown
// level or one below x86-64-v3, which every CPU template needs (AVX2 and FMA); EnvironmentError
// for a level this CPU cannot run.
int cpu_template_level(const std::string& arch, const HostCpu& cpu, const std::string& option);

// Whether a binary built for `level` (1..4, see isa_level_number) runs on `cpu`.
bool cpu_supports_isa_level(const HostCpu& cpu, int level);
bool cpu_supports_isa_level(const HostCpu& cpu, const std::string& level);

// {"vendor", "model_name", "isa_level", "avx2", "fma", "avx512f", "logical_cores",
//  "physical_cores", "cache": {"l1d", "l2", "l3", "source"}}; sizes in bytes.
nlohmann::json to_json(const HostCpu& cpu);

}  // namespace dietcode
