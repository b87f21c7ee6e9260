// GpuMeasurer's default reference check, built for real: with neither a reference hook nor a
// compiler, the measurer compiles templates/reference_gemm.cu with an NVRTC of its own for the
// worker's arch, and the worker receives that CUBIN with the reference kernel's launch plan.
// The worker is a stand-in that inspects what it received (no GPU needed).
#include <gtest/gtest.h>

#include "measure/gpu_measurer.h"

namespace dietcode {
namespace {

using nlohmann::json;

bool is_elf(const std::string& bytes) {
  return bytes.size() > 4 && bytes.substr(0, 4) ==
                                 "\x7f"
                                 "ELF";
}

// Answers ok when the candidate came with a usable reference kernel, else says what is amiss.
json inspecting_gpu(const json& request) {
  if (request.at("action") == "identify") {
    GpuSpec spec;
    spec.name = "Fake GPU";
    return {{"name", "Fake GPU"}, {"arch", "sm_80"}, {"spec", gpu_spec_to_json(spec)}};
  }
  std::string problem;
  if (request.at("action") == "check") {
    WorkerCandidate c = candidate_from_json(request.at("candidate"));
    if (!c.reference)
      problem = "no reference";
    else if (!is_elf(c.reference->image))
      problem = "the reference image is not a CUBIN";
    else if (c.reference->plan.entry != "dietcode_reference_gemm" ||
             c.reference->plan.threads != 256 || c.reference->plan.tile_m != 16)
      problem = "the reference plan is not reference_gemm's";
  }
  WorkerResult r;
  if (!problem.empty()) {
    r.status = MeasureStatus::kWrongResult;
    r.error = problem;
  }
  if (request.at("action") == "time") {
    json results = json::array();
    for (const json& cj : request.at("candidates")) {
      WorkerResult t;
      t.latency_us.assign(candidate_from_json(cj).shapes.size(), 5.0);
      results.push_back(to_json(t));
    }
    return {{"results", results}, {"context_lost", false}};
  }
  json j = to_json(r);
  j["context_lost"] = false;
  return j;
}

TEST(GpuMeasurerReference, DefaultsToReferenceGemmCompiledWithNvrtc) {
  OpSpec op;
  op.name = "fc";
  op.epilogue = Epilogue::kBiasGelu;
  GpuMeasurer measurer(std::make_unique<WorkerProcess>(inspecting_gpu), GpuMeasurerOptions());

  MeasureInput in;
  in.op = &op;
  in.mk = {"dense_f32", {}};
  in.kernel.plan.entry = "candidate";
  in.kernel.plan.tile_m = in.kernel.plan.tile_n = 64;
  in.compiled.ok = true;
  in.compiled.binaries = {{"sm_80", "CUBIN", {}}};
  Instance inst;
  inst.gemm = {1, 100, 768, 768};
  in.instances = {inst};

  std::vector<MeasureResult> results = measurer.measure({in});
  EXPECT_EQ(results[0].status, MeasureStatus::kOk) << results[0].error;
  EXPECT_EQ(results[0].latency_us, (std::vector<double>{5.0}));
}

}  // namespace
}  // namespace dietcode
