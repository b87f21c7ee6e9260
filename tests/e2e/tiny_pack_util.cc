#include "e2e/tiny_pack_util.h"

namespace dietcode::test {

const char kTinyWorkload[] = R"({"name": "tiny",
  "shape_vars": {"T": {"min": 1, "max": 40}},
  "ops": [{"name": "proj", "op": "dense", "dtype": "float32", "M": "4*T", "N": 64, "K": 32}]})";

const MicroKernel kTinySmall{
    "dense_f32",
    {{"WARPS_M", 1}, {"WARPS_N", 2}, {"THREADS_M", 4}, {"THREADS_N", 8}, {"TM", 2}, {"TN", 4}}};
const MicroKernel kTinySplit{"dense_f32",
                             {{"WARPS_M", 1},
                              {"WARPS_N", 2},
                              {"THREADS_M", 4},
                              {"THREADS_N", 8},
                              {"TM", 2},
                              {"TN", 4},
                              {"SPLITK", 2}}};
const MicroKernel kTinyLarge{"dense_f32", {}};

const MicroKernel& tiny_best_for(int64_t t) {
  return t <= 12 ? kTinySmall : t <= 25 ? kTinySplit : kTinyLarge;
}

TuningRecord h100_record(const std::string& workload, const std::string& op, const MicroKernel& mk,
                         int64_t t, const GemmShape& gemm) {
  TuningRecord r;
  r.workload = workload;
  r.op = op;
  r.mk = mk;
  r.shape = {{"T", t}};
  r.gemm = gemm;
  r.device = "NVIDIA H100 80GB HBM3";
  r.arch = "sm_90";
  r.tool_version = "0.1.0";
  r.timestamp = "2025-01-01T00:00:00.000Z";
  return r;
}

void write_tiny_log(const std::string& path) {
  TuningLogWriter writer(path);
  for (int64_t t = 1; t <= kTinyMaxT; ++t)
    for (const MicroKernel& mk : {kTinySmall, kTinySplit, kTinyLarge}) {
      TuningRecord r = h100_record("tiny", "proj", mk, t, {1, 4 * t, 64, 32});
      r.latency_us = 3.0 + 0.1 * double(t) + (mk == tiny_best_for(t) ? 0.0 : 1.0);
      writer.append(r);
    }
}

void write_two_band_log(const std::string& path, const std::string& workload,
                        const std::string& op, const MicroKernel& low, const MicroKernel& high,
                        int64_t n, int64_t k) {
  TuningLogWriter writer(path);
  for (int64_t t = 1; t <= 16; ++t)
    for (const MicroKernel& mk : {low, high}) {
      TuningRecord r = h100_record(workload, op, mk, t, {1, 8 * t, n, k});
      r.latency_us = 4.0 + ((mk == high) == (t > 8) ? 0.0 : 1.0);
      writer.append(r);
    }
}

}  // namespace dietcode::test
