// The measurements of a tuning log (SPEC §4) as the pack builder needs them. This adapter
// (log_records.cc, over search/tuning_log.h) is the only place the build side meets the log.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "space/micro_kernel.h"

namespace dietcode {

struct LogMeasurement {
  std::string workload;  // empty when the record does not say
  std::string op;
  MicroKernel mk;
  std::map<std::string, int64_t> shape;
  bool has_gemm = false;
  int64_t gemm[4] = {1, 1, 1, 1};  // batch, M, N, K as measured
  std::string status;              // "ok", "compile_error", "timeout", ...
  double latency_us = NAN;         // when ok
  int runoff = 0;                  // the runoff that timed it (search/runoff.h); 0: a round
  bool simulated = false;
  std::string arch, device;
};

// Every measurement of the log, in file order. Lines that are not valid records (a torn last
// line after a crash, a damaged one) are skipped with "LOG:LINE: skipped: REASON" in warnings;
// lines of another "kind" are ignored. Throws UserError("LOG: no such tuning log").
std::vector<LogMeasurement> read_log_measurements(const std::string& path,
                                                  std::vector<std::string>& warnings);

}  // namespace dietcode
