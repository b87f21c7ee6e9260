#include "x86/host_cpu.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;

CpuidBits v2_bits() {
  CpuidBits b;
  b.cx16 = b.lahf_lm = b.popcnt = b.sse3 = b.sse4_1 = b.sse4_2 = b.ssse3 = true;
  return b;
}

CpuidBits v3_bits() {
  CpuidBits b = v2_bits();
  b.avx = b.avx2 = b.bmi1 = b.bmi2 = b.f16c = b.fma = b.lzcnt = b.movbe = true;
  b.osxsave = true;
  b.xcr0 = 0x7;  // x87, SSE, AVX
  return b;
}

CpuidBits v4_bits() {
  CpuidBits b = v3_bits();
  b.avx512f = b.avx512bw = b.avx512cd = b.avx512dq = b.avx512vl = true;
  b.xcr0 = 0xE7;  // + opmask, ZMM_Hi256, Hi16_ZMM
  return b;
}

TEST(IsaLevel, ParsesThePsabiNames) {
  EXPECT_EQ(isa_level_number("x86-64"), 1);
  EXPECT_EQ(isa_level_number("x86-64-v2"), 2);
  EXPECT_EQ(isa_level_number("x86-64-v3"), 3);
  EXPECT_EQ(isa_level_number("x86-64-v4"), 4);
  for (int level = 1; level <= 4; ++level)
    EXPECT_EQ(isa_level_number(isa_level_name(level)), level);
  EXPECT_THROW(isa_level_name(5), std::invalid_argument);
}

TEST(IsaLevel, RejectsUnknownSpellingsWithOneLine) {
  for (const char* bad : {"x86-64-v5", "X86-64-V3", "avx2", "x86_64_v3", "", "x86-64-v3 "}) {
    try {
      isa_level_number(bad);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()), "unknown ISA level \"" + std::string(bad) +
                                           "\"; expected x86-64-v3 or x86-64-v4");
    }
  }
}

TEST(IsaLevel, FromBits) {
  EXPECT_EQ(isa_level_from_bits(CpuidBits{}), 1);
  EXPECT_EQ(isa_level_from_bits(v2_bits()), 2);
  EXPECT_EQ(isa_level_from_bits(v3_bits()), 3);
  EXPECT_EQ(isa_level_from_bits(v4_bits()), 4);

  // Any one v2 feature missing drops to the baseline.
  CpuidBits no_popcnt = v4_bits();
  no_popcnt.popcnt = false;
  EXPECT_EQ(isa_level_from_bits(no_popcnt), 1);

  // v3 needs every one of its features; a missing one leaves v2 even with AVX-512 present.
  for (bool CpuidBits::*feature : {&CpuidBits::avx, &CpuidBits::avx2, &CpuidBits::bmi1,
                                   &CpuidBits::bmi2, &CpuidBits::f16c, &CpuidBits::fma,
                                   &CpuidBits::lzcnt, &CpuidBits::movbe}) {
    CpuidBits b = v4_bits();
    b.*feature = false;
    EXPECT_EQ(isa_level_from_bits(b), 2);
  }
  for (bool CpuidBits::*feature : {&CpuidBits::avx512f, &CpuidBits::avx512bw,
                                   &CpuidBits::avx512cd, &CpuidBits::avx512dq,
                                   &CpuidBits::avx512vl}) {
    CpuidBits b = v4_bits();
    b.*feature = false;
    EXPECT_EQ(isa_level_from_bits(b), 3);
  }
}

TEST(IsaLevel, NeedsTheOsToSaveTheRegisters) {
  // AVX2 in CPUID but no OSXSAVE: the OS does not save YMM state, so v2.
  CpuidBits no_osxsave = v4_bits();
  no_osxsave.osxsave = false;
  EXPECT_FALSE(os_saves_ymm(no_osxsave));
  EXPECT_EQ(isa_level_from_bits(no_osxsave), 2);

  // OSXSAVE but AVX state not enabled in XCR0.
  CpuidBits no_ymm = v3_bits();
  no_ymm.xcr0 = 0x3;
  EXPECT_EQ(isa_level_from_bits(no_ymm), 2);

  // AVX-512 CPU under an OS (or hypervisor) that enables only YMM state: v3.
  CpuidBits no_zmm = v4_bits();
  no_zmm.xcr0 = 0x7;
  EXPECT_TRUE(os_saves_ymm(no_zmm));
  EXPECT_FALSE(os_saves_zmm(no_zmm));
  EXPECT_EQ(isa_level_from_bits(no_zmm), 3);

  // Opmask saved but not the upper ZMM halves.
  CpuidBits partial = v4_bits();
  partial.xcr0 = 0x27;
  EXPECT_EQ(isa_level_from_bits(partial), 3);
}

TEST(IsaLevel, SupportsLevelsUpToTheHosts) {
  HostCpu cpu;
  cpu.isa_level_number = 3;
  cpu.isa_level = "x86-64-v3";
  EXPECT_TRUE(cpu_supports_isa_level(cpu, 1));
  EXPECT_TRUE(cpu_supports_isa_level(cpu, "x86-64-v2"));
  EXPECT_TRUE(cpu_supports_isa_level(cpu, "x86-64-v3"));
  EXPECT_FALSE(cpu_supports_isa_level(cpu, "x86-64-v4"));
  EXPECT_FALSE(cpu_supports_isa_level(cpu, 0));
  EXPECT_THROW(cpu_supports_isa_level(cpu, "x86-64-v5"), UserError);
}

class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("dietcode_sysfs_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const std::string& relative, const std::string& text) {
    const fs::path path = root_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text << "\n";
  }
  void cache(int index, int level, const std::string& type, const std::string& size) {
    const std::string dir = "cpu0/cache/index" + std::to_string(index) + "/";
    write(dir + "level", std::to_string(level));
    write(dir + "type", type);
    write(dir + "size", size);
  }

  fs::path root_;
};

TEST_F(FakeSysfs, ReadsZen3Caches) {
  cache(0, 1, "Data", "32K");
  cache(1, 1, "Instruction", "64K");  // larger than L1d: must not be taken for it
  cache(2, 2, "Unified", "512K");
  cache(3, 3, "Unified", "32768K");
  const CacheSizes sizes = read_sysfs_caches(root_.string());
  EXPECT_EQ(sizes.l1d, 32 << 10);
  EXPECT_EQ(sizes.l2, 512 << 10);
  EXPECT_EQ(sizes.l3, int64_t(32) << 20);
}

TEST_F(FakeSysfs, ReadsOtherUnitsAndOrders) {
  cache(0, 1, "Instruction", "32K");
  cache(1, 1, "Data", "48K");
  cache(2, 2, "Unified", "2M");
  cache(3, 3, "Unified", "1048576");  // plain bytes
  const CacheSizes sizes = read_sysfs_caches(root_.string());
  EXPECT_EQ(sizes.l1d, 48 << 10);
  EXPECT_EQ(sizes.l2, 2 << 20);
  EXPECT_EQ(sizes.l3, 1 << 20);
}

TEST_F(FakeSysfs, MissingFilesGiveZeros) {
  EXPECT_EQ(read_sysfs_caches(root_.string()).l1d, 0);
  EXPECT_EQ(read_sysfs_caches((root_ / "nowhere").string()).l2, 0);
  cache(0, 1, "Data", "garbage");
  cache(1, 2, "Unified", "1024K");  // no L3 on this machine
  const CacheSizes sizes = read_sysfs_caches(root_.string());
  EXPECT_EQ(sizes.l1d, 0);
  EXPECT_EQ(sizes.l2, 1 << 20);
  EXPECT_EQ(sizes.l3, 0);
}

TEST_F(FakeSysfs, FallsBackToCpuidWithoutSysfs) {
  const HostCpu cpu = detect_host_cpu((root_ / "nowhere").string());
  EXPECT_EQ(cpu.cache_source, "cpuid");
  EXPECT_EQ(cpu.physical_cores, 0);  // no topology files
  // Every x86-64 CPU dietcode targets reports at least its L1d and L2 through CPUID.
  EXPECT_GE(cpu.caches.l1d, 16 << 10);
  EXPECT_GE(cpu.caches.l2, 128 << 10);
}

TEST(HostCpu, DescribesThisMachine) {
  const HostCpu cpu = detect_host_cpu();
  EXPECT_FALSE(cpu.vendor.empty());
  EXPECT_FALSE(cpu.model_name.empty());
  EXPECT_GE(cpu.isa_level_number, 2);  // anything running this test suite
  EXPECT_EQ(cpu.isa_level, isa_level_name(cpu.isa_level_number));
  if (cpu.isa_level_number >= 3) {
    EXPECT_TRUE(cpu.avx2 && cpu.fma);
  }
  if (cpu.isa_level_number >= 4) {
    EXPECT_TRUE(cpu.avx512f);
  }
  EXPECT_GE(cpu.logical_cores, 1);
  EXPECT_LE(cpu.physical_cores, cpu.logical_cores);
  EXPECT_GT(cpu.caches.l1d, 0);
  EXPECT_GT(cpu.caches.l2, 0);
  // The cpuid fallback agrees with sysfs on L1d where both answer.
  const CacheSizes from_cpuid = read_cpuid_caches();
  if (from_cpuid.l1d > 0) {
    EXPECT_EQ(from_cpuid.l1d, cpu.caches.l1d);
  }

  const nlohmann::json j = to_json(cpu);
  EXPECT_EQ(j.at("isa_level"), cpu.isa_level);
  EXPECT_EQ(j.at("logical_cores"), cpu.logical_cores);
  EXPECT_EQ(j.at("cache").at("l2"), cpu.caches.l2);
  EXPECT_EQ(j.at("cache").at("source"), cpu.cache_source);
  EXPECT_TRUE(j.at("avx2").is_boolean());
}

TEST(HostCpu, PeakProbeIsPlausible) {
  const HostCpu cpu = detect_host_cpu();
  const auto t0 = std::chrono::steady_clock::now();
  const double one = cpu.fp32_peak_gflops(1);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GT(one, 1.0);
  EXPECT_LT(one, 1000.0);  // ~99 on Zen 3 (ymm); ~245 on the AVX-512 Xeon guests (zmm)
  EXPECT_LT(ms, 1000.0);   // a short probe
  const double all = cpu.fp32_peak_gflops(cpu.logical_cores);
  EXPECT_GT(all, 1.0);
  // More threads than one never measures much less than one (loose: noisy shared machines).
  EXPECT_GT(all, 0.5 * one);
  std::printf("probe: 1 thread %.1f GFLOP/s (%.0f ms), %d threads %.1f GFLOP/s\n", one, ms,
              cpu.logical_cores, all);
}

}  // namespace
}  // namespace dietcode
