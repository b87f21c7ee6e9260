// The ptxas report parser against logs captured verbatim from NVRTC 13.0 (--ptxas-options=-v).
#include "nvrtc/ptxas_report.h"

#include <gtest/gtest.h>

namespace dietcode {
namespace {

// Three entries for sm_80: a mangled C++ name, one with a local array (stack, no spill) and
// static shared memory, and a trivial one.
const char* kSm80Log = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z7mangledPi' for 'sm_80'
ptxas info    : Function properties for _Z7mangledPi
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers, 360 bytes cmem[0]
ptxas info    : Compile time = 1.467 ms
ptxas info    : Compiling entry function 'spilly' for 'sm_80'
ptxas info    : Function properties for spilly
ptxas         .     1200 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 1200 bytes cumulative stack size, 8192 bytes smem, 368 bytes cmem[0]
ptxas info    : Compile time = 152.020 ms
ptxas info    : Compiling entry function 'small' for 'sm_80'
ptxas info    : Function properties for small
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers, 364 bytes cmem[0]
ptxas info    : Compile time = 1.268 ms

)";

// sm_90a prints no cmem figure.
const char* kSm90aLog = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'spilly' for 'sm_90a'
ptxas info    : Function properties for spilly
ptxas         .     1200 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 1200 bytes cumulative stack size, 8192 bytes smem
ptxas info    : Compile time = 134.876 ms
)";

// --maxrregcount=32 on a kernel that needs more: real spills, a front-end warning before the
// report, and a non-inlined __device__ function reported after the entries.
const char* kSpillLog =
    R"(probe2.cu(16): warning #177-D: variable "q" was declared but never referenced
  extern "C" __global__ void unused_var(int* p) { int q; p[0] = 1; }
                                                      ^

Remark: The warnings can be suppressed with "-diag-suppress <warning-number>"

ptxas info    : Overriding maximum register limit 256 for 'unused_var' with  32 of maxrregcount option
ptxas info    : Overriding maximum register limit 256 for 'regs' with  32 of maxrregcount option
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'unused_var' for 'sm_80'
ptxas info    : Function properties for unused_var
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers, 360 bytes cmem[0]
ptxas info    : Compile time = 1.349 ms
ptxas info    : Compiling entry function 'regs' for 'sm_80'
ptxas info    : Function properties for regs
ptxas         .     1264 bytes stack frame, 2376 bytes spill stores, 2492 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 1264 bytes cumulative stack size, 368 bytes cmem[0]
ptxas info    : Compile time = 668.588 ms
ptxas info    : Function properties for _Z6helperPfi
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

)";

// The spills happen in a non-inlined __device__ function; the entry calling it reports none.
const char* kCalleeSpillLog =
    R"(ptxas info    : Overriding maximum register limit 256 for 'calls_heavy' with  32 of maxrregcount option
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'calls_heavy' for 'sm_90'
ptxas info    : Function properties for calls_heavy
ptxas         .     1264 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 1264 bytes cumulative stack size
ptxas info    : Compile time = 366.330 ms
ptxas info    : Function properties for _Z5heavyPKf
ptxas         .     0 bytes stack frame, 2376 bytes spill stores, 2492 bytes spill loads
)";

void expect_resources(const KernelResources& r, const std::string& entry, int registers,
                      int static_smem, int stack_frame, int spill_stores, int spill_loads) {
  SCOPED_TRACE(entry);
  EXPECT_EQ(r.entry, entry);
  EXPECT_EQ(r.registers, registers);
  EXPECT_EQ(r.static_smem, static_smem);
  EXPECT_EQ(r.stack_frame, stack_frame);
  EXPECT_EQ(r.spill_stores, spill_stores);
  EXPECT_EQ(r.spill_loads, spill_loads);
}

TEST(PtxasReport, ParsesEveryEntryInOrder) {
  PtxasReport report = parse_ptxas_report(kSm80Log);
  ASSERT_EQ(report.entries.size(), 3u);
  expect_resources(report.entries[0], "_Z7mangledPi", 8, 0, 0, 0, 0);
  expect_resources(report.entries[1], "spilly", 32, 8192, 1200, 0, 0);
  expect_resources(report.entries[2], "small", 8, 0, 0, 0, 0);
  EXPECT_TRUE(report.functions.empty());
}

TEST(PtxasReport, ParsesLinesWithoutCmem) {
  PtxasReport report = parse_ptxas_report(kSm90aLog);
  ASSERT_EQ(report.entries.size(), 1u);
  expect_resources(report.entries[0], "spilly", 32, 8192, 1200, 0, 0);
}

TEST(PtxasReport, ParsesSpillsAndSkipsWarnings) {
  PtxasReport report = parse_ptxas_report(kSpillLog);
  ASSERT_EQ(report.entries.size(), 2u);
  expect_resources(report.entries[0], "unused_var", 8, 0, 0, 0, 0);
  expect_resources(report.entries[1], "regs", 32, 0, 1264, 2376, 2492);
  ASSERT_EQ(report.functions.size(), 1u);
  expect_resources(report.functions[0], "_Z6helperPfi", 0, 0, 0, 0, 0);
  // A device function that does not spill adds nothing.
  std::vector<KernelResources> entries = entry_resources(report);
  ASSERT_EQ(entries.size(), 2u);
  expect_resources(entries[0], "unused_var", 8, 0, 0, 0, 0);
  expect_resources(entries[1], "regs", 32, 0, 1264, 2376, 2492);
}

TEST(PtxasReport, CalleeSpillsCountAgainstTheEntry) {
  PtxasReport report = parse_ptxas_report(kCalleeSpillLog);
  ASSERT_EQ(report.entries.size(), 1u);
  expect_resources(report.entries[0], "calls_heavy", 32, 0, 1264, 0, 0);
  ASSERT_EQ(report.functions.size(), 1u);
  expect_resources(report.functions[0], "_Z5heavyPKf", 0, 0, 0, 2376, 2492);
  std::vector<KernelResources> entries = entry_resources(report);
  ASSERT_EQ(entries.size(), 1u);
  expect_resources(entries[0], "calls_heavy", 32, 0, 1264, 2376, 2492);
}

TEST(PtxasReport, ErrorLogHasNoEntries) {
  PtxasReport report = parse_ptxas_report(
      "bad.cu(1): error: expected a \";\"\n"
      "  extern \"C\" __global__ void k(int* p) { p[0] = 1 }\n"
      "                                                  ^\n\n"
      "1 error detected in the compilation of \"bad.cu\".\n");
  EXPECT_TRUE(report.entries.empty());
  EXPECT_TRUE(report.functions.empty());
}

// Synthetic: a log copied through a Windows tool, cut off after a "Function properties" line.
TEST(PtxasReport, ToleratesWindowsLineEndsAndTruncation) {
  PtxasReport report = parse_ptxas_report(
      "ptxas info    : Compiling entry function 'k' for 'sm_90'\r\n"
      "ptxas info    : Function properties for k\r\n"
      "ptxas         .     16 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\r\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 49152 bytes smem\r\n"
      "ptxas info    : Compiling entry function 'cut' for 'sm_90'\n"
      "ptxas info    : Function properties for cut\n");
  ASSERT_EQ(report.entries.size(), 2u);
  expect_resources(report.entries[0], "k", 255, 49152, 16, 4, 4);
  expect_resources(report.entries[1], "cut", 0, 0, 0, 0, 0);
}

}  // namespace
}  // namespace dietcode
