// GPU measurers of several devices sharing a round through MeasurePool, against stand-in
// workers that speak gpu_protocol.h without a GPU: every worker is bound to its own device,
// because every request it gets names that ordinal (CUDA_VISIBLE_DEVICES alone would leave
// each worker on ordinal 0); results come back in job order whatever the devices' speeds; and a
// worker that crashes on a device thread is replaced there, the job's other kernels timed.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "measure/gpu_measurer.h"
#include "measure/measure_pool.h"

namespace dietcode {
namespace {

using nlohmann::json;

std::string g_request_log;  // one line per request: "<pid> <device> <action>"

// Device 3 is slow; a candidate named crash_on_time kills its worker.
json fake_gpu(const json& request) {
  const std::string action = request.at("action");
  const int device = request.at("device");
  std::ofstream(g_request_log, std::ios::app)
      << ::getpid() << " " << device << " " << action << "\n";
  if (action == "identify") {
    GpuSpec spec;
    spec.name = "Fake GPU";
    return {{"name", spec.name}, {"arch", "sm_90"}, {"spec", gpu_spec_to_json(spec)}};
  }
  if (action == "prepare") return json::object();
  if (action == "check") {
    json j = to_json(WorkerResult());
    j["context_lost"] = false;
    return j;
  }
  if (device == 3) std::this_thread::sleep_for(std::chrono::milliseconds(30));
  json results = json::array();
  for (const json& cj : request.at("candidates")) {
    WorkerCandidate c = candidate_from_json(cj);
    if (c.kernel.plan.entry == "crash_on_time") raise(SIGSEGV);
    WorkerResult r;
    for (const GemmShape& s : c.shapes) r.latency_us.push_back(1 + double(s.M) / 100);
    results.push_back(to_json(r));
  }
  return {{"results", results}, {"context_lost", false}};
}

class GpuMeasurerPool : public ::testing::Test {
 protected:
  void SetUp() override {
    g_request_log = (std::filesystem::temp_directory_path() /
                     ("dietcode_gpu_measurer_pool_test_" + std::to_string(getpid())))
                        .string();
    std::filesystem::remove(g_request_log);
    op_.name = "qkv";
    op_.vars = {"T"};
  }
  void TearDown() override { std::filesystem::remove(g_request_log); }

  std::unique_ptr<GpuMeasurer> make(int device) {
    GpuMeasurerOptions options;
    options.device = device;
    options.measure.timeout_seconds = 2;
    options.reference = [](const OpSpec&, const std::string&) {
      return std::optional<ReferenceBuild>();
    };
    return std::make_unique<GpuMeasurer>(std::make_unique<WorkerProcess>(fake_gpu), options);
  }

  MeasureInput input(const std::string& entry, int64_t m) {
    MeasureInput in;
    in.op = &op_;
    in.mk = {"dense_f32", {{"BM", 64}, {"ID", int(made_++)}}};
    in.kernel.plan.entry = entry;
    in.kernel.plan.tile_m = 64;
    in.kernel.plan.tile_n = 64;
    in.compiled.ok = true;
    in.compiled.binaries = {{"sm_90", "CUBIN of " + entry, {}}};
    Instance inst;
    inst.values = {m / 16};
    inst.gemm = {1, m, 768, 768};
    in.instances.push_back(inst);
    return in;
  }

  OpSpec op_;
  int made_ = 0;
};

TEST_F(GpuMeasurerPool, EachWorkerServesOnlyItsOwnDeviceAndResultsComeInJobOrder) {
  auto one = make(1);
  auto three = make(3);
  MeasurePool pool({{1, one.get()}, {3, three.get()}});
  std::vector<std::vector<MeasureInput>> jobs;
  for (int j = 0; j < 8; ++j)
    jobs.push_back({input("k", 16 * (2 * j + 1)), input("k", 16 * (2 * j + 2))});
  std::vector<double> latencies;
  pool.run(jobs, [&](size_t job, std::vector<MeasureResult>& results) {
    EXPECT_EQ(job, latencies.size() / 2);
    for (const MeasureResult& r : results) {
      EXPECT_EQ(r.status, MeasureStatus::kOk) << r.error;
      latencies.push_back(r.latency_us.at(0));
    }
  });
  ASSERT_EQ(latencies.size(), 16u);
  for (size_t i = 0; i < 16; ++i) EXPECT_DOUBLE_EQ(latencies[i], 1 + 16.0 * double(i + 1) / 100);

  std::map<int, std::set<int>> devices_of_pid;
  std::map<int, int> time_requests;  // per device
  std::ifstream in(g_request_log);
  int pid = 0, device = 0;
  std::string action;
  while (in >> pid >> device >> action) {
    devices_of_pid[pid].insert(device);
    if (action == "time") ++time_requests[device];
  }
  ASSERT_EQ(devices_of_pid.size(), 2u);
  for (const auto& [p, devices] : devices_of_pid) EXPECT_EQ(devices.size(), 1u) << "pid " << p;
  EXPECT_EQ(time_requests[1] + time_requests[3], 8);
  // The fast device took more of the jobs.
  EXPECT_GT(time_requests[1], time_requests[3]);
}

TEST_F(GpuMeasurerPool, AWorkerThatCrashesOnADeviceThreadIsReplacedForTheNextJobs) {
  auto zero = make(0);
  auto one = make(1);
  MeasurePool pool({{0, zero.get()}, {1, one.get()}});
  std::vector<std::vector<MeasureInput>> jobs = {
      {input("k", 16), input("crash_on_time", 32), input("k", 48)},
      {input("k", 64)},
      {input("k", 80)}};
  std::vector<MeasureStatus> statuses;
  pool.run(jobs, [&](size_t, std::vector<MeasureResult>& results) {
    for (const MeasureResult& r : results) statuses.push_back(r.status);
  });
  EXPECT_EQ(statuses, (std::vector<MeasureStatus>{MeasureStatus::kOk, MeasureStatus::kLaunchError,
                                                  MeasureStatus::kOk, MeasureStatus::kOk,
                                                  MeasureStatus::kOk}));
  // The workers restarted on the device threads serve the next round.
  std::vector<std::vector<MeasureInput>> next = {{input("k", 16)}, {input("k", 32)}};
  size_t committed = 0;
  pool.run(next, [&](size_t, std::vector<MeasureResult>& results) {
    EXPECT_EQ(results.at(0).status, MeasureStatus::kOk) << results.at(0).error;
    ++committed;
  });
  EXPECT_EQ(committed, 2u);
  for (const PoolDeviceStats& s : pool.stats()) EXPECT_FALSE(s.failed) << s.error;
}

}  // namespace
}  // namespace dietcode
