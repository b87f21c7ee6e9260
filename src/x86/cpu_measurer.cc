// The tuner's side of CPU measurement: turns MeasureInputs into worker requests, and worker
// outcomes into statuses. The CPU side is cpu_worker.cc.
#include "x86/cpu_measurer.h"

#include <cpuid.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <stdexcept>

#include "common/error.h"
#include "measure/measure_common.h"

namespace dietcode {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

const ArchBinary* binary_for(const CompileResult& compiled, const std::string& arch) {
  for (const ArchBinary& binary : compiled.binaries)
    if (binary.arch == arch && !binary.cubin.empty()) return &binary;
  return nullptr;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A worker's failure as a candidate's result.
void fail_from_reply(const WorkerReply& reply, double timeout_seconds, MeasureResult& out) {
  switch (reply.outcome) {
    case WorkerOutcome::kTimeout:
      out.status = MeasureStatus::kTimeout;
      out.error =
          fmt::format("did not finish within {:g} s; the worker was killed", timeout_seconds);
      return;
    case WorkerOutcome::kCrashed:
      out.status = MeasureStatus::kLaunchError;
      out.error = reply.signal ? crash_description(reply.signal)
                  : reply.exit_status >= 0
                      ? fmt::format("the worker exited with status {}", reply.exit_status)
                      : reply.error;
      return;
    default:  // the handler failed on this candidate
      out.status = MeasureStatus::kLaunchError;
      out.error = reply.error;
      return;
  }
}

}  // namespace

std::string crash_description(int signal) {
  const char* what = nullptr;
  switch (signal) {
    case SIGSEGV:
      what = "segmentation fault";
      break;
    case SIGILL:
      what = "illegal instruction";
      break;
    case SIGBUS:
      what = "bus error";
      break;
    case SIGFPE:
      what = "arithmetic exception";
      break;
    case SIGABRT:
      what = "aborted";
      break;
    case SIGKILL:
      what = "killed";
      break;
    default:
      break;
  }
  std::string name = "signal " + std::to_string(signal);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  if (const char* abbrev = sigabbrev_np(signal)) name = std::string("SIG") + abbrev;
#endif
  std::string description = what ? what : strsignal(signal);
  if (!what && !description.empty()) description[0] = char(std::tolower(description[0]));
  return fmt::format("crashed with {} ({})", name, description);
}

std::string cpu_brand_string() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0)
      if (size_t colon = line.find(':'); colon != std::string::npos)
        if (std::string name = trim(line.substr(colon + 1)); !name.empty()) return name;
  unsigned regs[12] = {};
  if (__get_cpuid_max(0x80000000u, nullptr) >= 0x80000004u) {
    for (unsigned i = 0; i < 3; ++i)
      __get_cpuid(0x80000002u + i, &regs[4 * i], &regs[4 * i + 1], &regs[4 * i + 2],
                  &regs[4 * i + 3]);
    char text[49] = {};
    std::memcpy(text, regs, 48);
    if (std::string name = trim(text); !name.empty()) return name;
  }
  return "unknown x86-64 CPU";
}

int64_t last_level_cache_bytes() {
  int best_level = 0;
  int64_t best = 0;
  for (int index = 0; index < 16; ++index) {
    std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", index);
    std::ifstream level_in(dir + "level"), size_in(dir + "size"), type_in(dir + "type");
    int level = 0;
    std::string size, type;
    if (!(level_in >> level) || !(size_in >> size)) break;
    type_in >> type;
    if (type == "Instruction" || size.empty()) continue;
    int64_t bytes = std::strtoll(size.c_str(), nullptr, 10);
    char unit = size.back();
    if (unit == 'K') bytes <<= 10;
    if (unit == 'M') bytes <<= 20;
    if (level >= best_level && bytes > 0) best_level = level, best = bytes;
  }
  if (best > 0) return best;
  for (int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE})
    if (long bytes = ::sysconf(name); bytes > 0) return bytes;
  return int64_t(32) << 20;
}

std::vector<std::string> cpu_worker_command() {
  return {"/proc/self/exe", kCpuMeasureWorkerSubcommand};
}

CpuMeasurer::CpuMeasurer(std::unique_ptr<WorkerProcess> worker, CpuMeasurerOptions options)
    : worker_(std::move(worker)), options_(std::move(options)) {
  identity_.name = cpu_brand_string();
  identity_.arch = options_.arch;
  identity_.simulated = false;
  identity_.l2 = options_.measure.flush_l2 ? "flush" : "warm";
  identity_.constant_weights = options_.constant_weights;
  prepare_worker();
}

json CpuMeasurer::request(const char* action) const {
  return {{"action", action}, {"seed", options_.measure.seed}};
}

void CpuMeasurer::prepare_worker() {
  json req = request("prepare");
  req["threads"] = options_.threads;
  req["pin"] = options_.pin;
  req["evict"] = options_.measure.flush_l2;
  req["max_evict_bytes"] = options_.max_evict_bytes;
  WorkerReply reply = worker_->call(req, options_.start_timeout_seconds);
  if (reply.outcome != WorkerOutcome::kOk)
    throw EnvironmentError("the CPU measurement worker failed to start: " + reply.error);
  threads_ = reply.value.at("threads").get<int>();
  llc_bytes_ = reply.value.at("llc_bytes").get<int64_t>();
  evict_bytes_ = reply.value.at("evict_bytes").get<int64_t>();
  evict_us_ = reply.value.at("evict_us").get<double>();
}

WorkerReply CpuMeasurer::call(const json& request, double timeout_seconds) {
  // A worker started anew (after a crash) makes its pool and eviction buffer under the
  // first-contact limit, not under the limit of the candidate that happens to come next.
  if (worker_->pid() == 0) prepare_worker();
  WorkerReply reply = worker_->call(request, timeout_seconds);
  if (reply.outcome == WorkerOutcome::kHandlerError && reply.environment_error)
    throw EnvironmentError(reply.error);
  return reply;
}

void CpuMeasurer::check(Pending& pending, MeasureResult& result) {
  json req = request("reference");  // ours, not the candidate's: under the generous limit
  req["candidate"] = to_json(pending.candidate);
  WorkerReply ref = call(req, options_.start_timeout_seconds);
  if (ref.outcome != WorkerOutcome::kOk)
    throw std::logic_error("the CPU worker failed computing the reference: " + ref.error);

  req["action"] = "check";
  WorkerReply reply = call(req, options_.measure.timeout_seconds);
  if (reply.outcome != WorkerOutcome::kOk) {
    fail_from_reply(reply, options_.measure.timeout_seconds, result);
    return;
  }
  WorkerResult checked = result_from_json(reply.value);
  result.status = checked.status;
  result.error = checked.error;
  if (checked.status == MeasureStatus::kOk) checked_.insert(pending.candidate.kernel.id);
}

// How long a time request for `group` may take before the worker counts as hung: the per-
// candidate limit, plus its runs at a rate no compiled candidate falls below (a scalar loop on
// one core does more), plus the evictions. A CPU kernel's own run time is milliseconds on
// BERT's larger shapes, so a flat limit would kill healthy candidates.
double CpuMeasurer::time_limit_seconds(const std::vector<Pending*>& group) const {
  constexpr double kSlowestFlopsPerSecond = 1e9;
  const int runs = options_.measure.warmup + options_.measure.repeats;
  double seconds = 0;
  for (const Pending* p : group) {
    double flops = 0;
    for (const GemmShape& s : p->candidate.shapes) flops += s.flops();
    seconds += options_.measure.timeout_seconds + runs * flops / kSlowestFlopsPerSecond +
               double(options_.measure.repeats) * double(p->candidate.shapes.size()) * evict_us_ *
                   1e-6;
  }
  return seconds;
}

// Times a group in one request; if the worker dies or hangs on a group of several, times each
// alone so that only the culprit is marked.
void CpuMeasurer::time(const std::vector<Pending*>& group, std::vector<MeasureResult>& results) {
  if (group.empty()) return;
  auto start = Clock::now();
  json req = request("time");
  req["warmup"] = options_.measure.warmup;
  req["repeats"] = options_.measure.repeats;
  req["evict"] = options_.measure.flush_l2;
  req["candidates"] = json::array();
  for (const Pending* p : group) req["candidates"].push_back(to_json(p->candidate));
  const double timeout = time_limit_seconds(group);
  WorkerReply reply = call(req, timeout);

  if (reply.outcome == WorkerOutcome::kOk) {
    const json& replies = reply.value.at("results");
    if (replies.size() != group.size())
      throw std::logic_error("the CPU worker answered for a different number of candidates");
    const double share = seconds_since(start) / double(group.size());
    for (size_t i = 0; i < group.size(); ++i) {
      WorkerResult r = result_from_json(replies[i]);
      MeasureResult& out = results[group[i]->input];
      out.status = r.status;
      out.error = r.error;
      if (r.status == MeasureStatus::kOk && r.latency_us.size() == out.latency_us.size())
        out.latency_us = r.latency_us;
      out.seconds += share;
    }
    return;
  }
  if (group.size() > 1) {
    for (Pending* p : group) time({p}, results);
    return;
  }
  MeasureResult& out = results[group[0]->input];
  fail_from_reply(reply, timeout, out);
  out.seconds += seconds_since(start);
}

std::vector<MeasureResult> CpuMeasurer::measure(const std::vector<MeasureInput>& inputs) {
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
    // The kernel's own ISA level (an AVX2 kernel on a x86-64-v4 host is x86-64-v3's).
    const std::string built_for = compile_arch(input.kernel, options_.arch);
    const ArchBinary* binary = binary_for(input.compiled, built_for);
    if (!binary) {
      result.status = MeasureStatus::kCompileError;
      result.error = fmt::format("no shared object for {} (built for: {})", built_for,
                                 archs_of(input.compiled));
      continue;
    }
    if (input.op->dtype != DType::kFloat32) {
      result.status = MeasureStatus::kDeviceLimitsExceeded;
      result.error = fmt::format("the CPU measurer times float32 ops only, not {}",
                                 to_string(input.op->dtype));
      continue;
    }
    if (input.instances.empty()) continue;
    Pending p{i, {}};
    // The bytes' hash in the id: a rebuilt candidate of the same micro-kernel is another one.
    p.candidate.kernel = {fmt::format("{}|{}|{:016x}", input.mk.key(), input.op->name,
                                      std::hash<std::string>{}(binary->cubin)),
                          binary->cubin, input.kernel.plan};
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
      check(p, results[p.input]);
      results[p.input].seconds += seconds_since(start);
      p.candidate.check_shapes.clear();  // the time request needs none
      if (results[p.input].status != MeasureStatus::kOk) continue;
    }
    passed.push_back(&p);
  }
  time(passed, results);
  for (const MeasureResult& result : results) {
    health_.observe(result.status, result.error);
    if (std::string why = health_.broken(); !why.empty())
      throw EnvironmentError(fmt::format("{}; CPU {}", why, identity_.name));
  }
  return results;
}

}  // namespace dietcode
