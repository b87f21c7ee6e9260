// GpuMeasurer: times candidates on a real GPU, through the CUDA Driver API, in a worker process
// (worker_process.h) so that a candidate that crashes, hangs or poisons its CUDA context costs
// one result, never the tuning run.
//
// A batch goes through two phases:
//   check  once per (micro-kernel, op), one candidate per request, each with its own
//          timeout: load the CUBIN, run it on up to three of its shapes (the first, the last
//          and one with a partial tile) and compare with the op's reference kernel. Crashes
//          and hangs show up here, one candidate at a time.
//   time   every candidate that passed, in one request: warm-up rounds, then timed rounds,
//          round-robin over candidates and shapes so clock and thermal drift favour none;
//          CUDA events around each launch, the median per shape, L2 flushed before every
//          launch on request. If the batch crashes or hangs anyway, each candidate is timed
//          alone to find the culprit.
// Worker outcomes become statuses: killed by a signal or exiting -> kLaunchError naming how;
// no answer in time -> kTimeout; the handler's own EnvironmentError (no driver, no GPU, out of
// memory for the operands) -> EnvironmentError thrown from here.
//
// The tuner's process never initialises CUDA: the device's identity and limits come from the
// worker ("identify"), so a forked worker can still use the GPU.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "measure/gpu_protocol.h"
#include "measure/measurer.h"
#include "measure/worker_process.h"
#include "space/gpu_spec.h"

namespace dietcode {

// The naive kernel an op's results are checked against, built for the device's arch.
struct ReferenceBuild {
  GeneratedKernel kernel;
  CompileResult compiled;
};
using ReferenceProvider = std::function<ReferenceBuild(const OpSpec& op, const std::string& arch)>;

struct GpuMeasurerOptions {
  int device = 0;  // CUDA ordinal
  MeasureOptions measure;
  ReferenceProvider reference;           // unset: results are not checked
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
  DeviceIdentity identity_;
  GpuSpec gpu_;
  std::set<std::string> checked_;  // candidate ids whose result matched the reference
  std::map<std::string, std::optional<WorkerKernel>> references_;  // by op name
};

// The handler a GPU worker runs (gpu_worker.cc): the other side of gpu_protocol.h.
WorkerHandler gpu_worker_handler();

}  // namespace dietcode
