// The tuner's side of GPU measurement: turns MeasureInputs into worker requests, and worker
// outcomes into statuses. The GPU side is gpu_worker.cc.
#include "measure/gpu_measurer.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <stdexcept>

#include "common/error.h"
#include "measure/measure_common.h"
#include "nvrtc/nvrtc_compiler.h"

namespace dietcode {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// The image the device loads: its own CUBIN (an arch-specific one such as sm_90a runs on its
// exact compute capability too), else PTX for the driver to JIT.
std::optional<std::string> image_for(const CompileResult& compiled, const std::string& arch) {
  for (const auto& binary : compiled.binaries)
    if ((binary.arch == arch || binary.arch == arch + "a") && !binary.cubin.empty())
      return binary.cubin;
  if (!compiled.ptx.empty()) return compiled.ptx;
  return std::nullopt;
}

std::string nvrtc_version_text() {
  try {
    return NvrtcCompiler::version();
  } catch (const EnvironmentError&) {
    return "of unknown version";
  }
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Why no launch can run the plan on one of the shapes (LaunchPlan::grid and reduce_grid
// refuse it), or "" when every shape fits.
std::string unlaunchable(const LaunchPlan& plan, const std::vector<Instance>& instances) {
  unsigned grid[3];
  try {
    for (const Instance& inst : instances) {
      plan.grid(inst.gemm, grid);
      if (!plan.reduce_entry.empty()) plan.reduce_grid(inst.gemm, grid);
    }
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

ReferenceProvider compiled_reference_provider(Compiler& compiler) {
  return [&compiler](const OpSpec& op, const std::string& arch) -> std::optional<ReferenceBuild> {
    ReferenceBuild build;
    try {
      build.kernel = generate_reference_kernel(op);
    } catch (const UserError&) {  // an op kind or dtype the reference kernel does not compute
      return std::nullopt;
    }
    CompileRequest request;
    request.name = build.kernel.name + ".cu";
    request.source = build.kernel.source;
    request.options = build.kernel.options;
    request.archs = {arch};
    request.want_ptx = false;
    build.compiled = compiler.compile(request);
    return build;
  };
}

std::vector<std::string> gpu_worker_command() {
  return {"/proc/self/exe", kMeasureWorkerSubcommand};
}

int gpu_count(WorkerProcess& worker, double timeout_seconds) {
  WorkerReply reply = worker.call({{"action", "count"}, {"device", 0}}, timeout_seconds);
  if (reply.outcome != WorkerOutcome::kOk)
    throw EnvironmentError("the measurement worker cannot count the GPUs: " + reply.error);
  return reply.value.at("count").get<int>();
}

GpuMeasurer::GpuMeasurer(std::unique_ptr<WorkerProcess> worker, GpuMeasurerOptions options)
    : worker_(std::move(worker)), options_(std::move(options)) {
  WorkerReply reply = call(request("identify"), options_.identify_timeout_seconds);
  if (reply.outcome != WorkerOutcome::kOk)
    throw EnvironmentError(fmt::format("GPU {}: the measurement worker failed to start: {}",
                                       options_.device, reply.error));
  identity_.name = reply.value.at("name").get<std::string>();
  identity_.arch = reply.value.at("arch").get<std::string>();
  identity_.simulated = false;
  identity_.l2 = options_.measure.flush_l2 ? "flush" : "warm";
  if (reply.value.contains("driver")) {
    const json& d = reply.value.at("driver");
    const int cuda = d.value("cuda_version", 0);
    const std::string release = d.value("release", "");
    driver_ = fmt::format("NVIDIA driver {}(CUDA {}.{})", release.empty() ? "" : release + " ",
                          cuda / 1000, cuda % 1000 / 10);
  }
  try {
    gpu_ = parse_gpu_spec(reply.value.at("spec"), "GPU " + std::to_string(options_.device),
                          "device" + std::to_string(options_.device));
  } catch (const UserError& e) {
    throw EnvironmentError(std::string("the driver's report of the GPU is unusable: ") + e.what());
  }
  gpu_.queried = true;
}

json GpuMeasurer::request(const char* action) const {
  return {{"action", action}, {"device", options_.device}, {"seed", options_.measure.seed}};
}

WorkerReply GpuMeasurer::call(const json& request, double timeout_seconds) {
  // A worker started anew (after a fault) makes its context under the first-contact limit,
  // not under the limit of the candidate that happens to come next.
  if (worker_->pid() == 0 && request.at("action") != "identify") {
    WorkerReply ready = worker_->call(this->request("prepare"), options_.identify_timeout_seconds);
    if (ready.outcome == WorkerOutcome::kHandlerError && ready.environment_error)
      throw EnvironmentError(ready.error);
    if (ready.outcome != WorkerOutcome::kOk)
      throw EnvironmentError(fmt::format("GPU {}: the measurement worker failed to restart: {}",
                                         options_.device, ready.error));
  }
  WorkerReply reply = worker_->call(request, timeout_seconds);
  if (reply.outcome == WorkerOutcome::kHandlerError && reply.environment_error)
    throw EnvironmentError(reply.error);
  return reply;
}

std::optional<WorkerKernel> GpuMeasurer::reference_for(const OpSpec& op) {
  auto it = references_.find(op.name);
  if (it != references_.end()) return it->second;
  if (!options_.reference) {  // built on first use: a measurer that never checks needs no NVRTC
    if (!options_.compiler) {
      own_compiler_ = std::make_unique<NvrtcCompiler>();
      options_.compiler = own_compiler_.get();
    }
    options_.reference = compiled_reference_provider(*options_.compiler);
  }
  std::optional<ReferenceBuild> build = options_.reference(op, identity_.arch);
  if (!build) return references_[op.name] = std::nullopt;
  auto image = build->compiled.ok ? image_for(build->compiled, identity_.arch) : std::nullopt;
  if (!image)  // our own kernel: a bug, not the candidate's fault
    throw std::logic_error(fmt::format("the reference kernel for {} did not build for {}: {}",
                                       op.name, identity_.arch,
                                       first_line(build->compiled.log, "no image")));
  WorkerKernel kernel{"reference|" + op.name, *image, build->kernel.plan};
  return references_[op.name] = kernel;
}

void GpuMeasurer::check(Pending& pending, MeasureResult& result) {
  json req = request("check");
  req["candidate"] = to_json(pending.candidate);
  WorkerReply reply = call(req, options_.measure.timeout_seconds);
  switch (reply.outcome) {
    case WorkerOutcome::kOk: {
      WorkerResult checked = result_from_json(reply.value);
      if (reply.value.value("context_lost", false)) worker_->stop();
      result.status = checked.status;
      result.error = checked.error;
      if (checked.status == MeasureStatus::kOk) checked_.insert(pending.candidate.kernel.id);
      return;
    }
    case WorkerOutcome::kTimeout:
      result.status = MeasureStatus::kTimeout;
      break;
    default:  // crashed, or the handler failed on this candidate
      result.status = MeasureStatus::kLaunchError;
      break;
  }
  result.error = reply.error;
}

// Times a group in one request; if the worker dies or hangs on a group of several, times
// each alone so that only the culprit is marked.
void GpuMeasurer::time(const std::vector<Pending*>& group, std::vector<MeasureResult>& results) {
  if (group.empty()) return;
  auto start = Clock::now();
  json req = request("time");
  req["warmup"] = options_.measure.warmup;
  req["repeats"] = options_.measure.repeats;
  req["flush_l2"] = options_.measure.flush_l2;
  req["candidates"] = json::array();
  for (const Pending* p : group) req["candidates"].push_back(to_json(p->candidate));
  WorkerReply reply = call(req, options_.measure.timeout_seconds * double(group.size()));

  if (reply.outcome == WorkerOutcome::kOk) {
    if (reply.value.value("context_lost", false)) worker_->stop();
    const json& replies = reply.value.at("results");
    if (replies.size() != group.size())
      throw std::logic_error("the GPU worker answered for a different number of candidates");
    std::vector<Pending*> not_run;
    double share = seconds_since(start) / double(group.size());
    for (size_t i = 0; i < group.size(); ++i) {
      WorkerResult r = result_from_json(replies[i]);
      if (!r.run) {
        not_run.push_back(group[i]);
        continue;
      }
      MeasureResult& out = results[group[i]->input];
      out.status = r.status;
      out.error = r.error;
      if (r.status == MeasureStatus::kOk && r.latency_us.size() == out.latency_us.size())
        out.latency_us = r.latency_us;
      out.seconds += share;
    }
    if (not_run.size() < group.size()) time(not_run, results);
    return;
  }
  if (group.size() > 1) {
    for (Pending* p : group) time({p}, results);
    return;
  }
  MeasureResult& out = results[group[0]->input];
  out.status = reply.outcome == WorkerOutcome::kTimeout ? MeasureStatus::kTimeout
                                                        : MeasureStatus::kLaunchError;
  out.error = reply.error;
  out.seconds += seconds_since(start);
}

std::vector<MeasureResult> GpuMeasurer::measure(const std::vector<MeasureInput>& inputs) {
  std::vector<MeasureResult> results(inputs.size());
  std::vector<Pending> pending;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const MeasureInput& input = inputs[i];
    MeasureResult& result = results[i];
    result.latency_us.assign(input.instances.size(), std::numeric_limits<double>::quiet_NaN());
    if (!input.compiled.ok) {
      result.status = MeasureStatus::kCompileError;
      result.error = first_line(input.compiled.log, "the compiler gave no reason");
      continue;
    }
    auto image = image_for(input.compiled, identity_.arch);
    if (!image) {
      result.status = MeasureStatus::kCompileError;
      result.error = fmt::format("no CUBIN for {} and no PTX (built for: {})", identity_.arch,
                                 archs_of(input.compiled));
      continue;
    }
    if (input.instances.empty()) continue;
    if (std::string why = unlaunchable(input.kernel.plan, input.instances); !why.empty()) {
      result.status = MeasureStatus::kDeviceLimitsExceeded;
      result.error = why;
      continue;
    }
    Pending p{i, {}};
    p.candidate.kernel = {input.mk.key() + "|" + input.op->name, *image, input.kernel.plan};
    p.candidate.op = {input.op->name,     input.op->kind,        input.op->dtype,
                      input.op->epilogue, input.op->transpose_a, input.op->transpose_b,
                      input.op->weight_layout};
    for (const Instance& inst : input.instances) {
      p.candidate.shapes.push_back(inst.gemm);
      if (input.op->kind == OpKind::kConv2d)
        p.candidate.conv.push_back(conv2d_shape(*input.op, inst.values));
    }
    pending.push_back(std::move(p));
  }

  std::vector<Pending*> passed;
  for (Pending& p : pending) {
    if (options_.measure.check_results && !checked_.count(p.candidate.kernel.id)) {
      auto start = Clock::now();
      p.candidate.check_shapes = pick_check_shapes(p.candidate.shapes, p.candidate.kernel.plan);
      p.candidate.reference = reference_for(*inputs[p.input].op);
      check(p, results[p.input]);
      results[p.input].seconds += seconds_since(start);
      p.candidate.check_shapes.clear();  // the time request needs neither
      p.candidate.reference.reset();
      if (results[p.input].status != MeasureStatus::kOk) continue;
    }
    passed.push_back(&p);
  }
  time(passed, results);
  for (const MeasureResult& result : results) {
    health_.observe(result.status, result.error);
    if (std::string why = health_.broken(); !why.empty())
      throw EnvironmentError(fmt::format("{}; {}, NVRTC {}", why,
                                         driver_.empty() ? "NVIDIA driver of unknown version"
                                                         : driver_,
                                         nvrtc_version_text()));
  }
  return results;
}

}  // namespace dietcode
