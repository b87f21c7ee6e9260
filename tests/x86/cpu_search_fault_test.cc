// A CPU candidate that crashes while the joint search runs is recorded (status launch_error,
// "crashed with SIGSEGV") and the search goes on with the others, through the real measuring
// worker. The crash is injected at the Compiler seam: a TEST DOUBLE compiler builds, for the
// first candidate it is asked for, a shared object whose entry (same name and signature)
// dereferences null, and passes every other request to the system C++ compiler.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "search/joint_search.h"
#include "search/tuning_log.h"
#include "space/template_space.h"
#include "workload/workload.h"
#include "x86/cpu_measurer.h"
#include "x86/cxx_compiler.h"
#include "x86/host_cpu.h"

namespace dietcode {
namespace {

// Entry names are "dietcode_cpu_<hash>" in the generated source; the crashing one keeps it.
std::string entry_of(const std::string& source) {
  const std::string marker = "int dietcode_cpu_";
  const size_t at = source.rfind(marker);
  const size_t begin = at + 4, end = source.find('(', begin);
  return source.substr(begin, end - begin);
}

class FirstCandidateCrashes : public Compiler {
 public:
  explicit FirstCandidateCrashes(Compiler& inner) : inner_(inner) {}
  CompileResult compile(const CompileRequest& request) override {
    if (crashed_.exchange(true)) return inner_.compile(request);
    CompileRequest crashing = request;
    crashing.source =
        "extern \"C\" __attribute__((visibility(\"default\"))) int " + entry_of(request.source) +
        "(const void*, const void*) {\n"
        "  volatile int* nowhere = nullptr;\n"
        "  *nowhere = 1;\n"
        "  return 0;\n"
        "}\n";
    victim_entry_ = entry_of(request.source);
    return inner_.compile(crashing);
  }
  const std::string& victim_entry() const { return victim_entry_; }

 private:
  Compiler& inner_;
  std::atomic<bool> crashed_{false};
  std::string victim_entry_;
};

TEST(CpuSearchFault, ACrashingCandidateIsRecordedAndTuningGoesOn) {
  if (detect_host_cpu().isa_level_number < 3) GTEST_SKIP() << "needs x86-64-v3";
  const Workload workload = parse_workload(R"({
    "name": "fault",
    "shape_vars": {"T": {"min": 1, "max": 4}},
    "ops": [{"name": "fc", "op": "dense", "dtype": "float32", "M": "T", "N": 64, "K": 32}]
  })",
                                           "fault.json");
  const std::string test_log_ = (std::filesystem::temp_directory_path() /
               ("dietcode_cpu_fault_" + std::to_string(getpid()) + ".jsonl"))
                  .string();

  CpuMeasurerOptions mo;
  mo.threads = 2;
  mo.arch = "x86-64-v3";
  mo.measure.warmup = 1;
  mo.measure.repeats = 3;
  mo.measure.flush_l2 = false;
  // Forked before any compile thread exists (see cpu_measurer.h).
  CpuMeasurer measurer(std::make_unique<WorkerProcess>(cpu_worker_handler()), mo);
  CxxCompiler cxx;
  FirstCandidateCrashes compiler(cxx);
  TuningLogWriter log(test_log_);

  SearchEnvironment env;
  env.compiler = &compiler;
  env.measurer = &measurer;
  env.log = &log;
  env.target = Target::kCpu;
  env.cpu.threads = 2;
  env.device = measurer.device();
  env.workload = workload.name;
  JointSearchOptions options;
  options.budget.trials_per_op = 4;
  options.kernels_per_round = 4;
  options.jobs = 1;  // one request at a time: the first one asked for is the victim
  JointSearch search(workload, {&workload.ops[0]}, env, options, [](const OpSpec&) {
    return std::vector<const TemplateSpace*>{&template_space("x86_avx2_f32")};
  });
  const JointSearchResult result = search.run();
  log.sync();

  ASSERT_EQ(result.ops.size(), 1u);
  EXPECT_EQ(result.ops[0].stats.failed_kernels, 1);
  EXPECT_GE(result.ops[0].kernels_used, 1) << "the other candidates were measured";
  std::vector<std::string> warnings;
  const TuningLog read = read_tuning_log(test_log_, warnings);
  int crashed = 0, ok = 0;
  for (const TuningRecord& r : read.records) {
    if (r.status == MeasureStatus::kLaunchError) {
      ++crashed;
      EXPECT_NE(r.error.find("SIGSEGV"), std::string::npos) << r.error;
    }
    ok += r.status == MeasureStatus::kOk;
  }
  EXPECT_GE(crashed, 1);
  EXPECT_GE(ok, 4) << "a kernel measured on all 4 instances";
  std::filesystem::remove(test_log_);
}

}  // namespace
}  // namespace dietcode
