// The joint search tests' fixture and test doubles: a stand-in compiler (no NVRTC), a counting
// simulated device (a test double) and a small dense space, shared by joint_search_test.cc and
// joint_search_runoff_test.cc.
#pragma once

#include "search/joint_search.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "codegen/generated_kernel.h"
#include "common/error.h"
#include "measure/measure_pool.h"
#include "measure/simulated_device.h"
#include "search/budget.h"
#include "pack/choices.h"
#include "search/log_resume.h"
#include "space/template_space.h"
#include "space/templates.h"

namespace dietcode {
namespace {


namespace fs = std::filesystem;

GpuSpec h100() {
  GpuSpec gpu;
  gpu.id = "h100";
  gpu.name = "NVIDIA H100 80GB HBM3";
  return gpu;
}

// A compiler that never runs NVRTC: every kernel "compiles" to a binary named by its options,
// with the register count the template's own estimate gives.
class FakeCompiler : public Compiler {
 public:
  CompileResult compile(const CompileRequest& request) override {
    ++calls;
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    MicroKernel mk{"dense_f32", {}};
    std::string options;
    for (const std::string& o : request.options) {
      options += o + " ";
      const size_t eq = o.find('=');
      if (o.rfind("-D", 0) == 0 && eq != std::string::npos &&
          dense_f32_space().find(o.substr(2, eq - 2)))
        mk.params[o.substr(2, eq - 2)] = std::stoi(o.substr(eq + 1));
    }
    CompileResult result;
    result.ok = true;
    ArchBinary binary;
    binary.arch = request.archs.at(0);
    binary.cubin = "cubin " + options;
    KernelResources resources;
    resources.entry = "dietcode_dense_f32";
    resources.registers = std::min(DenseF32Geometry::of(mk).register_estimate, 255);
    binary.resources.push_back(resources);
    result.binaries.push_back(binary);
    return result;
  }
  std::atomic<int> calls{0};
  std::chrono::milliseconds delay{0};  // what a compile takes
};

// The simulated device, counting what it is asked to time, and failing the kernels a test
// names: launch errors (a crash) or timeouts (a hang).
class CountingDevice : public Measurer {
 public:
  explicit CountingDevice(GpuSpec gpu) : device_(std::move(gpu)) {}
  DeviceIdentity device() const override { return device_.device(); }
  std::vector<MeasureResult> measure(const std::vector<MeasureInput>& inputs) override {
    std::vector<MeasureResult> results = device_.measure(inputs);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (per_input.count() > 0 && loaded.insert(inputs[i].mk.key()).second)
        std::this_thread::sleep_for(per_input);
      if (per_instance.count() > 0) std::this_thread::sleep_for(per_instance * inputs[i].instances.size());
      if (wall_per_latency > 0 && results[i].status == MeasureStatus::kOk) {
        double latency_us = 0;
        for (double l : results[i].latency_us) latency_us += l;
        std::this_thread::sleep_for(
            std::chrono::microseconds(int64_t(wall_per_latency * latency_us)));
      }
      const std::string key = inputs[i].mk.key();
      kernels.insert(key);
      ++inputs_measured;
      for (const Instance& inst : inputs[i].instances) ++pairs[{key, inst.values}];
      std::optional<MeasureStatus> fail = fault ? fault(inputs[i].mk) : std::nullopt;
      if (fail) {
        results[i].status = *fail;
        results[i].error = *fail == MeasureStatus::kTimeout
                               ? "the kernel did not finish within 10 s"
                               : "worker killed by SIGSEGV (Segmentation fault)";
        results[i].latency_us.assign(inputs[i].instances.size(), NAN);
      }
    }
    return results;
  }
  std::set<std::string> kernels;
  int inputs_measured = 0;
  std::map<std::pair<std::string, std::vector<int64_t>>, int> pairs;
  std::function<std::optional<MeasureStatus>(const MicroKernel&)> fault;
  std::chrono::microseconds per_instance{0};  // what timing one (kernel, instance) takes
  std::chrono::microseconds per_input{0};     // and loading and checking a kernel, once
  // Timing a kernel costs this many times its simulated latencies, as on a CPU, where each
  // pair runs a few times and a slow kernel takes long to time.
  double wall_per_latency = 0;
  std::set<std::string> loaded;

 private:
  SimulatedDevice device_;
};

constexpr const char* kWorkload = R"({
  "name": "unit",
  "shape_vars": { "T": { "min": 1, "max": 32 } },
  "ops": [ { "name": "dense", "op": "dense", "dtype": "float32", "M": "16*T", "N": 768,
             "K": 768 } ]
})";

// dense_f32 with short value lists: a few hundred valid micro-kernels, few enough to measure
// every one of them for the exhaustive optimum. Tunables not listed keep their default only.
TemplateSpace small_space() {
  TemplateSpace s = dense_f32_space();
  const std::map<std::string, std::vector<int>> lists = {
      {"WARPS_M", {1, 2, 4}}, {"WARPS_N", {1, 2, 4}}, {"THREADS_M", {4, 8}}, {"THREADS_N", {4, 8}},
      {"TM", {2, 4, 8}},      {"TN", {4, 8}},         {"BK", {8, 16}},       {"VEC", {4}},
      {"STAGES", {2}},        {"SPLITK", {1, 2, 4}}};
  for (Tunable& t : s.tunables) {
    auto it = lists.find(t.name);
    t.values = it != lists.end() ? it->second : std::vector<int>{t.default_value};
    t.default_value = t.values.front();
  }
  return s;
}

class JointSearchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    workload_ = parse_workload(kWorkload, "unit.json");
    space_ = small_space();
    dir_ = fs::temp_directory_path() /
           ("dietcode_joint_search_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  SearchEnvironment environment(Measurer& measurer, TuningLogWriter* log,
                                MeasurePool* pool = nullptr) {
    SearchEnvironment env;
    env.compiler = &compiler_;
    env.measurer = &measurer;
    env.pool = pool;
    env.log = log;
    env.gpu = h100();
    env.device = measurer.device();
    env.workload = workload_.name;
    return env;
  }

  // Every op of the workload in one joint search, without a log.
  JointSearchResult run_every_op(Measurer& measurer, const JointSearchOptions& options) {
    std::vector<const OpSpec*> ops;
    for (const OpSpec& op : workload_.ops) ops.push_back(&op);
    JointSearch search(workload_, ops, environment(measurer, nullptr), options,
                       [this](const OpSpec&) { return std::vector<const TemplateSpace*>{&space_}; });
    return search.run();
  }

  JointSearchResult run(Measurer& measurer, const JointSearchOptions& options,
                        const std::string& log_path = "", MeasurePool* pool = nullptr) {
    std::unique_ptr<TuningLogWriter> writer;
    if (!log_path.empty()) writer = std::make_unique<TuningLogWriter>(log_path);
    JointSearch search(
        workload_, {&workload_.ops[0]}, environment(measurer, writer.get(), pool), options,
        [this](const OpSpec&) { return std::vector<const TemplateSpace*>{&space_}; });
    if (!log_path.empty()) {
      ResumeState state = read_log_for_resume(log_path, workload_.name, measurer.device());
      std::vector<const TuningRecord*> records;
      for (const TuningRecord& r : state.records) records.push_back(&r);
      search.resume_from(records);
      return search.run();
    }
    return search.run();
  }

  // Every valid candidate timed on every instance: per instance, the fastest.
  struct Exhaustive {
    size_t candidates = 0;
    double weighted_mean_us = 0;
    std::set<std::string> winners;
  };
  Exhaustive exhaustive() {
    const OpSpec& op = workload_.ops[0];
    InstanceTable table(workload_, op);
    GpuSpec gpu = h100();
    SpaceContext context{gpu, op, table.shapes().back()};
    SearchSpace space(space_, context);
    Enumeration all = space.enumerate();
    SimulatedDevice device(gpu);
    FakeCompiler compiler;
    std::vector<double> best(table.size(), INFINITY);
    std::vector<std::string> winner(table.size());
    for (const MicroKernel& mk : all.candidates) {
      MeasureInput input;
      input.op = &op;
      input.mk = mk;
      input.kernel = generate_kernel(op, mk);
      input.compiled = compiler.compile({"dense_f32.cu", "", input.kernel.options, {"sm_90"}});
      input.instances = table.instances();
      MeasureResult r = device.measure({input}).at(0);
      if (r.status != MeasureStatus::kOk) continue;
      for (size_t i = 0; i < table.size(); ++i)
        if (r.latency_us[i] < best[i]) best[i] = r.latency_us[i], winner[i] = mk.key();
    }
    Exhaustive e;
    e.candidates = all.candidates.size();
    e.weighted_mean_us = table.weighted_mean(best);
    e.winners.insert(winner.begin(), winner.end());
    return e;
  }

  static std::vector<std::string> lines_without_timestamps(const std::string& path) {
    std::ifstream in(path);
    std::vector<std::string> out;
    std::string line;
    while (std::getline(in, line)) {
      nlohmann::json j = nlohmann::json::parse(line);
      j.erase("timestamp");
      out.push_back(j.dump());
    }
    return out;
  }

  Workload workload_;
  TemplateSpace space_;
  FakeCompiler compiler_;
  fs::path dir_;
};

// One dense op over B x T = 12 x 16 instances: more than a kernel is timed on.
Workload cross_product_workload() {
  return parse_workload(R"({
    "name": "cross",
    "shape_vars": { "B": { "min": 1, "max": 12 }, "T": { "min": 1, "max": 16 } },
    "ops": [ { "name": "dense", "op": "dense", "dtype": "float32", "M": "B*T", "N": 768,
               "K": 768 } ]
  })",
                        "cross.json");
}

// Three dense ops of different shapes over T in 1..8, searched with the fixture's space.
Workload three_dense_ops() {
  return parse_workload(R"({
    "name": "three",
    "shape_vars": { "T": { "min": 1, "max": 8 } },
    "ops": [
      { "name": "a", "op": "dense", "dtype": "float32", "M": "16*T", "N": 768, "K": 768 },
      { "name": "b", "op": "dense", "dtype": "float32", "M": "16*T", "N": 256, "K": 512 },
      { "name": "c", "op": "dense", "dtype": "float32", "M": "16*T", "N": 512, "K": 256 }
    ]
  })",
                        "three.json");
}

}  // namespace
}  // namespace dietcode
