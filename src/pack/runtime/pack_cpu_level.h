/* The x86-64 ISA level of the CPU a CPU pack runs on, as a number: 1 (x86-64), 2 (-v2),
 * 3 (-v3: AVX2, FMA, BMI1/2, F16C, LZCNT, MOVBE) or 4 (-v4: AVX-512 F, BW, CD, DQ, VL), the
 * levels of the psABI that -march=x86-64-vN compiles for. A level counts only when the CPU has
 * every feature of it and the OS saves the vector registers it needs (XCR0: SSE and AVX state
 * for v3, also the opmask and upper ZMM state for v4), so a kernel of that level cannot fault.
 *
 * Read with cpuid directly rather than __builtin_cpu_supports, whose feature names differ
 * between compilers and versions, so the pack means the same whichever compiler built it.
 * Part of pack_runtime_cpu.cc (included by it, and only by it). */
#ifndef DIETCODE_PACK_CPU_LEVEL_H_
#define DIETCODE_PACK_CPU_LEVEL_H_

#include <cpuid.h>

#include <cstdint>
#include <cstdlib>

namespace dietcode_pack {
namespace {

inline bool bit(unsigned reg, int n) { return (reg >> n) & 1u; }

inline uint64_t read_xcr0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

// What cpuid says, without the test override.
inline int detected_x86_level() {
  unsigned a, b, c1, d;
  if (!__get_cpuid(1, &a, &b, &c1, &d)) return 1;
  unsigned c_ext = 0;
  if (!__get_cpuid(0x80000001u, &a, &b, &c_ext, &d)) c_ext = 0;
  bool v2 = bit(c1, 0) /* SSE3 */ && bit(c1, 9) /* SSSE3 */ && bit(c1, 13) /* CMPXCHG16B */ &&
            bit(c1, 19) /* SSE4.1 */ && bit(c1, 20) /* SSE4.2 */ && bit(c1, 23) /* POPCNT */ &&
            bit(c_ext, 0) /* LAHF/SAHF */;
  if (!v2) return 1;
  unsigned b7 = 0, c7 = 0, d7 = 0;
  if (!__get_cpuid_count(7, 0, &a, &b7, &c7, &d7)) b7 = 0;
  const uint64_t xcr0 = bit(c1, 27) /* OSXSAVE */ ? read_xcr0() : 0;
  bool v3 = bit(c1, 28) /* AVX */ && bit(b7, 5) /* AVX2 */ && bit(b7, 3) /* BMI1 */ &&
            bit(b7, 8) /* BMI2 */ && bit(c1, 29) /* F16C */ && bit(c1, 12) /* FMA */ &&
            bit(c_ext, 5) /* LZCNT */ && bit(c1, 22) /* MOVBE */ &&
            (xcr0 & 0x6) == 0x6 /* XMM and YMM state */;
  if (!v3) return 2;
  bool v4 = bit(b7, 16) /* AVX512F */ && bit(b7, 17) /* DQ */ && bit(b7, 28) /* CD */ &&
            bit(b7, 30) /* BW */ && bit(b7, 31) /* VL */ &&
            (xcr0 & 0xe6) == 0xe6 /* and opmask, ZMM_Hi256, Hi16_ZMM state */;
  return v4 ? 4 : 3;
}

// DIETCODE_CPU_LEVEL=N (1..4): the level never exceeds N, so a test (or `bench --arch`) can make
// a v4 CPU look like a v3 one. It can only lower the level (running a kernel the CPU lacks would
// fault). Any other value is ignored. 0 when unset or ignored.
inline int level_cap_from_environment() {
  const char* text = std::getenv("DIETCODE_CPU_LEVEL");
  if (!text || text[0] < '1' || text[0] > '4' || text[1] != '\0') return 0;
  return text[0] - '0';
}

// The level the pack uses: detected once (a thread-safe static), then capped.
inline int host_x86_level() {
  static const int level = [] {
    int detected = detected_x86_level(), cap = level_cap_from_environment();
    return cap && cap < detected ? cap : detected;
  }();
  return level;
}

}  // namespace
}  // namespace dietcode_pack

#endif /* DIETCODE_PACK_CPU_LEVEL_H_ */
