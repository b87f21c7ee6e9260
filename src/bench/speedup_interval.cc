#include "bench/speedup_interval.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "bench/bench_runner.h"  // median

namespace dietcode {

namespace {

bool paired(const BenchRow& r) {
  return r.speedup() > 0 && r.pack_samples.size() >= 2 &&
         r.pack_samples.size() == r.baseline_samples.size();
}

// The speedups of `rows` with every paired row's rounds drawn again.
std::vector<BenchRow> resample(const std::vector<BenchRow>& rows, std::mt19937_64& rng) {
  std::vector<BenchRow> out;
  out.reserve(rows.size());
  for (const BenchRow& r : rows) {
    BenchRow copy;
    copy.weight = r.weight;
    copy.pack_us = r.pack_us;
    copy.baseline_us = r.baseline_us;
    if (paired(r)) {
      std::uniform_int_distribution<size_t> pick(0, r.pack_samples.size() - 1);
      std::vector<double> pack, baseline;
      for (size_t n = 0; n < r.pack_samples.size(); ++n) {
        const size_t round = pick(rng);  // both contenders' times of one round, together
        pack.push_back(r.pack_samples[round]);
        baseline.push_back(r.baseline_samples[round]);
      }
      copy.pack_us = median(std::move(pack));
      copy.baseline_us = median(std::move(baseline));
    }
    out.push_back(std::move(copy));
  }
  return out;
}

}  // namespace

SpeedupInterval geomean_speedup_interval(const std::vector<BenchRow>& rows,
                                         const IntervalOptions& options) {
  SpeedupInterval interval;
  if (options.resamples < 2 || !std::any_of(rows.begin(), rows.end(), paired)) return interval;
  std::mt19937_64 rng(options.seed);
  std::vector<double> geomeans;
  geomeans.reserve(size_t(options.resamples));
  for (int i = 0; i < options.resamples; ++i)
    geomeans.push_back(weighted_geomean_speedup(resample(rows, rng)));
  std::sort(geomeans.begin(), geomeans.end());
  const double tail = (1 - options.level) / 2;
  const auto at = [&](double q) {
    const long i = std::lround(q * double(geomeans.size() - 1));
    return geomeans[size_t(std::clamp(i, 0L, long(geomeans.size()) - 1))];
  };
  interval.low = at(tail);
  interval.high = at(1 - tail);
  interval.level = options.level;
  interval.resamples = options.resamples;
  return interval;
}

SpeedupInterval row_speedup_interval(const BenchRow& row, const IntervalOptions& options) {
  return geomean_speedup_interval({row}, options);
}

}  // namespace dietcode
