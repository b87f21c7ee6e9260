// The pieces of "what a real GPU would show and the emulation cannot" that need no GPU:
//   - guard_violation, which catches a candidate writing outside its output;
//   - EnvironmentHealth, which tells a broken driver (every candidate failing the same way)
//     from bad kernels;
//   - the queue-hold kernel's PTX (assembled by ptxas where the toolkit has it) and the pacing
//     of its holds;
//   - the L2 regime in every log record and in what a resumed run takes from the log.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "cuda/l2_flush.h"
#include "measure/environment_health.h"
#include "measure/gpu_operands.h"
#include "measure/queue_hold.h"
#include "search/log_resume.h"
#include "search/tuning_log.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;

std::string buffer_with(size_t guard, size_t output, unsigned char fill) {
  return std::string(guard + output + guard, static_cast<char>(fill));
}

TEST(GuardViolation, NothingOutsideTheOutputChangedIsClean) {
  std::string b = buffer_with(16, 32, 0xFF);
  for (size_t i = 16; i < 48; ++i) b[i] = 0;  // the output itself may hold anything
  EXPECT_EQ(guard_violation(b, 16, 32, 0xFF), "");
}

TEST(GuardViolation, SaysWhereTheStrayWritesWent) {
  std::string b = buffer_with(16, 32, 0xFF);
  b[48] = b[49] = 0;   // the first two bytes past the end
  b[60] = 1;           // and one further on
  b[10] = b[15] = 2;   // two before the start, the nearest right before it
  EXPECT_EQ(guard_violation(b, 16, 32, 0xFF),
            "wrote outside its output: 2 bytes changed before the start of C, the nearest at "
            "start - 1; 3 bytes changed past the end of C, the first at end + 0");
}

// A smaller shape's output is a prefix of the buffer: everything after it is a guard band.
TEST(GuardViolation, AfterASmallerOutputTheRestOfTheBufferIsGuarded) {
  std::string b = buffer_with(16, 64, 0xFF);
  b[16 + 40] = 0;
  EXPECT_EQ(guard_violation(b, 16, 32, 0xFF),
            "wrote outside its output: 1 byte changed past the end of C, the first at end + 8");
}

TEST(EnvironmentHealth, TheSameLoadFailureOnEveryCandidateIsTheEnvironments) {
  EnvironmentHealth health;
  for (int i = 0; i < EnvironmentHealth::kStreak - 1; ++i) {
    health.observe(MeasureStatus::kCompileError,
                   "cuModuleLoadData(dense_f32:BM=" + std::to_string(16 << (i % 3)) +
                       "|qkv): CUDA_ERROR_INVALID_IMAGE: device kernel image is invalid");
    EXPECT_EQ(health.broken(), "") << i;
  }
  health.observe(MeasureStatus::kCompileError,
                 "cuModuleLoadData(dense_f32:BM=128|fc1): CUDA_ERROR_INVALID_IMAGE: device "
                 "kernel image is invalid");
  EXPECT_EQ(health.broken(),
            "the first 12 candidates all failed the same way (compile_error: "
            "cuModuleLoadData(dense_f32:BM=16|qkv): CUDA_ERROR_INVALID_IMAGE: device kernel "
            "image is invalid), which points at the environment rather than the kernels");
}

TEST(EnvironmentHealth, OnePassingCandidateShowsTheEnvironmentWorks) {
  EnvironmentHealth health;
  health.observe(MeasureStatus::kOk, "");
  for (int i = 0; i < 3 * EnvironmentHealth::kStreak; ++i)
    health.observe(MeasureStatus::kLaunchError, "cuLaunchKernel: CUDA_ERROR_LAUNCH_FAILED");
  EXPECT_EQ(health.broken(), "");
}

TEST(EnvironmentHealth, DifferentFailuresAndTheKernelsOwnFaultsBreakTheStreak) {
  EnvironmentHealth health;
  for (int i = 0; i < 3 * EnvironmentHealth::kStreak; ++i) {
    health.observe(MeasureStatus::kLaunchError, "cuLaunchKernel: CUDA_ERROR_LAUNCH_FAILED");
    if (i % 5 == 4) health.observe(MeasureStatus::kWrongResult, "C[0,0,0] = 1 where ...");
    if (i % 7 == 6)
      health.observe(MeasureStatus::kCompileError, "nvrtc: error: identifier \"x\" is undefined");
  }
  EXPECT_EQ(health.broken(), "");
}

TEST(EnvironmentHealth, ADriverOlderThanTheToolkitIsBrokenAtOnce) {
  EnvironmentHealth health;
  health.observe(MeasureStatus::kOk, "");
  health.observe(MeasureStatus::kCompileError,
                 "cuModuleLoadData(x): CUDA_ERROR_UNSUPPORTED_PTX_VERSION: the provided PTX was "
                 "compiled with an unsupported toolchain");
  EXPECT_EQ(health.broken(),
            "the NVIDIA driver cannot load what NVRTC compiled (cuModuleLoadData(x): "
            "CUDA_ERROR_UNSUPPORTED_PTX_VERSION: the provided PTX was compiled with an "
            "unsupported toolchain): the driver is older than the CUDA toolkit");
}

TEST(EnvironmentHealth, ErrorSignaturesDropWhatNamesTheKernel) {
  EXPECT_EQ(error_signature("cuModuleLoadData(a|b): CUDA_ERROR_INVALID_IMAGE: x"),
            "CUDA_ERROR_INVALID_IMAGE");
  EXPECT_EQ(error_signature("no CUBIN for sm_90 (built for: sm_80)"),
            "no CUBIN for sm_ (built for: sm_)");
}

TEST(QueueHold, HoldsTwiceTheLastEnqueueTimeWithinBounds) {
  QueueHoldPacer pacer;
  EXPECT_EQ(pacer.next_hold_us(), QueueHoldPacer::kFirstHoldUs);
  pacer.enqueued(300);
  EXPECT_EQ(pacer.next_hold_us(), 600);
  pacer.enqueued(1);
  EXPECT_EQ(pacer.next_hold_us(), 20);
  pacer.enqueued(1e6);
  EXPECT_EQ(pacer.next_hold_us(), 50000);
}

// Whether ptxas assembles hand-written PTX for every arch from Turing, as the driver's JIT must;
// "" when it does or when the toolkit has no ptxas (the caller then skips), else what failed.
std::string ptx_assembly_failures(const char* ptx, const std::string& stem, bool* no_ptxas) {
  const fs::path ptxas = fs::path(DIETCODE_CUDA_BIN_DIR) / "ptxas";
  *no_ptxas = !fs::exists(ptxas);
  if (*no_ptxas) return "";
  const fs::path dir =
      fs::temp_directory_path() / ("dietcode_" + stem + "_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / (stem + ".ptx")) << ptx;
  std::string failed;
  for (const char* arch : {"sm_75", "sm_80", "sm_90"}) {
    const std::string command = ptxas.string() + " -arch=" + arch + " " +
                                (dir / (stem + ".ptx")).string() + " -o " +
                                (dir / (stem + ".cubin")).string() + " 2>&1";
    if (std::system(command.c_str()) != 0) failed += std::string(failed.empty() ? "" : ", ") + arch;
  }
  fs::remove_all(dir);
  return failed;
}

// The hold is hand-written PTX the driver JIT-compiles; ptxas checks it the same way.
TEST(QueueHold, ThePtxAssemblesForEveryArchFromTuring) {
  bool no_ptxas = false;
  EXPECT_EQ(ptx_assembly_failures(queue_hold_ptx(), "hold", &no_ptxas), "");
  if (no_ptxas) GTEST_SKIP() << "no ptxas in " << DIETCODE_CUDA_BIN_DIR;
}

// The L2 flush tune and bench share is hand-written PTX too; and its grid covers any buffer
// with at most 1024 blocks of 256 threads (a grid-stride loop does the rest).
TEST(L2Flush, ThePtxAssemblesForEveryArchFromTuringAndTheGridIsCapped) {
  EXPECT_EQ(L2FlushGrid::blocks(1), 1u);
  EXPECT_EQ(L2FlushGrid::blocks(256), 1u);
  EXPECT_EQ(L2FlushGrid::blocks(257), 2u);
  EXPECT_EQ(L2FlushGrid::blocks(int64_t(120) << 18), 1024u);  // 120 MiB of words
  bool no_ptxas = false;
  EXPECT_EQ(ptx_assembly_failures(l2_flush_ptx(), "flush", &no_ptxas), "");
  if (no_ptxas) GTEST_SKIP() << "no ptxas in " << DIETCODE_CUDA_BIN_DIR;
}

TuningRecord record(const std::string& l2) {
  TuningRecord r;
  r.workload = "w";
  r.op = "qkv";
  r.mk = {"dense_f32", {{"BM", 64}}};
  r.shape = {{"T", 1}};
  r.gemm = {1, 16, 2304, 768};
  r.latency_us = 10;
  r.device = "NVIDIA H100 80GB HBM3";
  r.arch = "sm_90";
  r.l2 = l2;
  r.tool_version = "0.1.0";
  r.timestamp = "2025-03-01T12:00:00.123Z";
  return r;
}

TEST(L2Regime, EveryRecordSaysWhichAndOldLogsReadAsWarm) {
  nlohmann::json j = record("flush").to_json();
  EXPECT_EQ(j.at("l2"), "flush");
  EXPECT_EQ(TuningRecord::from_json(j).l2, "flush");
  j.erase("l2");
  EXPECT_EQ(TuningRecord::from_json(j).l2, "warm");
  j["l2"] = "cold";
  try {
    TuningRecord::from_json(j);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "l2: expected \"flush\" or \"warm\"");
  }
}

TEST(L2Regime, AResumedRunTakesOnlyRecordsOfItsOwnRegime) {
  const fs::path path = fs::temp_directory_path() / ("dietcode_l2_" + std::to_string(getpid()));
  {
    TuningLogWriter writer(path.string());
    writer.append(record("flush"));
    writer.append(record("warm"));
    writer.append(record("warm"));
  }
  DeviceIdentity device{"NVIDIA H100 80GB HBM3", "sm_90", false, "flush"};
  ResumeState flushed = read_log_for_resume(path.string(), "w", device);
  EXPECT_EQ(flushed.records.size(), 1u);
  ASSERT_EQ(flushed.notes.size(), 1u);
  EXPECT_EQ(flushed.notes[0], path.string() +
                                  ": ignoring 2 records timed with the L2 warm: this run times "
                                  "with the L2 flushed (--l2)");
  device.l2 = "warm";
  EXPECT_EQ(read_log_for_resume(path.string(), "w", device).records.size(), 2u);
  fs::remove(path);
}

// The weights regime (tune --constant-weights) is recorded like the L2's: "weights":
// "constant" when set, nothing otherwise (old logs read as weights packed in every call), and a
// resumed run takes only records of its own regime.
TEST(WeightsRegime, RecordedWhenConstantAndAResumedRunKeepsToItsOwn) {
  TuningRecord constant = record("flush");
  constant.constant_weights = true;
  nlohmann::json j = constant.to_json();
  EXPECT_EQ(j.at("weights"), "constant");
  EXPECT_TRUE(TuningRecord::from_json(j).constant_weights);
  EXPECT_FALSE(record("flush").to_json().contains("weights"));
  EXPECT_FALSE(TuningRecord::from_json(record("flush").to_json()).constant_weights);
  j["weights"] = "per_call";
  EXPECT_FALSE(TuningRecord::from_json(j).constant_weights);
  j["weights"] = "frozen";
  try {
    TuningRecord::from_json(j);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "weights: expected \"constant\" or \"per_call\"");
  }

  const fs::path path =
      fs::temp_directory_path() / ("dietcode_weights_" + std::to_string(getpid()));
  {
    TuningLogWriter writer(path.string());
    writer.append(constant);
    writer.append(record("flush"));
    writer.append(record("flush"));
  }
  DeviceIdentity device{"NVIDIA H100 80GB HBM3", "sm_90", false, "flush"};
  ResumeState per_call = read_log_for_resume(path.string(), "w", device);
  EXPECT_EQ(per_call.records.size(), 2u);
  ASSERT_EQ(per_call.notes.size(), 1u);
  EXPECT_EQ(per_call.notes[0], path.string() +
                                   ": ignoring 1 record timed with the weights constant: this "
                                   "run times them packed in every call (--constant-weights)");
  device.constant_weights = true;
  ResumeState constant_run = read_log_for_resume(path.string(), "w", device);
  ASSERT_EQ(constant_run.records.size(), 1u);
  EXPECT_TRUE(constant_run.records[0].constant_weights);
  fs::remove(path);
}

}  // namespace
}  // namespace dietcode
