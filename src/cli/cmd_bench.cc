// dietcode bench libNAME.so: time every op of a kernel pack at every shape instance against
// the vendor libraries in the same process, check that the results agree, and print the table
// with the weighted geometric-mean speedup (SPEC §2). CSV, JSON and an SVG plot on request.
//   a CUDA pack: cuBLAS or cuBLASLt (dense, batch_matmul) and cuDNN (conv2d; cuBLAS on an
//                explicit im2col when cuDNN is missing) on the local GPU, in one stream;
//   a CPU pack (manifest "target": "cpu"): oneDNN and OpenBLAS on the host's cores, each on
//                the pack's thread count (--threads), caches evicted between runs.
//
// The inputs are checked before the GPU is touched, so a wrong path or option is exit 1 on any
// machine; then, for a CUDA pack without a GPU: exit 2 and "dietcode bench: no CUDA GPU: ...".
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "bench/baseline.h"
#include "bench/bench_pack.h"
#include "bench/bench_runner.h"
#include "bench/cpu_bench_runner.h"
#include "bench/cpu_cache_evictor.h"
#include "bench/cpu_isa_cap.h"
#include "bench/pack_library.h"
#include "bench/report.h"
#include "bench/svg_plot.h"
#include "cli/app.h"
#include "common/error.h"
#include "cuda/device_query.h"
#include "cuda/driver.h"
#include "workload/workload.h"
#include "x86/host_cpu.h"

namespace dietcode::cli {

namespace {

struct BenchCommandOptions {
  std::string pack;
  std::string workload;
  std::string baseline = "auto";
  std::vector<std::string> ops;
  std::vector<std::string> shapes;
  std::string l2 = "flush";
  int repeats = 30;
  int warmup = 3;
  bool tf32 = false;
  bool constant_weights = false;
  std::string csv, json, plot;
  int device = 0;
  int threads = 0;  // CPU packs; 0: every logical CPU
  std::string arch;  // CPU packs: every contender capped at this x86-64 level
  uint64_t seed = 1;
};

// Every --baseline value: the GPU's and the CPU's (which apply depends on the pack).
std::vector<std::string> all_baseline_options() {
  std::vector<std::string> options = baseline_options();
  options.insert(options.end(), {"onednn", "openblas"});
  return options;
}

// A CPU pack's benchmark options, from the command line and this host.
CpuBenchOptions cpu_options(const BenchCommandOptions& opt, const BenchPack& pack,
                            const std::vector<ShapeOverride>& shapes) {
  if (opt.tf32) throw UserError("--tf32: the pack runs on the CPU, which has no TF32");
  CpuBenchOptions options;
  options.baselines = cpu_baselines_for_option(opt.baseline);
  options.ops = opt.ops;
  options.shapes = shapes;
  options.evict_caches = opt.l2 == "flush";
  options.constant_weights = opt.constant_weights;
  options.repeats = opt.repeats;
  options.warmup = opt.warmup;
  options.seed = opt.seed;
  const HostCpu cpu = detect_host_cpu();
  if (!opt.arch.empty()) options.isa_cap = cpu_template_level(opt.arch, cpu, "--arch");
  const int pack_level = pack_run_level(pack.archs, cpu.isa_level_number, options.isa_cap);
  if (pack_level == 0 && options.isa_cap)
    throw EnvironmentError(fmt::format(
        "--arch {}: {} has kernels for {} only (build it with --arch {} to add them)", opt.arch,
        pack.file, fmt::join(pack.archs, ", "), opt.arch));
  if (pack_level > 0) options.pack_level = isa_level_name(pack_level);
  options.threads = opt.threads > 0 ? opt.threads : cpu.logical_cores;
  options.cpu = fmt::format("{} ({})", cpu.model_name, cpu.isa_level);
  if (options.isa_cap) options.cpu += ", every contender capped at " + opt.arch;
  const int64_t last_level = cpu.caches.l3 > 0 ? cpu.caches.l3 : cpu.caches.l2;
  options.evict_bytes = eviction_bytes(last_level, int64_t(64) << 20);
  // ~80 ms on the same threads, before the first timing and after the last. Under a cap, the
  // peak of the vectors the capped code has: x86-64-v3 has 256-bit ones.
  const int threads = options.threads, vector_bits = options.isa_cap == 3 ? 256 : 0;
  options.probe_peak_gflops = [cpu, threads, vector_bits] {
    return cpu.fp32_peak_gflops(threads, vector_bits);
  };
  return options;
}

// Writes `text` to `path`, or to stdout for "-".
void write_output(const std::string& path, const std::string& text) {
  if (path == "-") {
    fmt::print("{}", text);
    return;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out << text;
  if (!out || !out.flush()) throw UserError(path + ": cannot write: " + std::strerror(errno));
}

std::optional<BenchReport> run_gpu(const BenchCommandOptions& opt, const PackLibrary& library,
                                   const BenchPack& pack, const std::vector<ShapeOverride>& shapes,
                                   const std::function<void(const std::string&)>& progress);

int run_bench_command(const BenchCommandOptions& opt, const GlobalOptions& global) {
  // Everything the user gave is checked first: these are exit 1 on any machine.
  PackLibrary library(opt.pack);
  std::optional<Workload> workload;
  if (!opt.workload.empty()) workload = load_workload(opt.workload);
  const BenchPack pack =
      parse_bench_pack(library.manifest(), opt.pack, workload ? &*workload : nullptr);
  std::vector<ShapeOverride> shapes;
  for (const std::string& text : opt.shapes) shapes.push_back(parse_shape_override(text));
  for (const BenchOp* op : select_ops(pack, opt.ops)) bench_instances(pack, *op, shapes);

  // With a report going to stdout ("-"), the table and progress go to stderr.
  const bool stdout_taken = opt.csv == "-" || opt.json == "-" || opt.plot == "-";
  std::FILE* text_out = stdout_taken ? stderr : stdout;
  std::function<void(const std::string&)> progress;
  if (!global.quiet)
    progress = [](const std::string& line) { fmt::print(stderr, "bench: {}\n", line); };

  BenchReport report;
  if (pack.target == "cpu") {
    CpuBenchOptions options = cpu_options(opt, pack, shapes);
    // Before the pack's first launch and before the baselines load: each reads its cap once.
    if (options.isa_cap) apply_cpu_isa_cap(options.isa_cap);
    options.progress = progress;
    report = run_cpu_bench(library, pack, options);
  } else {
    const std::optional<BenchReport> gpu = run_gpu(opt, library, pack, shapes, progress);
    if (!gpu) return 2;
    report = *gpu;
  }
  if (!global.quiet || failed_rows(report.rows)) fmt::print(text_out, "{}", format_report(report));
  if (!opt.csv.empty()) write_output(opt.csv, format_csv(report));
  if (!opt.json.empty()) write_output(opt.json, report_json(report).dump(2) + "\n");
  if (!opt.plot.empty()) write_output(opt.plot, render_svg(report));
  return failed_rows(report.rows) ? 1 : 0;
}

// A CUDA pack on the local GPU; nothing (after the message) without one.
std::optional<BenchReport> run_gpu(const BenchCommandOptions& opt, const PackLibrary& library,
                                   const BenchPack& pack, const std::vector<ShapeOverride>& shapes,
                                   const std::function<void(const std::string&)>& progress) {
  if (opt.baseline == "onednn" || opt.baseline == "openblas")
    throw UserError("--baseline " + opt.baseline +
                    ": a CPU baseline, and this pack is for CUDA GPUs (expected auto, cublas, "
                    "cublaslt, cudnn or none)");
  if (opt.threads > 0) throw UserError("--threads: only for a CPU pack; this one is for CUDA GPUs");
  if (!opt.arch.empty()) throw UserError("--arch: only for a CPU pack; this one is for CUDA GPUs");
  if (opt.constant_weights)
    throw UserError("--constant-weights: only for a CPU pack; this one is for CUDA GPUs");
  BenchOptions options;
  options.baseline = opt.baseline;
  options.ops = opt.ops;
  options.shapes = shapes;
  options.progress = progress;
  options.flush_l2 = opt.l2 == "flush";
  options.repeats = opt.repeats;
  options.warmup = opt.warmup;
  options.tf32 = opt.tf32;
  options.device = opt.device;
  options.seed = opt.seed;

  std::string why;
  if (!driver_or_null(&why)) {
    fmt::print(stderr, "dietcode bench: no CUDA GPU: {}\n", why);
    return std::nullopt;
  }
  try {
    query_device(opt.device);
  } catch (const EnvironmentError& e) {
    fmt::print(stderr, "dietcode bench: no CUDA GPU: {}\n", e.what());
    return std::nullopt;
  }
  return run_bench(library, pack, options);
}

}  // namespace

void register_bench(CLI::App& app, GlobalOptions& global, Action& action) {
  auto opt = std::make_shared<BenchCommandOptions>();
  auto* cmd = app.add_subcommand(
      "bench",
      "Time a kernel pack at every shape against cuBLAS/cuBLASLt/cuDNN on the local GPU, or a CPU "
      "pack against oneDNN and OpenBLAS on this machine's cores");
  cmd->add_option("PACK", opt->pack, "The kernel pack (libNAME.so)")->required();
  cmd->add_option("--workload", opt->workload,
                  "The workload the pack was built from; needed when its manifest has no dims");
  cmd->add_option("--baseline", opt->baseline,
                  "auto (default: cuBLAS for dense/batch_matmul, cuDNN for conv2d, or cuBLAS on "
                  "an im2col without cuDNN), cublas (conv2d on im2col too), cublaslt (fused "
                  "epilogues), cudnn (conv2d must run on cuDNN) or none; for a CPU pack: auto "
                  "(oneDNN with fused epilogues and OpenBLAS with a separate epilogue pass), "
                  "onednn, openblas or none")
      ->check(CLI::IsMember(all_baseline_options()));
  cmd->add_option("--ops", opt->ops, "Only these ops (comma-separated)")->delimiter(',');
  cmd->add_option("--shapes", opt->shapes,
                  "Shape values instead of the tuned range: T=1:128, T=1:128:8 or T=1,2,4 "
                  "(repeat for several variables; values of one variable add up)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--l2", opt->l2,
                  "flush (default): L2 flushed before every timed launch (a CPU pack: every cache "
                  "level evicted before every timed run); warm: not flushed")
      ->check(CLI::IsMember({"flush", "warm"}));
  cmd->add_option("--repeats", opt->repeats, "Timed runs of each per shape (median reported)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--warmup", opt->warmup, "Untimed runs of each per shape first")
      ->check(CLI::Range(0, 100000));
  cmd->add_flag("--tf32", opt->tf32,
                "Let the baseline run fp32 GEMMs and convolutions on TF32 tensor cores");
  cmd->add_option("--csv", opt->csv, "Write the rows as CSV to this file (- for stdout)");
  cmd->add_option("--json", opt->json, "Write the report as JSON to this file (- for stdout)");
  cmd->add_option("--plot", opt->plot, "Write an SVG plot to this file (- for stdout)");
  cmd->add_option("--device", opt->device, "GPU ordinal")->check(CLI::NonNegativeNumber);
  cmd->add_option("--threads", opt->threads,
                  "A CPU pack: threads for the pack and each baseline alike (default: every "
                  "logical CPU this process may use)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--arch", opt->arch,
                  "A CPU pack: hold the pack and both baselines to one x86-64 level, e.g. "
                  "x86-64-v3 (AVX2) on an AVX-512 host to measure what an AVX2 server would run "
                  "(the pack through DIETCODE_CPU_LEVEL, oneDNN through ONEDNN_MAX_CPU_ISA, "
                  "OpenBLAS through OPENBLAS_CORETYPE)");
  cmd->add_flag("--constant-weights", opt->constant_weights,
                "A CPU pack: weights as inference holds them, declared constant to the pack "
                "(packed once) and in oneDNN's chosen layout (reordered once), both outside the "
                "timing; OpenBLAS packs in every call either way");
  cmd->add_option("--seed", opt->seed, "Seed of the random inputs");
  add_global_flags(*cmd, global);
  cmd->footer(
      "Examples:\n"
      "  dietcode bench libbert_dense.so --baseline cublaslt --plot bert.svg\n"
      "  dietcode bench libbert_dense.so --shapes T=1,16,37,128 --l2 warm --json -\n"
      "  DIETCODE_CUDNN_LIBRARY=/opt/cudnn/lib/libcudnn.so.9 dietcode bench libresnet.so\n"
      "  dietcode bench libbert_dense_cpu.so --threads 8 --csv cpu.csv   # a CPU pack\n"
      "  dietcode bench libbert_dense_cpu.so --arch x86-64-v3   # everything on AVX2 alone\n"
      "  dietcode bench libresnet50_cpu.so --constant-weights   # weights packed ahead\n"
      "Exit 0 when every instance agrees with the baseline, 1 when one does not (or on bad\n"
      "input), 2 without a GPU or cuBLAS (or without cuDNN under --baseline cudnn). On a CPU\n"
      "pack a missing oneDNN or OpenBLAS is a note, and the other baseline still runs.");
  cmd->callback([opt, &global, &action] {
    action = [opt, &global] { return run_bench_command(*opt, global); };
  });
}

}  // namespace dietcode::cli
