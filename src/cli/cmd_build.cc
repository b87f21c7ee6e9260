// dietcode build WORKLOAD.json [--log LOG.jsonl] [-o libNAME.so] [--target cuda|cpu]
//                              [--arch sm_80,sm_90 | x86-64-v3,x86-64-v4]
//                              [--max-kernels N] [--max-depth N] [--allow-simulated] [--jobs N]
//
// Writes the kernel pack (libNAME.so + NAME.h). Needs no GPU: GPU kernels are compiled by
// NVRTC, CPU kernels by the system C++ compiler. With --log the kernels and the dispatcher come
// from the measurements; without it every op gets its template's default micro-kernel, an
// untuned pack that says so. The target is the log's (its records' templates), else cuda.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/app.h"
#include "common/error.h"
#include "common/paths.h"
#include "cuda/device_query.h"
#include "nvrtc/kernel_cache.h"
#include "nvrtc/nvrtc_compiler.h"
#include "pack/choices.h"
#include "pack/manifest.h"
#include "pack/pack_build.h"
#include "pack/pack_object_compiler.h"
#include "pack/pack_target.h"
#include "x86/cxx_compiler.h"

namespace dietcode::cli {
namespace {

struct BuildOptions {
  std::string workload;
  std::string log;
  std::string output;
  std::string target;  // empty: the log's, else cuda
  std::string archs;   // empty: GPU, the local GPU's arch, else sm_90; CPU, the kernels' levels
  // 16: on the H200's BERT log (run 3) the cap of 8 lost 1.1-2.4% per op against the best
  // measured kernel of each instance and 16 lost 0.3-0.5%, for a pack of 8.5 MB instead of
  // 4.4 MB. CPU packs seldom reach either cap.
  int max_kernels = 16;
  int max_depth = 10;
  double tie_within_pct = 1.0;
  std::optional<double> timing_noise_pct;  // none: as the log's runoff measured it
  std::optional<double> portable_margin_pct;  // none: the target's (PackTarget)
  bool allow_simulated = false;
  int jobs = 0;
  bool json = false;
  bool keep_build_dir = false;
};

std::vector<std::string> parse_archs(const std::string& text, Target target) {
  const char* example = target == Target::kCpu ? "x86-64-v3" : "sm_90";
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string arch = text.substr(start, end - start);
    start = end + 1;
    if (arch.empty()) continue;
    try {
      pack_target(target).arch_number(arch);
      if (target == Target::kCuda && arch.rfind("sm_", 0) != 0) throw UserError("");
    } catch (const UserError&) {
      throw UserError("--arch: '" + arch + "' is not " +
                      (target == Target::kCpu
                           ? "an x86-64 level of a CPU pack (expected x86-64-v3, x86-64-v4)"
                           : "a GPU arch (expected sm_80, sm_90, sm_90a, ...)"));
    }
    if (std::find(out.begin(), out.end(), arch) == out.end()) out.push_back(arch);
  }
  if (out.empty()) throw UserError(std::string("--arch: expected at least one arch, e.g. ") + example);
  return out;
}

std::optional<Target> parse_target_option(const std::string& text) {
  if (text.empty()) return std::nullopt;
  std::optional<Target> t = parse_target(text);
  if (!t) throw UserError("--target: expected cuda or cpu, got '" + text + "'");
  return t;
}

std::string join(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

nlohmann::json report_json(const PackBuildReport& r) {
  nlohmann::json ops = nlohmann::json::array();
  for (const OpBuildReport& op : r.ops) {
    // The first dispatcher's figures at the top level (it serves the newest arch); every
    // dispatcher, that one included, under "dispatchers".
    const DispatcherReport& first = op.dispatchers.at(0);
    nlohmann::json dispatchers = nlohmann::json::array();
    for (const DispatcherReport& d : op.dispatchers)
      dispatchers.push_back({{"archs", d.archs},
                             {"kernels", d.kernels},
                             {"leaves", d.leaves},
                             {"depth", d.depth},
                             {"mean_regret_us", d.quality.mean_regret_us},
                             {"max_regret_us", d.quality.max_regret_us},
                             {"mean_regret_pct", d.quality.mean_regret_pct}});
    ops.push_back({{"op", op.op},
                   {"tuned", op.tuned},
                   {"candidates", op.candidates},
                   {"instances", op.instances},
                   {"kernels", op.kernels},
                   {"leaves", first.leaves},
                   {"depth", first.depth},
                   {"mean_regret_us", first.quality.mean_regret_us},
                   {"max_regret_us", first.quality.max_regret_us},
                   {"mean_regret_pct", first.quality.mean_regret_pct},
                   {"dispatchers", dispatchers},
                   {"dropped", op.dropped}});
  }
  return {{"library", r.files.library.string()},
          {"header", r.files.header.string()},
          {"library_bytes", r.files.library_bytes},
          {"choices", r.choices},
          {"kernels_compiled", r.kernels_compiled},
          {"kernels_cached", r.kernels_cached},
          {"compile_seconds", r.compile_seconds},
          {"pack_compile_seconds", r.files.compile_seconds},
          {"kernel_objects", r.files.kernel_objects},
          {"kernel_objects_cached", r.files.kernel_objects_cached},
          {"kernel_objects_reused", r.files.kernel_objects_reused},
          {"runtime_object_cached", r.files.runtime_object_cached},
          {"total_seconds", r.total_seconds},
          {"timing_noise", r.timing_noise},
          {"timing_noise_from", r.timing_noise_from},
          {"portable_margin", r.portable_margin},
          {"ops", ops}};
}

void print_report(const PackBuildReport& r, const std::vector<std::string>& archs) {
  // The op column is as wide as the longest name (imported models name ops after their nodes).
  int w = 16;
  for (const OpBuildReport& op : r.ops) w = std::max(w, int(op.op.size()));
  std::printf("%-*s %10s %9s %7s %6s %5s  %s\n", w, "op", "candidates", "instances", "kernels",
              "leaves", "depth", "time lost (weighted mean, max)");
  if (r.timing_noise > 0)
    std::printf("timing noise %.1f%% of a time (%s): a kernel or a split is kept only for a gain "
                "beyond twice its noise\n",
                100 * r.timing_noise, r.timing_noise_from.c_str());
  else if (!r.timing_noise_from.empty())
    std::printf("timing noise: %s\n", r.timing_noise_from.c_str());
  if (r.portable_margin_applied)
    std::printf("a kernel every arch runs (AVX2 on a CPU) is served on an arch with kernels of "
                "its own (x86-64-v4) only where it was measured more than %.0f%% faster than "
                "those (--portable-margin)\n",
                100 * r.portable_margin);
  bool untuned = false;
  auto lost = [](const OpBuildReport& op, const DispatcherReport& d) {
    return op.tuned ? fmt::format("{:.3f} us ({:.2f}%), max {:.3f} us", d.quality.mean_regret_us,
                                  d.quality.mean_regret_pct, d.quality.max_regret_us)
                    : "untuned";
  };
  for (const OpBuildReport& op : r.ops) {
    untuned = untuned || !op.tuned;
    const DispatcherReport& first = op.dispatchers.at(0);
    std::printf("%-*s %10d %9d %7d %6d %5d  %s\n", w, op.op.c_str(), op.candidates, op.instances,
                op.kernels, first.leaves, first.depth, lost(op, first).c_str());
    // Several dispatchers: one row each, so the arch that cannot run some kernels shows
    // what that costs it.
    for (size_t i = 0; op.dispatchers.size() > 1 && i < op.dispatchers.size(); ++i) {
      const DispatcherReport& d = op.dispatchers[i];
      std::printf("  on %-*s %10s %9s %7d %6d %5d  %s\n", w - 5, join(d.archs).c_str(), "", "", d.kernels,
                  d.leaves, d.depth, lost(op, d).c_str());
    }
    for (const std::string& why : op.dropped)
      std::printf("  dropped (does not compile): %s\n", why.c_str());
  }
  std::printf("compiled %d kernel(s) for %s in %.2f s", r.kernels_compiled, join(archs).c_str(),
              r.compile_seconds);
  if (r.kernels_cached > 0) std::printf(" (%d from the cache)", r.kernels_cached);
  std::printf("; pack compiled in %.2f s", r.files.compile_seconds);
  const char* runtime_cached =
      r.files.runtime_object_cached ? ", the runtime's from the cache" : "";
  if (r.files.kernel_objects > 0 && r.files.kernel_objects_reused == r.files.kernel_objects)
    std::printf(" (its %d kernel objects from that compile%s)", r.files.kernel_objects,
                runtime_cached);
  else if (r.files.kernel_objects > 0)
    std::printf(" (%d of its %d kernel objects from the cache%s)", r.files.kernel_objects_cached,
                r.files.kernel_objects, r.files.runtime_object_cached ? ", the runtime's too" : "");
  else if (r.files.runtime_object_cached)
    std::printf(" (its runtime's object from the cache)");
  std::printf("\n");
  std::printf("wrote %s (%.1f KB) and %s in %.2f s (%s)\n", r.files.library.string().c_str(),
              double(r.files.library_bytes) / 1024.0, r.files.header.string().c_str(),
              r.total_seconds, r.choices.c_str());
  if (untuned)
    std::printf(
        "NOTE: this pack is UNTUNED for the ops marked so: they use their template's default "
        "micro-kernel, which computes every shape correctly but not fast. Run 'dietcode tune' "
        "and build with --log.\n");
}

// The local GPU's arch when there is one (the usual case: build where you tuned), else sm_90.
std::string default_arch() {
  try {
    return query_device(0).arch();
  } catch (const EnvironmentError&) {
    return "sm_90";
  }
}

// The compiler of the target's kernels: for a GPU, NVRTC with the kernel cache in front; for a
// CPU, the objects the pack links, compiled once by the program that compiles the pack
// (pack_object_compiler.h), through the pack's object cache.
struct KernelCompiler {
  std::unique_ptr<Compiler> inner;
  std::unique_ptr<CachingCompiler> cached;
  Compiler* kernels = nullptr;  // what build_pack compiles with
  std::string cxx;              // CPU: the program, for the pack's own compile too
};

KernelCompiler kernel_compiler(Target target, const std::filesystem::path& object_cache_dir) {
  KernelCompiler out;
  if (target == Target::kCpu) {
    const CxxCompiler found;  // $CXX, g++ or clang++, or an EnvironmentError saying none is there
    // The writer runs one program; a $CXX of several words ("ccache g++") leaves it the default.
    out.cxx = found.argv().size() == 1 ? found.argv()[0] : PackWriteOptions().cxx;
    out.inner = std::make_unique<PackObjectCompiler>(out.cxx, object_cache_dir);
    out.kernels = out.inner.get();
  } else {
    auto nvrtc = std::make_unique<NvrtcCompiler>();
    std::string fingerprint = nvrtc->fingerprint();
    out.inner = std::move(nvrtc);
    out.cached = std::make_unique<CachingCompiler>(*out.inner, fingerprint,
                                                   default_kernel_cache_dir());
    out.kernels = out.cached.get();
  }
  return out;
}

int run_build(const BuildOptions& o, const GlobalOptions& global) {
  Workload workload = load_workload(o.workload);
  std::optional<Target> asked = parse_target_option(o.target);
  PackBuildOptions options;
  if (o.max_kernels < 0) throw UserError("--max-kernels: expected 0 (no limit) or more");
  if (o.max_depth < 0) throw UserError("--max-depth: expected 0 or more");
  options.tree.max_kernels = o.max_kernels;
  options.tree.max_depth = o.max_depth;
  if (!(o.tie_within_pct >= 0 && o.tie_within_pct < 100))
    throw UserError("--tie-within: expected a percentage in [0, 100), got " +
                    fmt::format("{}", o.tie_within_pct));
  options.tree.tie_fraction = o.tie_within_pct / 100.0;
  if (o.timing_noise_pct && !(*o.timing_noise_pct >= 0 && *o.timing_noise_pct < 100))
    throw UserError("--timing-noise: expected a percentage in [0, 100), got " +
                    fmt::format("{}", *o.timing_noise_pct));
  if (o.portable_margin_pct) {
    if (!(*o.portable_margin_pct >= 0 && *o.portable_margin_pct < 100))
      throw UserError("--portable-margin: expected a percentage in [0, 100), got " +
                      fmt::format("{}", *o.portable_margin_pct));
    options.portable_margin = *o.portable_margin_pct / 100.0;
  }
  options.jobs = o.jobs;
  options.write.keep_build_dir = o.keep_build_dir;
  bool chatty = !global.quiet && !o.json;
  if (chatty)
    options.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };

  std::vector<std::string> warnings;
  std::unique_ptr<ChoicesProvider> from_log =
      o.log.empty() ? nullptr
                    : make_log_choices(workload, o.log, o.allow_simulated, warnings, asked);
  // The target: asked for, else the log's (the templates it measured), else a GPU pack.
  options.target = asked                           ? *asked
                   : from_log && from_log->target() ? *from_log->target()
                                                    : Target::kCuda;
  std::unique_ptr<ChoicesProvider> fallback = make_default_choices(options.target);
  // The timing noise the trees allow for: asked for, else what the log's runoffs measured,
  // else none (a log without runoffs, or an untuned pack).
  std::optional<TimingNoise> measured = from_log ? from_log->timing_noise() : std::nullopt;
  std::string noise_from =
      from_log ? "none measured (the log has no runoff), times taken as exact" : "";
  if (o.timing_noise_pct) {
    options.tree.timing_noise = *o.timing_noise_pct / 100.0;
    noise_from = options.tree.timing_noise > 0 ? "--timing-noise"
                                               : "--timing-noise 0, times taken as exact";
  } else if (measured) {
    options.tree.timing_noise = measured->sd;
    noise_from = fmt::format("measured on {} runoff re-timings in the log", measured->pairs);
  }
  ChoicesProvider& choices = from_log ? *from_log : *fallback;
  if (!o.archs.empty()) {
    options.archs = parse_archs(o.archs, options.target);
  } else {
    // GPU: the local GPU's arch, with sm_90a beside sm_90 when tuned wgmma kernels need it;
    // CPU: the levels the kernels need.
    options.archs.clear();
    if (options.target == Target::kCuda) options.home_arch = default_arch();
  }
  if (o.log.empty() && !global.quiet)
    std::fprintf(stderr,
                 "no --log given: building an UNTUNED pack from each op's template defaults\n");

  std::string output = o.output.empty() ? "lib" + workload.name + ".so" : o.output;
  std::filesystem::path folder = std::filesystem::absolute(output).parent_path();
  if (!std::filesystem::is_directory(folder))
    throw UserError(output + ": no such folder " + folder.string());

  options.write.object_cache_dir = cache_dir() / "pack-objects";
  KernelCompiler compiler = kernel_compiler(options.target, options.write.object_cache_dir);
  if (!compiler.cxx.empty()) options.write.cxx = compiler.cxx;
  PackBuildReport report =
      build_pack(workload, choices, *fallback, *compiler.kernels, output, options);
  report.timing_noise = options.tree.timing_noise;
  report.timing_noise_from = noise_from;
  warnings.insert(warnings.end(), report.warnings.begin(), report.warnings.end());
  if (!global.quiet)
    for (const std::string& w : warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  if (o.json) {
    std::printf("%s\n", report_json(report).dump(2).c_str());
  } else if (!global.quiet) {
    print_report(report, report.archs);
  }
  if (o.keep_build_dir && !global.quiet)
    std::fprintf(stderr, "pack sources kept in %s\n", report.files.build_dir.string().c_str());
  return 0;
}

}  // namespace

void register_build(CLI::App& app, GlobalOptions& global, Action& action) {
  auto opts = std::make_shared<BuildOptions>();
  auto* cmd =
      app.add_subcommand("build", "Write the kernel pack libNAME.so and NAME.h (no GPU needed)");
  cmd->add_option("workload", opts->workload, "The workload file (JSON)")->required();
  cmd->add_option("--log", opts->log,
                  "Tuning log (JSON Lines) to take kernels and timings from; without it the "
                  "pack is untuned (template defaults)");
  cmd->add_option("-o,--output", opts->output,
                  "The library to write (default: lib<name>.so here); NAME.h goes beside it");
  cmd->add_option("--target", opts->target,
                  "cuda (GPU kernels) or cpu (x86-64 kernels run on the host's thread pool)")
      ->default_str("the log's templates', else cuda");
  cmd->add_option("--arch", opts->archs,
                  "GPU archs to embed CUBINs for, comma-separated (PTX for newer GPUs is added); "
                  "for a CPU pack, x86-64 levels (x86-64-v3, x86-64-v4)")
      ->default_str(
          "the local GPU's, else sm_90, and sm_90a beside sm_90 when tuned wgmma kernels need "
          "it; CPU: the levels of the kernels chosen");
  cmd->add_option("--max-kernels", opts->max_kernels,
                  "At most this many kernels per op (0: no limit): pack size vs time lost")
      ->default_str("16");
  cmd->add_option("--max-depth", opts->max_depth, "Depth limit of each dispatcher tree")
      ->default_str("10");
  cmd->add_option("--tie-within", opts->tie_within_pct,
                  "Kernels within this percentage of an instance's best measured time count as "
                  "tied with it: no kernel is kept, and no split made, for a smaller gain, which "
                  "timing noise could have decided (0: keep every gain)")
      ->default_str("1");
  cmd->add_option("--timing-noise", opts->timing_noise_pct,
                  "The relative standard deviation of one timing in the log, in percent: a "
                  "kernel is kept, and a split made, only for a gain beyond twice the noise of "
                  "that gain (0: take the times as exact)")
      ->default_str("as the log's runoffs measured it");
  cmd->add_option("--portable-margin", opts->portable_margin_pct,
                  "A kernel every arch of the pack runs (an AVX2 kernel in a CPU pack) is served "
                  "on an arch that has kernels of its own (x86-64-v4) only where it was measured "
                  "more than this percentage faster than those (0: the times decide alone)")
      ->default_str("10 for a CPU pack, 0 for a GPU pack");
  cmd->add_flag("--allow-simulated", opts->allow_simulated,
                "Accept a log from a simulated device (a test double: its numbers are not "
                "GPU measurements)");
  cmd->add_option("-j,--jobs", opts->jobs, "Parallel NVRTC compiles (default: one per core)");
  cmd->add_flag("--json", opts->json, "Print the build report as JSON");
  cmd->add_flag("--keep-build-dir", opts->keep_build_dir,
                "Keep the generated pack sources (for debugging the generator)");
  add_global_flags(*cmd, global);
  cmd->footer(
      "Examples:\n"
      "  dietcode build configs/workloads/bert_base_dense.json --log bert.jsonl\n"
      "  dietcode build w.json --log w.jsonl -o out/libw.so --arch sm_80,sm_90 --max-kernels 4\n"
      "  dietcode build w.json --log cpu.jsonl --arch x86-64-v3,x86-64-v4");
  cmd->callback(
      [opts, &global, &action] { action = [opts, &global] { return run_build(*opts, global); }; });
}

}  // namespace dietcode::cli
