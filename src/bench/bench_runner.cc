#include "bench/bench_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <memory>

#include "bench/baseline.h"
#include "bench/bench_kernels.h"
#include "bench/host_tensors.h"
#include "common/error.h"
#include "cuda/device_buffer.h"
#include "cuda/device_query.h"
#include "cuda/event.h"
#include "cuda/primary_context.h"
#include "cuda/stream.h"
#include "dietcode/pack_abi.h"
#include "nvrtc/nvrtc_compiler.h"

namespace dietcode {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + long(mid), values.end());
  if (values.size() % 2) return values[mid];
  const double upper = values[mid];
  const double lower = *std::max_element(values.begin(), values.begin() + long(mid));
  return (lower + upper) / 2;
}

namespace {

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm = {};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

double peak_tflops(const GpuSpec& gpu, DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return gpu.fp32_tflops;
    case DType::kFloat16:
      return gpu.fp16_tensor_tflops;
    case DType::kBFloat16:
      return gpu.bf16_tensor_tflops;
  }
  return 0;
}

std::string mib(double bytes) { return fmt::format("{:.0f} MiB", bytes / (1 << 20)); }

// Everything one op's instances share: operands sized for the largest instance.
struct OpOperands {
  std::vector<DeviceBuffer> args;  // in the pack's argument order; the last is its output
  DeviceBuffer baseline_out;
  std::vector<void*> pointers;  // args as dietcode_launch takes them
};

OpOperands allocate_operands(const BenchOp& op, const std::vector<BenchInstance>& instances,
                             uint64_t seed) {
  std::vector<int64_t> largest(op.args.size(), 0);
  for (const BenchInstance& inst : instances) {
    const std::vector<int64_t> n = argument_elements(op, inst.dims);
    for (size_t i = 0; i < n.size(); ++i) largest[i] = std::max(largest[i], n[i]);
  }
  const size_t bytes = size_t(dtype_bytes(op.spec.dtype));
  OpOperands out;
  for (size_t i = 0; i < largest.size(); ++i) {
    out.args.emplace_back(size_t(largest[i]) * bytes);
    if (i + 1 < largest.size())  // inputs get data; the output is filled before each check
      out.args.back().upload(random_tensor(op.spec.dtype, largest[i], seed * 1000003 + i));
    out.pointers.push_back(reinterpret_cast<void*>(out.args.back().ptr()));
  }
  out.baseline_out = DeviceBuffer(size_t(largest.back()) * bytes);
  return out;
}

// The baseline's view of the operands: the pack's first two arguments, the bias if any.
GemmOperands gemm_operands(const BenchOp& op, const OpOperands& operands) {
  GemmOperands g;
  g.a = operands.args[0].ptr();
  g.b = operands.args[1].ptr();
  for (size_t i = 0; i < op.args.size(); ++i)
    if (op.args[i] == "bias") g.bias = operands.args[i].ptr();
  g.y = operands.baseline_out.ptr();
  return g;
}

class InstanceBench {
 public:
  InstanceBench(const PackLibrary& library, const BenchOptions& options,
                const PrimaryContext& context, const Stream& stream, const BenchKernels& kernels,
                const DeviceBuffer& flush_buffer)
      : library_(library),
        options_(options),
        context_(context),
        stream_(stream),
        kernels_(kernels),
        flush_buffer_(flush_buffer) {
    for (int i = 0; i < 4 * options.repeats; ++i) events_.emplace_back();
  }

  // One row of the report; `baseline` (prepared for this instance) is null when none runs it.
  BenchRow run(const BenchOp& op, const BenchInstance& inst, OpOperands& operands,
               Baseline* baseline) {
    op_ = &op, inst_ = &inst, operands_ = &operands;
    BenchRow row;
    row.op = op.spec.name;
    row.shape = inst.shape;
    row.weight = inst.weight;
    row.flops = inst.gemm.flops();
    check(op, inst, operands, baseline, row);
    const auto warmup_start = std::chrono::steady_clock::now();
    for (int i = 0; i < options_.warmup; ++i) {
      launch_pack();
      if (baseline) baseline->run();
    }
    const double warmup_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - warmup_start)
            .count();
    // Hold the GPU while the timed launches are queued: they then run back to back, and each
    // event pair times the kernels rather than the host catching up. Twice the host time a
    // round took in the warm-up (plus the flush and events), capped at 100 ms.
    const double round_us = (options_.warmup > 0 ? warmup_us / options_.warmup : 20.0) + 10.0;
    kernels_.spin(stream_.get(), std::min(2 * round_us * options_.repeats, 1e5));
    for (int r = 0; r < options_.repeats; ++r) {
      const bool pack_first = r % 2 == 0;  // alternate, so neither always follows the other
      for (int slot = 0; slot < 2; ++slot) {
        const bool is_pack = (slot == 0) == pack_first;
        if (!is_pack && !baseline) continue;
        if (options_.flush_l2)
          kernels_.flush(stream_.get(), flush_buffer_.ptr(), int64_t(flush_buffer_.bytes()));
        const Event& start = events_[size_t(4 * r + (is_pack ? 0 : 2))];
        const Event& end = events_[size_t(4 * r + (is_pack ? 1 : 3))];
        start.record(stream_.get());
        if (is_pack)
          launch_pack();
        else
          baseline->run();
        end.record(stream_.get());
      }
    }
    stream_.synchronize();
    std::vector<double> pack_us, baseline_us;
    for (int r = 0; r < options_.repeats; ++r) {
      pack_us.push_back(1e3 *
                        Event::elapsed_ms(events_[size_t(4 * r)], events_[size_t(4 * r + 1)]));
      if (baseline)
        baseline_us.push_back(
            1e3 * Event::elapsed_ms(events_[size_t(4 * r + 2)], events_[size_t(4 * r + 3)]));
    }
    row.pack_us = median(pack_us);
    row.baseline_us = baseline ? median(baseline_us) : -1;
    row.pack_samples = std::move(pack_us);
    row.baseline_samples = std::move(baseline_us);
    return row;
  }

 private:
  void launch_pack() const {
    const int rc =
        library_.launch(op_->spec.name, operands_->pointers.data(), int(operands_->pointers.size()),
                        inst_->values.data(), int(inst_->values.size()), stream_.get());
    if (rc == DIETCODE_OK) return;
    const std::string message =
        fmt::format("{}: op {} at {}: dietcode_launch returned {}: {}", library_.path(),
                    op_->spec.name, inst_->shape, pack_status_name(rc), library_.last_error());
    if (rc == DIETCODE_ERR_INVALID_ARGUMENT || rc == DIETCODE_ERR_UNKNOWN_OP)
      throw UserError(message);
    throw EnvironmentError(message);
  }

  // Runs both once on NaN-filled outputs and compares; without a baseline, checks that the
  // pack wrote every output with a finite value.
  void check(const BenchOp& op, const BenchInstance& inst, OpOperands& operands, Baseline* baseline,
             BenchRow& row) {
    DeviceBuffer& pack_out = operands.args.back();
    pack_out.fill_bytes(0xff);  // NaN in fp32, fp16 and bf16
    operands.baseline_out.fill_bytes(0xff);
    context_.synchronize();  // the fills ran on the legacy stream
    launch_pack();
    if (baseline) baseline->run();
    stream_.synchronize();
    const int64_t n = argument_elements(op, inst.dims).back();
    const size_t bytes = size_t(n) * size_t(dtype_bytes(op.spec.dtype));
    std::vector<unsigned char> host(bytes);
    pack_out.download(host.data(), bytes);
    const std::vector<float> got = tensor_to_floats(op.spec.dtype, host.data(), n);
    if (!baseline) {
      const int64_t bad =
          std::count_if(got.begin(), got.end(), [](float v) { return !std::isfinite(v); });
      row.check =
          bad ? fmt::format("mismatch: the pack left {} of {} outputs unwritten or not finite", bad,
                            n)
              : "unchecked (no baseline; all outputs written)";
      row.failed = bad > 0;
      return;
    }
    operands.baseline_out.download(host.data(), bytes);
    const std::vector<float> want = tensor_to_floats(op.spec.dtype, host.data(), n);
    const Agreement agreement =
        compare_outputs(got, want, inst.gemm.K, agreement_rtol(op.spec.dtype, options_.tf32));
    row.failed = !agreement.ok();
    row.check = agreement.ok() ? "ok" : agreement.message(inst.gemm.N);
  }

  const PackLibrary& library_;
  const BenchOptions& options_;
  const PrimaryContext& context_;
  const Stream& stream_;
  const BenchKernels& kernels_;
  const DeviceBuffer& flush_buffer_;
  std::vector<Event> events_;
  const BenchOp* op_ = nullptr;
  const BenchInstance* inst_ = nullptr;
  OpOperands* operands_ = nullptr;
};

}  // namespace

BenchReport run_bench(const PackLibrary& library, const BenchPack& pack,
                      const BenchOptions& options) {
  const std::vector<const BenchOp*> ops = select_ops(pack, options.ops);
  PrimaryContext context(options.device);
  const GpuSpec gpu = query_device(options.device);
  Stream stream;
  NvrtcCompiler compiler;
  BenchKernels kernels(compiler, NvrtcCompiler::supported_archs(), gpu.cc_major, gpu.cc_minor);
  bool has_conv = false, has_gemm = false;
  for (const BenchOp* op : ops) (op->spec.kind == OpKind::kConv2d ? has_conv : has_gemm) = true;
  BaselineOptions baseline_options;
  baseline_options.tf32 = options.tf32;
  baseline_options.stream = stream.get();
  baseline_options.kernels = &kernels;
  BaselineSet baselines = make_baselines(options.baseline, has_gemm, has_conv, baseline_options);
  // Twice the L2: every line the timed kernel could find warm is evicted by the writes.
  const DeviceBuffer flush_buffer(options.flush_l2 ? 2 * size_t(gpu.l2_bytes) : 0);

  BenchReport report;
  report.pack = library.path();
  report.device = fmt::format("{} ({}, {} SMs)", gpu.name, gpu.arch(), gpu.sms);
  report.baseline = "none";  // the labels of the baselines that ran, set below
  report.l2 = options.flush_l2 ? "flush" : "warm";
  report.l2_detail =
      options.flush_l2
          ? fmt::format(
                "L2 flushed before every timed launch ({} written, twice "
                "the {} L2)",
                mib(double(flush_buffer.bytes())), mib(gpu.l2_bytes))
          : fmt::format("L2 warm: operands may stay in the {} L2 between runs", mib(gpu.l2_bytes));
  report.date = utc_now();
  report.repeats = options.repeats;
  report.warmup = options.warmup;
  if (pack.dims_from != "the pack's manifest")
    report.notes.push_back("shapes and dimensions from " + pack.dims_from);
  if (!baselines.note.empty()) report.notes.push_back(baselines.note);

  InstanceBench bench(library, options, context, stream, kernels, flush_buffer);
  std::vector<std::string> labels;  // of the baselines that ran, in op order
  int unavailable = 0;
  for (size_t o = 0; o < ops.size(); ++o) {
    const BenchOp& op = *ops[o];
    const bool is_conv = op.spec.kind == OpKind::kConv2d;
    Baseline* baseline = is_conv ? baselines.conv.get() : baselines.gemm.get();
    const std::vector<BenchInstance> instances = bench_instances(pack, op, options.shapes);
    std::string what = "none (--baseline none)";
    const bool op_has_baseline = baseline && baseline->supports(op.spec, &what);
    report.baseline_per_op.emplace_back(op.spec.name, what);
    if (op_has_baseline &&
        std::find(labels.begin(), labels.end(), baseline->label()) == labels.end())
      labels.push_back(baseline->label());
    if (options.progress)
      options.progress(fmt::format("{}: {} shape{}, {} {}", op.spec.name, instances.size(),
                                   instances.size() == 1 ? "" : "s", to_string(op.spec.kind),
                                   to_string(op.spec.dtype)));
    OpOperands operands = allocate_operands(op, instances, options.seed * 131 + o);
    for (const BenchInstance& inst : instances) {
      bool ready = op_has_baseline;
      if (ready) {
        try {
          if (is_conv)
            baseline->prepare_conv(op.spec, conv2d_shape(op.spec, inst.values),
                                   gemm_operands(op, operands));
          else
            baseline->prepare(op.spec, inst.gemm, gemm_operands(op, operands));
        } catch (const BaselineUnavailable& e) {
          ready = false;
          if (++unavailable <= 5)
            report.notes.push_back(op.spec.name + " " + inst.shape + ": " + e.what());
        }
      }
      BenchRow row = bench.run(op, inst, operands, ready ? baseline : nullptr);
      if (ready)
        row.baseline = baseline->label(), row.baseline_detail = baseline->instance_detail();
      row.peak_tflops = peak_tflops(gpu, op.spec.dtype);
      report.rows.push_back(std::move(row));
    }
  }
  if (!labels.empty()) {
    report.baseline.clear();
    for (const std::string& label : labels)
      report.baseline += (report.baseline.empty() ? "" : ", ") + label;
  }
  if (unavailable > 5)
    report.notes.push_back(
        fmt::format("... and {} more instances without a baseline", unavailable - 5));
  return report;
}

}  // namespace dietcode
