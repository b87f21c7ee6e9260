// libFuzzer target: parse_workload on arbitrary bytes must return a workload or throw
// UserError; any other exception, a crash or a sanitizer report is a bug. A workload that
// parses is also expanded into its instances, as `tune` and `build` do next (which may throw
// UserError for shapes that overflow, never anything else).
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.h"
#include "workload/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    dietcode::Workload workload = dietcode::parse_workload(text, "fuzz.json");
    size_t total = 0;
    for (const dietcode::OpSpec& op : workload.ops) {
      // Huge cross products are valid but slow: the fuzzer wants many small inputs.
      size_t count = 1;
      for (const std::string& name : op.vars) {
        const dietcode::ShapeVar* var = workload.find_var(name);
        count *= var ? var->values.size() : 1;
        if (count > 4096) break;
      }
      if (count > 4096) continue;
      total += dietcode::expand_instances(workload, op).size();
    }
    (void)total;
  } catch (const dietcode::UserError&) {
  }
  return 0;
}
