// The Measurer seam: compiled candidates in, latencies out.
//
// Vocabulary (after TVM's auto-scheduler):
//   MeasureInput   one candidate: the operator, the micro-kernel, its generated source and launch
//                  plan, what the compiler made of it (the "BuildResult"), and the shape instances
//                  to time it on. Compile once, time on many instances: compiling costs 0.1-0.5 s,
//                  a launch costs microseconds (METHOD.md §4).
//   MeasureResult  what became of it: a status, and when ok one latency per instance.
//
// A bad candidate is data, never an exception: it fails to compile, exceeds the GPU's limits,
// crashes, hangs or computes the wrong numbers, and its result says so (MeasureStatus), so the
// search records it and moves on. A broken environment (no driver, no GPU, out of device
// memory for the inputs) is not the candidate's fault: measure() throws EnvironmentError and
// the tuning run stops with that message.
//
// Implementations:
//   SimulatedDevice (simulated_device.h)  an analytical model of a configured GPU: a TEST DOUBLE
//                                         for CI and demos, labelled simulated everywhere.
//   GpuMeasurer     (gpu_measurer.h)      the real GPU through the CUDA Driver API, in a worker
//                                         process so a crashing kernel cannot take the tuner down.
// The rest of this folder serves GpuMeasurer: worker_process.h (a handler in a child process,
// crashes and hangs as outcomes), gpu_protocol.h (what tuner and worker say), gpu_worker.cc (the
// GPU side), gpu_operands.h (operand contents, output comparison); launch geometry is the
// LaunchPlan's (codegen/generated_kernel.h).
// Results become tuning-log records through records_from_result (search/tuning_log.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/generated_kernel.h"
#include "nvrtc/compiler.h"
#include "space/micro_kernel.h"
#include "workload/workload.h"

namespace dietcode {

enum class MeasureStatus {
  kOk,
  kCompileError,          // the compiler rejected the source, or produced no binary for the GPU
  kLaunchError,           // the launch failed or the kernel crashed (illegal address, trap)
  kWrongResult,           // it ran, but disagrees with the reference kernel
  kTimeout,               // it did not finish within the measurer's timeout
  kDeviceLimitsExceeded,  // threads, registers or shared memory beyond what the GPU allows
};

// The spellings used in the tuning log (SPEC §4): "ok", "compile_error", "launch_error",
// "wrong_result", "timeout", "device_limits_exceeded".
const char* to_string(MeasureStatus status);
// The inverse of to_string; nullopt for any other text.
std::optional<MeasureStatus> parse_measure_status(const std::string& text);

// What the compiler produced for a candidate is TVM's BuildResult; ours is the Compiler seam's.
using BuildResult = CompileResult;

struct MeasureInput {
  const OpSpec* op = nullptr;  // not owned; outlives the measure() call
  MicroKernel mk;
  GeneratedKernel kernel;           // source, NVRTC options and the launch plan
  BuildResult compiled;             // CUBINs per arch and ptxas resources; ok == false is a
                                    // compile error the measurer reports as such
  std::vector<Instance> instances;  // the shapes to time it on (Instance::gemm is what counts)
};

struct MeasureResult {
  MeasureStatus status = MeasureStatus::kOk;
  std::string error;  // one line saying what went wrong; empty when ok
  // Median latency per instance, parallel to MeasureInput::instances, in microseconds. NaN
  // where an instance was not measured (any status other than ok, or a measurer that stopped
  // early on a candidate far slower than the best); a log gets a record only for finite values.
  std::vector<double> latency_us;
  double seconds = 0;  // wall time spent measuring this input
};

// The device a measurer times on, as written into every log record.
struct DeviceIdentity {
  std::string name;        // "NVIDIA H100 80GB HBM3"; "simulated NVIDIA H100 ..." for the model
  std::string arch;        // "sm_90"
  bool simulated = false;  // true: numbers come from a model, not from a GPU
  // The L2 regime of the timings: "flush" (a buffer larger than L2 overwritten before every
  // timed launch: cold weights, as in a model that runs many layers) or "warm". A log's
  // records of one regime are not comparable with the other's.
  std::string l2 = "flush";
  // The weights regime (CPU): true when the weights (dense's W, conv2d's filters) are taken as
  // constant, packed once outside the timing as a pack does for declared weights
  // (dietcode_declare_constant); false when kernels pack them in every timed call. Records of
  // the two regimes are not comparable either.
  bool constant_weights = false;
};

// How a real device times a candidate. The simulated device ignores what it cannot model.
struct MeasureOptions {
  int warmup = 3;               // untimed launches first (module loading is lazy, clocks ramp)
  int repeats = 10;             // timed launches; the median is reported
  bool flush_l2 = true;         // overwrite a buffer larger than L2 before every timed launch:
                                // cold-cache numbers instead of weights resident in L2, as
                                // `bench` times by default (tune and bench grade alike)
  double timeout_seconds = 10;  // per candidate; past it the worker is killed: kTimeout
  bool check_results = true;    // compare with the reference kernel on the first run of every
                                // (micro-kernel, op)
  uint64_t seed = 0;            // for the random inputs
};

class Measurer {
 public:
  virtual ~Measurer() = default;

  virtual DeviceIdentity device() const = 0;

  // Measures a batch; returns one result per input, in input order. Taking a batch lets a real
  // device interleave candidates (round-robin over the batch), so clock and thermal drift does
  // not favour whichever candidate ran first. Throws EnvironmentError only when the
  // environment is broken; every per-candidate failure is a result.
  virtual std::vector<MeasureResult> measure(const std::vector<MeasureInput>& inputs) = 0;
};

}  // namespace dietcode
