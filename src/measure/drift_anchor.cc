#include "measure/drift_anchor.h"

#include <algorithm>
#include <cmath>

namespace dietcode {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

void DriftAnchor::adopt(const WorkerCandidate& candidate, const std::vector<double>& latency_us) {
  if (adopted_) return;
  WorkerCandidate a = candidate;
  a.shapes.clear();
  a.conv.clear();
  a.check_shapes.clear();
  a.reference.reset();
  std::vector<std::vector<double>> samples;
  for (size_t s = 0; s < candidate.shapes.size() && s < latency_us.size(); ++s) {
    if (!(latency_us[s] > 0) || !std::isfinite(latency_us[s])) continue;
    a.shapes.push_back(candidate.shapes[s]);
    if (s < candidate.conv.size()) a.conv.push_back(candidate.conv[s]);
    samples.push_back({latency_us[s]});
  }
  if (a.shapes.empty()) return;
  anchor_ = std::move(a);
  samples_ = std::move(samples);
  adopted_ = true;
}

std::optional<size_t> DriftAnchor::pick(double batch_flops) const {
  if (!adopted_) return std::nullopt;
  std::optional<size_t> best;
  for (size_t s = 0; s < anchor_.shapes.size(); ++s) {
    const double flops = anchor_.shapes[s].flops();
    if (flops > max_share_ * batch_flops) continue;
    if (!best || flops > anchor_.shapes[*best].flops()) best = s;
  }
  return best;
}

WorkerCandidate DriftAnchor::candidate(size_t shape) const {
  WorkerCandidate c = anchor_;
  c.shapes = {anchor_.shapes.at(shape)};
  c.conv.clear();
  if (shape < anchor_.conv.size()) c.conv = {anchor_.conv[shape]};
  return c;
}

double DriftAnchor::observe(size_t shape, double latency_us) {
  if (shape >= samples_.size() || !(latency_us > 0) || !std::isfinite(latency_us)) return 1.0;
  std::vector<double>& seen = samples_[shape];
  const double scale = median(seen) / latency_us;
  if (scale > 1 + kMaxDrift || scale < 1 / (1 + kMaxDrift)) return 1.0;
  seen.push_back(latency_us);
  return scale;
}

}  // namespace dietcode
