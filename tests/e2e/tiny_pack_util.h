// What the pack tests build from: the "tiny" workload (one dense op, proj: M = 4*T, N = 64,
// K = 32, T in 1..40), three dense_f32 micro-kernels that compile for it, each the fastest on
// one band of T (the middle one splits K, so launches there take a workspace and a reduction),
// and log records as `dietcode tune` writes them on an H100.
#pragma once

#include <cstdint>
#include <string>

#include "search/tuning_log.h"

namespace dietcode::test {

extern const char kTinyWorkload[];
constexpr int64_t kTinyMaxT = 40;

extern const MicroKernel kTinySmall, kTinySplit, kTinyLarge;

// kTinySmall for T <= 12, kTinySplit up to 25, kTinyLarge above.
const MicroKernel& tiny_best_for(int64_t t);

// A successful measurement of mk on op at T = t, on an H100 (latency left unset).
TuningRecord h100_record(const std::string& workload, const std::string& op, const MicroKernel& mk,
                         int64_t t, const GemmShape& gemm);

// The tiny log: every kernel at every T, the band's best 1 us faster than the others.
void write_tiny_log(const std::string& path);

// A log for a 16-bit op `op` of `workload` with M = 8*T, T in 1..16, and a static N x K: both
// kernels measured at every T, `low` 1 us faster for T <= 8 and `high` above.
void write_two_band_log(const std::string& path, const std::string& workload,
                        const std::string& op, const MicroKernel& low, const MicroKernel& high,
                        int64_t n, int64_t k);

}  // namespace dietcode::test
