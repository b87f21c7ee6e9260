// The GPU side of measurement, run inside a worker process (worker_process.h): loads candidate
// CUBINs, checks them against the reference kernel and times them with CUDA events. Every
// request and reply is described in gpu_protocol.h.
//
// The CUDA context is created when the worker identifies its GPU (or, after a restart, when the
// tuner asks it to "prepare"), under that request's generous time limit, never inside the first
// candidate's: context creation can take seconds, and a candidate is allowed ten.
//
// Timed launches are queued behind a short spin kernel (queue_hold.h), so the events around
// them time the GPU's work rather than the host's launch latency. Checks launch into an output
// buffer with guard bands on both sides (gpu_operands.h: guard_violation), so a candidate that
// writes outside its output fails as a wrong result.
//
// Faults are sorted by whose they are: a CUDA error a candidate causes becomes its status
// (see classify), and one that poisons the context (an illegal address, a trap) also says
// "context_lost", so the tuner replaces this process; an error of the environment (no device,
// out of memory) propagates as EnvironmentError and stops the tuning run.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <optional>

#include "../templates/dietcode_args.h"  // the kernel ABI, shared with the templates
#include "cuda/device_buffer.h"
#include "cuda/device_query.h"
#include "cuda/driver.h"
#include "cuda/event.h"
#include "cuda/l2_flush.h"
#include "cuda/module.h"
#include "cuda/primary_context.h"
#include "measure/gpu_measurer.h"
#include "measure/gpu_operands.h"
#include "measure/gpu_protocol.h"
#include "measure/queue_hold.h"
#include "measure/timing_order.h"
#include "pack/runtime/pack_tensor_maps.h"  // the same maps a pack encodes

namespace dietcode {

namespace {

using nlohmann::json;

constexpr size_t kMaxLoadedModules = 256;     // a long run loads thousands; keep the recent
constexpr size_t kMaxCachedReferences = 64;   // reference outputs, host copies
constexpr int kSmemWithoutOptIn = 48 * 1024;  // above it a kernel must opt in

struct Fault {
  MeasureStatus status;
  std::string error;
  bool context_lost = false;
};

// A kernel's tensor maps could not be made for a shape (a layout the TMA cannot address, a
// driver without cuTensorMapEncodeTiled): the launch never happened, so the context is fine.
class TensorMapError : public CudaError {
 public:
  using CudaError::CudaError;
};

// The candidate's fault, or nullopt when the error is the environment's.
std::optional<Fault> classify(const CudaError& e) {
  if (dynamic_cast<const TensorMapError*>(&e)) return Fault{MeasureStatus::kLaunchError, e.what()};
  switch (e.code()) {
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_NOT_FOUND:  // the entry is not in the image
      return Fault{MeasureStatus::kCompileError, e.what()};
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:  // registers x threads
    case CUDA_ERROR_INVALID_VALUE:            // block size or shared memory beyond the limits
      return Fault{MeasureStatus::kDeviceLimitsExceeded, e.what()};
    case CUDA_ERROR_OUT_OF_MEMORY:
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_SYSTEM_NOT_READY:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
      return std::nullopt;
    default:  // illegal address, launch failure, trap, misaligned access ...: sticky
      return Fault{MeasureStatus::kLaunchError, e.what(), true};
  }
}

void* device_pointer(const DeviceBuffer& buffer) {
  return buffer.bytes() ? reinterpret_cast<void*>(uintptr_t(buffer.ptr())) : nullptr;
}

// Where the output starts inside its guarded buffer (gpu_operands.h: kOutputGuardBytes).
void* output_pointer(const DeviceBuffer& guarded) {
  return guarded.bytes() ? reinterpret_cast<void*>(uintptr_t(guarded.ptr() + kOutputGuardBytes))
                         : nullptr;
}

constexpr unsigned char kOutputFill = 0xFF;  // NaN in every float type, and the canary

// The NVIDIA kernel module's version ("580.65.06"), for messages about the environment; empty
// where /proc does not say.
std::string kernel_driver_release() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  std::getline(in, line);
  const std::string marker = "Kernel Module";
  size_t at = line.find(marker);
  if (at == std::string::npos) return "";
  size_t begin = line.find_first_not_of(" \t", at + marker.size());
  if (begin == std::string::npos) return "";
  return line.substr(begin, line.find_first_of(" \t", begin) - begin);
}

bool has_bias(Epilogue e) {
  return e == Epilogue::kBias || e == Epilogue::kBiasRelu || e == Epilogue::kBiasGelu;
}

struct LoadedKernel {
  Module module;
  CUfunction main = nullptr;
  CUfunction reduce = nullptr;
};

// One op's operands on the device, sized for the largest shape seen so far.
struct Operands {
  DType dtype = DType::kFloat32;
  uint64_t seed = 0;
  OperandSizes sizes;
  DeviceBuffer a, b, bias;
  DeviceBuffer c;  // the output with a guard band of kOutputGuardBytes on each side
};

double median(std::vector<double> samples) {
  if (samples.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(samples.begin(), samples.end());
  size_t mid = samples.size() / 2;
  return samples.size() % 2 ? samples[mid] : (samples[mid - 1] + samples[mid]) / 2;
}

class GpuWorker {
 public:
  json handle(const json& request) {
    std::string action = request.at("action").get<std::string>();
    int device = request.at("device").get<int>();
    if (action == "identify") return identify(device);
    if (action == "count") return count_devices();
    open_context(device);  // normally done by identify or prepare already
    if (action == "prepare") return json::object();
    uint64_t seed = request.at("seed").get<uint64_t>();
    if (action == "check")
      return check_candidate(candidate_from_json(request.at("candidate")), seed);
    if (action == "time") return time_candidates(request, seed);
    throw std::invalid_argument("unknown request \"" + action + "\"");
  }

 private:
  json count_devices() {
    int count = 0;
    check(driver().cuDeviceGetCount(&count), "cuDeviceGetCount");
    return {{"count", count}};
  }

  json identify(int device) {
    GpuSpec spec = query_device(device);
    open_context(device);
    int cuda_version = 0;
    check(driver().cuDriverGetVersion(&cuda_version), "cuDriverGetVersion");
    return {{"name", spec.name},
            {"arch", spec.arch()},
            {"spec", gpu_spec_to_json(spec)},
            {"driver", {{"cuda_version", cuda_version}, {"release", kernel_driver_release()}}}};
  }

  // The context, the L2 size, the queue-hold and L2-flush kernels: everything a check or a timing
  // needs before its clock starts.
  void open_context(int device) {
    if (!context_) {
      context_.emplace(device);
      check(driver().cuDeviceGetAttribute(&l2_bytes_, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
                                          context_->device()),
            "cuDeviceGetAttribute(L2_CACHE_SIZE)");
    }
    context_->make_current();
    if (!hold_module_) {
      hold_module_.emplace(std::string(queue_hold_ptx()), "queue_hold");
      hold_ = hold_module_->function(kQueueHoldEntry);
    }
    if (!flush_module_) {
      flush_module_.emplace(std::string(l2_flush_ptx()), "L2 flush");
      flush_kernel_ = flush_module_->function(kL2FlushEntry);
    }
  }

  // Holds the GPU for `microseconds` so that what is enqueued next runs back to back.
  void hold_queue(double microseconds) const {
    unsigned long long nanoseconds = static_cast<unsigned long long>(microseconds * 1e3);
    void* params[] = {&nanoseconds};
    check(driver().cuLaunchKernel(hold_, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr),
          "cuLaunchKernel(queue hold)");
  }

  LoadedKernel& load(const WorkerKernel& kernel) {
    auto it = kernels_.find(kernel.id);
    if (it != kernels_.end()) return it->second;
    if (kernels_.size() >= kMaxLoadedModules) kernels_.clear();
    LoadedKernel loaded{Module(kernel.image, kernel.id)};
    loaded.main = loaded.module.function(kernel.plan.entry);
    if (kernel.plan.dynamic_smem_bytes > kSmemWithoutOptIn)
      set_max_dynamic_smem(loaded.main, kernel.plan.dynamic_smem_bytes);
    if (!kernel.plan.reduce_entry.empty())
      loaded.reduce = loaded.module.function(kernel.plan.reduce_entry);
    return kernels_.emplace(kernel.id, std::move(loaded)).first->second;
  }

  // Grows the op's operands (and the shared split-K workspace) to fit every shape. Contents
  // depend on (seed, element index) only, so growing keeps what earlier shapes saw.
  Operands& prepare(const WorkerCandidate& c, uint64_t seed) {
    Operands& o = operands_[c.op.name];
    if (o.seed != seed || o.dtype != c.op.dtype) {
      o = Operands();
      o.dtype = c.op.dtype;
      o.seed = seed;
    }
    OperandSizes need;
    for (size_t i = 0; i < c.shapes.size(); ++i) {
      const GemmShape& s = c.shapes[i];
      OperandSizes z = operand_sizes(c.op.kind, s, conv_of(c, i));
      need = {std::max(need.a, z.a), std::max(need.b, z.b), std::max(need.bias, z.bias),
              std::max(need.c, z.c)};
      workspace_bytes_ = std::max(workspace_bytes_, c.kernel.plan.workspace_bytes(s));
    }
    auto grow = [&](DeviceBuffer& buffer, int64_t& have, int64_t want, int tag) {
      if (want <= have) return;
      buffer = DeviceBuffer(size_t(want) * dtype_bytes(o.dtype));
      if (tag >= 0) {
        std::string bytes = operand_bytes(seed, tag, want, o.dtype);
        buffer.upload(bytes.data(), bytes.size());
      }
      have = want;
    };
    grow(o.a, o.sizes.a, need.a, 0);
    grow(o.b, o.sizes.b, need.b, 1);
    grow(o.bias, o.sizes.bias, need.bias, 2);
    if (need.c > o.sizes.c) {
      o.c = DeviceBuffer(size_t(need.c) * dtype_bytes(o.dtype) + 2 * kOutputGuardBytes);
      o.sizes.c = need.c;
    }
    if (int64_t(workspace_.bytes()) < workspace_bytes_) workspace_ = DeviceBuffer(workspace_bytes_);
    return o;
  }

  // Shape i of a candidate: its GEMM and, for conv2d, its geometry.
  static const Conv2dShape* conv_of(const WorkerCandidate& c, size_t i) {
    return i < c.conv.size() ? &c.conv[i] : nullptr;
  }

  DietcodeArgs args(const Operands& o, const WorkerCandidate& c, size_t shape) const {
    DietcodeArgs a{};
    a.a = device_pointer(o.a);
    a.b = device_pointer(o.b);
    a.bias = has_bias(c.op.epilogue) ? device_pointer(o.bias) : nullptr;
    a.c = output_pointer(o.c);
    a.workspace = device_pointer(workspace_);
    set_shape_args(c.op.kind, c.shapes[shape], conv_of(c, shape), &a);
    return a;
  }

  // The tensor maps of a kernel with a TMA producer, as a pack encodes them for the same call
  // (none for other kernels). A layout the TMA cannot address, or a driver without the entry,
  // fails the candidate as a launch with invalid arguments would: recorded, not fatal.
  struct TensorMaps {
    CUtensorMap map[dietcode_pack::kTensorMaps];
  };
  static TensorMaps tensor_maps(const LaunchPlan& plan, const DietcodeArgs& a, int elem_bytes) {
    TensorMaps maps;
    if (plan.tma_box_k <= 0) return maps;
    const Driver& d = driver();
    if (!d.cuTensorMapEncodeTiled)
      throw TensorMapError(CUDA_ERROR_NOT_SUPPORTED,
                           "the kernel copies with the TMA, but the NVIDIA driver has no "
                           "cuTensorMapEncodeTiled (a driver for CUDA 12.0 or newer is needed)");
    dietcode_pack::TensorMapLayout layouts[dietcode_pack::kTensorMaps];
    int refused = 0;
    if (const char* why = dietcode_pack::gemm_tensor_map_layouts(
            a, plan.tile_m, plan.tile_n, plan.tma_box_k, elem_bytes, layouts, &refused))
      throw TensorMapError(CUDA_ERROR_INVALID_VALUE,
                           fmt::format("the TMA cannot read operand {} (M={}, N={}, K={}, "
                                       "batch={}): {}",
                                       refused == dietcode_pack::kTensorMapA ? "A" : "B", a.m, a.n,
                                       a.k, a.batch, why));
    for (int which = 0; which < dietcode_pack::kTensorMaps; ++which) {
      CUresult r = dietcode_pack::encode_tensor_map(d.cuTensorMapEncodeTiled, layouts[which],
                                                    &maps.map[which]);
      if (r != CUDA_SUCCESS)
        throw TensorMapError(
            r, fmt::format("cuTensorMapEncodeTiled({}): {}",
                           which == dietcode_pack::kTensorMapA ? "A" : "B", cuda_error_name(r)));
    }
    return maps;
  }

  // Launches with maps made beforehand, so a timed launch does not include encoding them.
  void launch(const LoadedKernel& k, const LaunchPlan& plan, const GemmShape& s, DietcodeArgs a,
              const TensorMaps& maps) const {
    const Driver& d = driver();
    TensorMaps copy = maps;                             // kernelParams are non-const
    void* params[] = {&a, &copy.map[0], &copy.map[1]};  // the reduction reads only the first
    unsigned g[3];
    plan.grid(s, g);
    check(d.cuLaunchKernel(k.main, g[0], g[1], g[2], plan.threads, 1, 1, plan.dynamic_smem_bytes,
                           nullptr, params, nullptr),
          "cuLaunchKernel");
    if (!k.reduce) return;
    plan.reduce_grid(s, g);
    check(d.cuLaunchKernel(k.reduce, g[0], g[1], g[2], plan.reduce_threads, 1, 1, 0, nullptr,
                           params, nullptr),
          "cuLaunchKernel(reduce)");
  }

  static size_t output_bytes(const WorkerOp& op, const GemmShape& s) {
    return size_t(s.batch * s.M * s.N) * dtype_bytes(op.dtype);
  }

  std::vector<float> download_c(const Operands& o, const WorkerOp& op, const GemmShape& s) {
    std::string bytes(output_bytes(op, s), '\0');
    o.c.download(bytes.data(), bytes.size(), kOutputGuardBytes);
    return output_floats(bytes, op.dtype);
  }

  // The reference kernel's output for a shape, computed once per (op, dtype, seed, shape).
  std::vector<float> reference_output(const WorkerCandidate& c, size_t shape, Operands& o) {
    const GemmShape& s = c.shapes[shape];
    std::string key = fmt::format("{}|{}|{}|{},{},{},{}", c.op.name, int(c.op.dtype), o.seed,
                                  s.batch, s.M, s.N, s.K);
    if (const Conv2dShape* g = conv_of(c, shape))  // two geometries can share a GEMM shape
      key += fmt::format("|{},{},{},{},{},{}", g->n, g->h, g->w, g->c, g->r, g->s);
    auto it = references_.find(key);
    if (it != references_.end()) return it->second;
    if (references_.size() >= kMaxCachedReferences) references_.clear();
    try {
      o.c.fill_bytes(kOutputFill);
      DietcodeArgs a = args(o, c, shape);
      launch(load(*c.reference), c.reference->plan, s, a,
             tensor_maps(c.reference->plan, a, dtype_bytes(c.op.dtype)));
      context_->synchronize();
      return references_[key] = download_c(o, c.op, s);
    } catch (const CudaError& e) {  // our kernel, not the candidate: a bug to report as such
      throw std::logic_error(std::string("the reference kernel failed: ") + e.what());
    }
  }

  static json fault_reply(const Fault& f) {
    WorkerResult r;
    r.status = f.status;
    r.error = f.error;
    json j = to_json(r);
    j["context_lost"] = f.context_lost;
    return j;
  }

  json check_candidate(const WorkerCandidate& c, uint64_t seed) {
    try {
      Operands& o = prepare(c, seed);
      std::vector<std::vector<float>> wants;  // first: loading the reference may evict modules
      for (int index : c.check_shapes)
        if (c.reference) wants.push_back(reference_output(c, size_t(index), o));
      LoadedKernel& k = load(c.kernel);
      for (size_t i = 0; i < c.check_shapes.size(); ++i) {
        const GemmShape& s = c.shapes[size_t(c.check_shapes[i])];
        o.c.fill_bytes(kOutputFill);  // NaN: an element the kernel never writes cannot pass
        DietcodeArgs a = args(o, c, size_t(c.check_shapes[i]));
        launch(k, c.kernel.plan, s, a, tensor_maps(c.kernel.plan, a, dtype_bytes(c.op.dtype)));
        context_->synchronize();
        std::string guarded(o.c.bytes(), '\0');
        o.c.download(guarded.data(), guarded.size());
        std::string stray =
            guard_violation(guarded, kOutputGuardBytes, output_bytes(c.op, s), kOutputFill);
        if (!stray.empty())
          return fault_reply({MeasureStatus::kWrongResult,
                              fmt::format("{} (M={}, N={}, K={}, batch={})", stray, s.M, s.N, s.K,
                                          s.batch)});
        if (wants.empty()) continue;
        OutputComparison cmp = compare_outputs(download_c(o, c.op, s), wants[i], s, c.op.dtype);
        if (!cmp.ok)
          return fault_reply(
              {MeasureStatus::kWrongResult, fmt::format("{} (M={}, N={}, K={}, batch={})",
                                                        cmp.message, s.M, s.N, s.K, s.batch)});
      }
      return fault_reply({MeasureStatus::kOk, ""});
    } catch (const CudaError& e) {
      std::optional<Fault> fault = classify(e);
      if (!fault) throw;
      return fault_reply(*fault);
    }
  }

  json time_candidates(const json& request, uint64_t seed) {
    std::vector<WorkerCandidate> cands;
    for (const json& c : request.at("candidates")) cands.push_back(candidate_from_json(c));
    int warmup = request.at("warmup").get<int>(), repeats = request.at("repeats").get<int>();
    bool flush = request.at("flush_l2").get<bool>();
    size_t n = cands.size();
    std::vector<WorkerResult> results(n);
    std::vector<bool> active(n, true);
    bool context_lost = false;
    auto fail = [&](size_t i, const CudaError& e) {
      std::optional<Fault> fault = classify(e);
      if (!fault) throw e;
      results[i].status = fault->status;
      results[i].error = fault->error;
      active[i] = false;
      if (!fault->context_lost) return;
      context_lost = true;  // nothing more can run here: the others go to a fresh worker
      for (size_t j = 0; j < n; ++j)
        if (active[j]) results[j].run = active[j] = false;
    };

    for (size_t i = 0; i < n && !context_lost; ++i) {
      try {
        load(cands[i].kernel);
        prepare(cands[i], seed);
      } catch (const CudaError& e) {
        fail(i, e);
      }
    }
    if (flush && !context_lost && flush_.bytes() == 0)
      flush_ = DeviceBuffer(size_t(std::max(l2_bytes_, 1 << 20)) * 2);

    std::vector<std::vector<std::vector<double>>> samples(n);
    std::vector<std::vector<std::pair<Event, Event>>> events(n);
    for (size_t i = 0; i < n; ++i) {
      samples[i].resize(cands[i].shapes.size());
      if (active[i])
        for (size_t s = 0; s < cands[i].shapes.size(); ++s) events[i].emplace_back();
    }
    // Round-robin: every candidate and shape once per round, so drift spreads evenly, and the
    // candidates in turn, so none runs with its code still cached from its own last launch
    // (timing_order.h). A round is enqueued in batches, each behind a queue hold
    // (queue_hold.h), and read back after.
    std::vector<size_t> shape_counts;
    for (const WorkerCandidate& c : cands) shape_counts.push_back(c.shapes.size());
    const std::vector<std::pair<size_t, size_t>> order = interleaved_timing_order(shape_counts);
    for (int round = 0; round < warmup + repeats && !context_lost; ++round) {
      for (size_t first = 0; first < order.size() && !context_lost;
           first += QueueHoldPacer::kMaxLaunchesPerHold) {
        const size_t last =
            std::min(order.size(), first + size_t(QueueHoldPacer::kMaxLaunchesPerHold));
        try {
          hold_queue(pacer_.next_hold_us());
        } catch (const CudaError& e) {  // our own kernel: the environment's fault
          throw std::logic_error(std::string("the queue-hold kernel failed: ") + e.what());
        }
        const auto enqueue_start = std::chrono::steady_clock::now();
        for (size_t at = first; at < last && !context_lost; ++at) {
          const auto [i, s] = order[at];
          if (!active[i]) continue;
          const WorkerCandidate& c = cands[i];
          try {
            LoadedKernel& k = load(c.kernel);
            const Operands& o = operands_.at(c.op.name);
            DietcodeArgs a = args(o, c, s);
            TensorMaps maps = tensor_maps(c.kernel.plan, a, dtype_bytes(c.op.dtype));
            // bench's flush (cuda/l2_flush.h), a new value every time.
            if (flush)
              launch_l2_flush(flush_kernel_, nullptr, flush_.ptr(), flush_.bytes(), ++flush_value_);
            events[i][s].first.record(nullptr);
            launch(k, c.kernel.plan, c.shapes[s], a, maps);
            events[i][s].second.record(nullptr);
          } catch (const CudaError& e) {
            fail(i, e);
          }
        }
        pacer_.enqueued(std::chrono::duration<double, std::micro>(
                            std::chrono::steady_clock::now() - enqueue_start)
                            .count());
        for (size_t at = first; at < last && !context_lost; ++at) {
          const auto [i, s] = order[at];
          if (!active[i]) continue;
          try {
            double us = 1000.0 * Event::elapsed_ms(events[i][s].first, events[i][s].second);
            if (round >= warmup) samples[i][s].push_back(us);
          } catch (const CudaError& e) {
            fail(i, e);
          }
        }
      }
    }

    json replies = json::array();
    for (size_t i = 0; i < n; ++i) {
      if (active[i])
        for (const auto& shape_samples : samples[i])
          results[i].latency_us.push_back(median(shape_samples));
      replies.push_back(to_json(results[i]));
    }
    return {{"results", replies}, {"context_lost", context_lost}};
  }

  std::optional<PrimaryContext> context_;
  int l2_bytes_ = 0;
  std::optional<Module> hold_module_, flush_module_;
  CUfunction hold_ = nullptr, flush_kernel_ = nullptr;
  uint32_t flush_value_ = 0;
  QueueHoldPacer pacer_;
  std::map<std::string, LoadedKernel> kernels_;
  std::map<std::string, Operands> operands_;
  std::map<std::string, std::vector<float>> references_;
  int64_t workspace_bytes_ = 0;
  DeviceBuffer workspace_;
  DeviceBuffer flush_;
};

}  // namespace

WorkerHandler gpu_worker_handler() {
  // Built in the tuner's process, run in the worker's: the GpuWorker touches CUDA only on its
  // first request, which happens in the worker.
  auto worker = std::make_shared<GpuWorker>();
  return [worker](const json& request) { return worker->handle(request); };
}

}  // namespace dietcode
