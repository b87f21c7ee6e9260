// Compiles a generated kernel with NVRTC for sm_80 and sm_90 and checks what every template
// test asks of it: the compile succeeds, ptxas reports each entry (main and split-K reduce),
// no entry spills, registers are within 255. Prints registers and compile time per arch.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "codegen/generated_kernel.h"
#include "nvrtc/dense_f32_nvrtc.h"

namespace dietcode::testing {

inline void compile_and_check(const std::string& label, const GeneratedKernel& kernel) {
  SCOPED_TRACE(label);
  for (const std::string arch : {"sm_80", "sm_90"}) {
    const auto build = nvrtc_build(kernel.name + ".cu", kernel.source, kernel.options, arch);
    ASSERT_TRUE(build.ok) << arch << "\n" << build.log;
    std::vector<std::string> entries{kernel.plan.entry};
    if (!kernel.plan.reduce_entry.empty()) entries.push_back(kernel.plan.reduce_entry);
    for (const auto& entry : entries) {
      const KernelResources* r = build.entry(entry);
      ASSERT_NE(r, nullptr) << arch << ": no ptxas report for " << entry << "\n" << build.log;
      EXPECT_EQ(r->spill_stores, 0) << arch << " " << entry;
      EXPECT_EQ(r->spill_loads, 0) << arch << " " << entry;
      EXPECT_GT(r->registers, 0);
      EXPECT_LE(r->registers, 255);
    }
    const KernelResources* main = build.entry(kernel.plan.entry);
    std::printf("%-52s %s  %3d registers  %6.3f s\n", label.c_str(), arch.c_str(), main->registers,
                build.seconds);
  }
}

}  // namespace dietcode::testing
