// GpuMeasurer: times candidates on a real GPU, through the CUDA Driver API, in a worker process
// (worker_process.h) so that a candidate that crashes, hangs or poisons its CUDA context costs
// one result, never the tuning run.
//
// A batch goes through two phases:
//   check  once per (micro-kernel, op), one candidate per request, each with its own
//          timeout: load the CUBIN, run it on up to three of its shapes (the first, the last
//          and one with a partial tile) and compare with the op's reference kernel
//          (generate_reference_kernel, compiled once per op for the device's arch). Crashes
//          and hangs show up here, one candidate at a time.
//   time   every candidate that passed, in one request: warm-up rounds, then timed rounds,
//          round-robin over candidates and shapes so clock and thermal drift favour none;
//          CUDA events around each launch, the median per shape, L2 flushed before every
//          launch on request. If the batch crashes or hangs anyway, each candidate is timed
//          alone to find the culprit.
// Worker outcomes become statuses: killed by a signal or exiting -> kLaunchError naming how;
// no answer in time -> kTimeout; the handler's own EnvironmentError (no driver, no GPU, out of
// memory for the operands) -> EnvironmentError thrown from here. A shape whose grid no launch
// can hold (LaunchPlan::grid refuses it) is kDeviceLimitsExceeded before any request.
//
// The tuner's process never initialises CUDA: the device's identity and limits come from the
// worker ("identify"). Which worker to start (worker_process.h):
//   exec'ed  std::make_unique<WorkerProcess>(gpu_worker_command()): the dietcode binary runs
//            itself as `dietcode __measure-worker`. The rule for the dietcode binary (tune):
//            always this one. The worker starts from a clean image, so neither CUDA state in
//            the parent nor a lock held at fork time by another of its threads (the tuner
//            compiles on several threads with NVRTC) can reach it.
//   forked   std::make_unique<WorkerProcess>(gpu_worker_handler()): for programs that are not
//            the dietcode binary, which must then never initialise CUDA themselves (CUDA does
//            not survive fork) and should fork while single-threaded. Seen on an H200 with
//            CUDA 13.0: a worker forked after the parent had compiled with NVRTC failed
//            cuInit (CUDA_ERROR_NOT_INITIALIZED), so prefer the exec'ed worker wherever the
//            process compiles too.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "measure/environment_health.h"
#include "measure/gpu_protocol.h"
#include "measure/measurer.h"
#include "measure/worker_process.h"
#include "nvrtc/compiler.h"
#include "space/gpu_spec.h"

namespace dietcode {

// The naive kernel an op's results are checked against, built for the device's arch.
struct ReferenceBuild {
  GeneratedKernel kernel;
  CompileResult compiled;
};
// nullopt: the op has no reference kernel; its candidates are still run alone first (crashes,
// hangs), but their results are not compared.
using ReferenceProvider =
    std::function<std::optional<ReferenceBuild>(const OpSpec& op, const std::string& arch)>;

// The reference check the tuner uses: generate_reference_kernel(op) (templates/reference_gemm.cu)
// compiled by `compiler` for the arch; nullopt for an op the reference kernel cannot compute.
// `compiler` must outlive the provider.
ReferenceProvider compiled_reference_provider(Compiler& compiler);

struct GpuMeasurerOptions {
  int device = 0;  // CUDA ordinal
  MeasureOptions measure;
  // How reference kernels are built. Unset: compiled_reference_provider(*compiler), or with
  // an NvrtcCompiler of the measurer's own when compiler is null too.
  ReferenceProvider reference;
  Compiler* compiler = nullptr;          // not owned; passing the tuner's shares its cache
  double identify_timeout_seconds = 60;  // first contact: driver load and context creation
};

class GpuMeasurer : public Measurer {
 public:
  // Asks the worker for the device. Throws EnvironmentError when there is no driver or GPU.
  GpuMeasurer(std::unique_ptr<WorkerProcess> worker, GpuMeasurerOptions options);

  DeviceIdentity device() const override { return identity_; }
  // The device's limits as the driver reports them, with peak figures from the shipped config
  // of the same model (device_query.h): what the search should enumerate within.
  const GpuSpec& gpu() const { return gpu_; }

  std::vector<MeasureResult> measure(const std::vector<MeasureInput>& inputs) override;

 private:
  struct Pending {
    size_t input;  // index into the batch
    WorkerCandidate candidate;
  };
  WorkerReply call(const nlohmann::json& request, double timeout_seconds);
  std::optional<WorkerKernel> reference_for(const OpSpec& op);
  void check(Pending& pending, MeasureResult& result);
  void time(const std::vector<Pending*>& group, std::vector<MeasureResult>& results);
  nlohmann::json request(const char* action) const;

  std::unique_ptr<WorkerProcess> worker_;
  GpuMeasurerOptions options_;
  std::string driver_;  // "NVIDIA driver 580.65.06 (CUDA 13.0)", from identify
  EnvironmentHealth health_;
  std::unique_ptr<Compiler> own_compiler_;  // for reference kernels when none was given
  DeviceIdentity identity_;
  GpuSpec gpu_;
  std::set<std::string> checked_;  // candidate ids whose result matched the reference
  std::map<std::string, std::optional<WorkerKernel>> references_;  // by op name
};

// How many GPUs the worker's driver sees, without creating a context on any. Throws
// EnvironmentError when there is no driver (or the worker cannot start).
int gpu_count(WorkerProcess& worker, double timeout_seconds = 60);

// The handler a GPU worker runs (gpu_worker.cc): the other side of gpu_protocol.h.
WorkerHandler gpu_worker_handler();

// The hidden subcommand of the dietcode binary that serves gpu_worker_handler() on
// kWorkerSocketFd (src/cli/cmd_measure_worker.cc).
inline constexpr char kMeasureWorkerSubcommand[] = "__measure-worker";

// The exec'ed worker's command: this very binary (/proc/self/exe, which stays valid even if
// the file is replaced during a long run) with kMeasureWorkerSubcommand. Only meaningful in
// the dietcode binary.
std::vector<std::string> gpu_worker_command();

}  // namespace dietcode
