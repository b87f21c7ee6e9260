// What GpuMeasurer (the tuner's process) and its GPU worker (worker_process.h) say to each
// other. Requests and replies are JSON values (CBOR on the wire, so CUBINs travel as binary):
//
//   {"action": "identify", "device": N}
//       -> the GPU as a GpuSpec (gpu_spec_to_json) plus "arch"; the tuner learns the device's
//          limits from here, so it never initialises CUDA itself (CUDA does not survive fork).
//   {"action": "count", "device": N}
//       -> {"count": C}: how many GPUs the driver sees (device is ignored); for --devices.
//   {"action": "check", "device": N, "seed": S, "candidate": C}
//       -> {"status", "error", "context_lost"}: loads C, runs it once on each of its
//          check_shapes and compares with its reference kernel (when it has one).
//   {"action": "time", "device": N, "seed": S, "warmup": W, "repeats": R, "flush_l2": bool,
//    "candidates": [C, ...]}
//       -> {"results": [{"status", "error", "latency_us": [...]}, ...], "context_lost"}:
//          times every candidate on every one of its shapes, round-robin over candidates and
//          shapes (shape by shape, the candidates in turn: timing_order.h), W untimed rounds
//          then R timed ones; the median per shape.
//
// A candidate C carries everything needed to run it in a fresh worker: the kernel image and
// launch plan, the op's element types and epilogue, its shapes, and optionally the reference
// kernel. "context_lost": the candidate faulted in a way that poisons the CUDA context (an
// illegal address, a trap): the tuner replaces the worker before the next request.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "codegen/generated_kernel.h"
#include "measure/conv2d_shape.h"
#include "measure/measurer.h"
#include "workload/workload.h"

namespace dietcode {

// A loadable kernel: an image (CUBIN bytes, or PTX text the driver JIT-compiles) and how to
// launch it. `id` is the worker's cache key for the loaded module.
struct WorkerKernel {
  std::string id;
  std::string image;
  LaunchPlan plan;
};

// What the worker needs to know of an op to make its operands.
struct WorkerOp {
  std::string name;
  OpKind kind = OpKind::kDense;
  DType dtype = DType::kFloat32;
  Epilogue epilogue = Epilogue::kNone;
  bool transpose_a = false, transpose_b = false;
  WeightLayout weight_layout = WeightLayout::kNK;  // dense
};

struct WorkerCandidate {
  WorkerKernel kernel;
  WorkerOp op;
  std::vector<GemmShape> shapes;          // to time on
  std::vector<Conv2dShape> conv;          // conv2d only: each shape's geometry, parallel to shapes
  std::vector<int> check_shapes;          // indices into shapes to check the result on
  std::optional<WorkerKernel> reference;  // the naive kernel results are compared with
};

struct WorkerResult {
  MeasureStatus status = MeasureStatus::kOk;
  std::string error;
  std::vector<double> latency_us;  // parallel to the candidate's shapes ("time" only)
  bool run = true;  // false: not reached, because an earlier candidate lost the context
};

nlohmann::json to_json(const WorkerCandidate& candidate);
// Throws std::invalid_argument on a request this code did not write: a protocol bug.
WorkerCandidate candidate_from_json(const nlohmann::json& j);

nlohmann::json to_json(const WorkerResult& result);
WorkerResult result_from_json(const nlohmann::json& j);

}  // namespace dietcode
