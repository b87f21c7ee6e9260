// The adapter over the shared tuning-log reader (search/tuning_log.h): its strict records,
// with damaged lines already skipped and reported, reduced to what the pack builder uses.
#include "pack/log_records.h"

#include "measure/measurer.h"
#include "search/tuning_log.h"

namespace dietcode {

std::vector<LogMeasurement> read_log_measurements(const std::string& path,
                                                  std::vector<std::string>& warnings) {
  TuningLog log = read_tuning_log(path, warnings, /*must_exist=*/true);
  std::vector<LogMeasurement> out;
  out.reserve(log.records.size());
  for (const TuningRecord& r : log.records) {
    LogMeasurement m;
    m.workload = r.workload;
    m.op = r.op;
    m.mk = r.mk;
    m.shape = r.shape;
    m.has_gemm = true;
    m.gemm[0] = r.gemm.batch;
    m.gemm[1] = r.gemm.M;
    m.gemm[2] = r.gemm.N;
    m.gemm[3] = r.gemm.K;
    m.status = to_string(r.status);
    if (r.latency_us) m.latency_us = *r.latency_us;
    m.runoff = r.runoff;
    m.simulated = r.simulated;
    m.arch = r.arch;
    m.device = r.device;
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace dietcode
