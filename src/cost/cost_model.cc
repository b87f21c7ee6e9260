#include "cost/cost_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

#include "cost/analytic_fit.h"
#include "cost/prior.h"

namespace dietcode {

namespace {

// The coarse grid's overhead step, over which retrain() fits the launch overhead
// (analytic_fit.h): the overhead's range in 20 steps.
constexpr int kOverheadSteps = 20;
// Below this many rows per thread XGBoost's parallel regions cost more than they save, and
// on a busy host its spinning threads wait for each other: train on one thread.
constexpr size_t kRowsPerTrainingThread = 2000;

// log(f_MK / peak) a measurement implies under given knobs; NaN when it implies nothing.
double log_label(const AnalyticTerms& terms, double latency_us, const AnalyticParams& params) {
  AnalyticTerms t = with_params(terms, params);
  double f = implied_throughput(t, latency_us);
  if (!(f > 0) || !std::isfinite(f)) return std::numeric_limits<double>::quiet_NaN();
  return std::log(f / t.peak_flops_per_us);
}

// How much a measurement says about f_MK: the share of its time the compute term explains.
// Launch-bound measurements mostly measure the overhead.
double compute_share(const AnalyticTerms& terms, double latency_us) {
  return std::clamp(compute_time_us(terms, latency_us) / latency_us, kMinComputeShare, 1.0);
}

}  // namespace

CostModel::CostModel(CostModelParams params) : params_(params), analytic_(params.analytic) {
  report_.analytic = analytic_;
}

void CostModel::add_measurement(const KernelCandidate& candidate, const GemmShape& shape,
                                double latency_us, double weight) {
  KernelProfile profile = make_profile(candidate);
  add_measurement(candidate.mk.key(), kernel_features(candidate), shape,
                  analytic_terms(profile, shape, analytic_), latency_us, weight);
}

void CostModel::add_measurement(const std::string& kernel_key, const KernelFeatures& features,
                                const GemmShape& shape, const AnalyticTerms& terms,
                                double latency_us, double weight) {
  if (!(latency_us > 0) || !std::isfinite(latency_us))
    throw std::invalid_argument("CostModel: latency of " + kernel_key + " must be positive, got " +
                                std::to_string(latency_us));
  if (!(weight >= 0) || !std::isfinite(weight))
    throw std::invalid_argument("CostModel: weight of " + kernel_key +
                                " must be non-negative, got " + std::to_string(weight));
  if (features.values.size() != size_t(kFeatureCount))
    throw std::invalid_argument("CostModel: " + kernel_key + " has " +
                                std::to_string(features.values.size()) + " features, expected " +
                                std::to_string(kFeatureCount));
  const auto [id, fresh] = kernel_ids_.try_emplace(kernel_key, kernel_keys_.size());
  if (fresh) kernel_keys_.push_back(kernel_key);
  rows_.push_back({id->second, features, shape, terms, latency_us, weight});
}

size_t CostModel::distinct_kernels() const { return kernel_keys_.size(); }

TrainingReport CostModel::retrain() {
  auto start = std::chrono::steady_clock::now();
  report_ = TrainingReport{};
  report_.rows = rows_.size();
  report_.kernels = distinct_kernels();
  if (params_.fit_analytic) fit_analytic_params();
  report_.analytic = analytic_;

  learned_ = false;
  own_labels_.clear();
  if (report_.kernels >= params_.min_kernels_to_learn && report_.kernels > 0) train_booster();
  report_.learned = learned_;

  // Fit on the training rows, in log latency: how far the model is from what it was told.
  double squared = 0;
  size_t counted = 0;
  if (!rows_.empty()) {
    // f_MK depends on the features alone, and a kernel's rows share them (unless it was
    // measured before and after its registers were known): predict each distinct row once.
    // Rows are compared bit for bit, as missing features are NaN.
    std::vector<std::vector<size_t>> seen(kernel_keys_.size());  // per kernel: distinct rows
    std::vector<size_t> row_of(rows_.size());
    DenseMatrix features;
    auto same = [&](size_t a, size_t b) {
      const std::vector<float>& x = rows_[a].features.values;
      const std::vector<float>& y = rows_[b].features.values;
      return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
    };
    std::vector<size_t> first_row;  // the row each prediction was made for
    for (size_t i = 0; i < rows_.size(); ++i) {
      std::vector<size_t>& known = seen[rows_[i].kernel];
      auto it = std::find_if(known.begin(), known.end(),
                             [&](size_t p) { return same(first_row[p], i); });
      if (it == known.end()) {
        known.push_back(first_row.size());
        first_row.push_back(i);
        features.add_row(rows_[i].features.values);
        it = known.end() - 1;
      }
      row_of[i] = *it;
    }
    std::vector<float> predicted = learned_ ? booster_.predict(features) : std::vector<float>{};
    for (size_t i = 0; i < rows_.size(); ++i) {
      const Row& r = rows_[i];
      AnalyticTerms t = with_params(r.terms, analytic_);
      double f = learned_
                     ? std::exp(double(predicted[row_of[i]])) * t.peak_flops_per_us
                     : prior_throughput(r.features, t.peak_flops_per_us, t.bandwidth_bytes_per_us);
      double latency = model_latency_us(t, f);
      if (!std::isfinite(latency)) continue;
      squared += std::pow(std::log(latency / r.latency_us), 2);
      ++counted;
    }
  }
  report_.train_rmse = counted ? std::sqrt(squared / counted) : 0;
  report_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report_;
}

void CostModel::fit_analytic_params() {
  std::vector<FitMeasurement> rows;
  rows.reserve(rows_.size());
  double min_latency = std::numeric_limits<double>::infinity();
  for (const Row& r : rows_) {
    rows.push_back({r.kernel, &r.terms, r.latency_us, r.weight});
    min_latency = std::min(min_latency, r.latency_us);
  }
  // An overhead at or above the fastest measurement would leave it no compute time.
  const double max_overhead = std::min(params_.max_launch_overhead_us, 0.95 * min_latency);
  const AnalyticFit fit = fit_analytic(rows, analytic_, max_overhead,
                                       params_.max_launch_overhead_us / kOverheadSteps);
  if (!fit.fitted) return;  // no kernel measured on two shapes yet
  analytic_ = fit.params;
  report_.label_spread = std::sqrt(fit.spread);
}

void CostModel::train_booster() {
  // One row per kernel: the weighted mean of its log labels, each measurement weighted by
  // its own weight times how compute-bound it is.
  std::vector<std::vector<size_t>> members_of(kernel_keys_.size());
  for (size_t i = 0; i < rows_.size(); ++i) members_of[rows_[i].kernel].push_back(i);
  // Training rows in key order, as they always were: the booster is the same whatever order
  // the measurements came in.
  std::vector<size_t> order(kernel_keys_.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return kernel_keys_[a] < kernel_keys_[b]; });
  DenseMatrix features;
  std::vector<float> labels, weights;
  for (size_t k : order) {
    const std::string& key = kernel_keys_[k];
    const std::vector<size_t>& members = members_of[k];
    if (members.empty()) continue;
    double label_sum = 0, weight_sum = 0;
    std::vector<ShapeLabel> along;
    for (size_t i : members) {
      const Row& r = rows_[i];
      AnalyticTerms t = with_params(r.terms, analytic_);
      double y = log_label(r.terms, r.latency_us, analytic_);
      if (std::isnan(y)) continue;
      double w = r.weight * compute_share(t, r.latency_us);
      label_sum += w * y;
      weight_sum += w;
      if (params_.own_label_bandwidth > 0) along.push_back({r.shape, y, w});
    }
    if (!(weight_sum > 0)) continue;
    features.add_row(rows_[members.back()].features.values);  // the latest, e.g. compiled
    labels.push_back(float(label_sum / weight_sum));
    // Weights relative to the kernel's mean, so the prior's weight counts measurements.
    const double mean_w = weight_sum / double(std::max<size_t>(along.size(), 1));
    for (ShapeLabel& l : along) l.weight /= mean_w;
    own_labels_[key] = {label_sum / weight_sum, std::move(along)};
    weights.push_back(float(weight_sum / members.size()));
  }
  if (labels.size() < params_.min_kernels_to_learn || labels.empty()) return;
  // Mean weight 1, so min_child_weight counts kernels whatever the caller's weight scale.
  double mean_weight = 0;
  for (float w : weights) mean_weight += w;
  mean_weight /= weights.size();
  for (float& w : weights) w = float(w / mean_weight);
  XgbParams xgb = params_.xgb;
  if (labels.size() < kRowsPerTrainingThread * size_t(std::max(1, xgb.nthread))) xgb.nthread = 1;
  booster_.train(features, labels, weights, xgb);
  learned_ = true;
}

std::vector<double> CostModel::throughputs(const std::vector<KernelCandidate>& candidates,
                                           std::vector<KernelProfile>* profiles_out) const {
  std::vector<KernelProfile> profiles;
  profiles.reserve(candidates.size());
  std::vector<KernelFeatures> features;
  features.reserve(candidates.size());
  for (const KernelCandidate& c : candidates) {
    profiles.push_back(make_profile(c));
    features.push_back(kernel_features(c));
  }
  std::vector<double> out(candidates.size());
  if (learned_) {
    DenseMatrix rows;
    rows.cols = size_t(kFeatureCount);
    rows.values.reserve(candidates.size() * rows.cols);
    for (const KernelFeatures& f : features) rows.add_row(f.values);
    std::vector<float> log_efficiency = booster_.predict(rows);
    for (size_t i = 0; i < candidates.size(); ++i) {
      // A kernel measured on some shapes is predicted on the others from its own label:
      // what it did beats what kernels with features like its did.
      const bool ask = params_.own_label_for_measured && !own_labels_.empty();
      const auto own = ask ? own_labels_.find(candidates[i].mk.key()) : own_labels_.end();
      const double log_f = own != own_labels_.end() ? own->second.mean : double(log_efficiency[i]);
      out[i] = std::exp(log_f) * profiles[i].peak_flops_per_us;
    }
  } else {
    for (size_t i = 0; i < candidates.size(); ++i)
      out[i] = prior_throughput(features[i], profiles[i].peak_flops_per_us,
                                profiles[i].bandwidth_bytes_per_us);
  }
  if (profiles_out) *profiles_out = std::move(profiles);
  return out;
}

std::vector<double> CostModel::predict_throughput(
    const std::vector<KernelCandidate>& candidates) const {
  return throughputs(candidates, nullptr);
}

double CostModel::own_label_at(const OwnLabels& own, const GemmShape& shape) const {
  auto log_ratio = [](int64_t a, int64_t b) {
    return std::log(double(std::max<int64_t>(a, 1)) / double(std::max<int64_t>(b, 1)));
  };
  std::vector<double> d2(own.along.size());
  double nearest = INFINITY;
  for (size_t i = 0; i < own.along.size(); ++i) {
    const GemmShape& at = own.along[i].shape;
    d2[i] = std::pow(log_ratio(shape.batch, at.batch), 2) + std::pow(log_ratio(shape.M, at.M), 2) +
            std::pow(log_ratio(shape.N, at.N), 2) + std::pow(log_ratio(shape.K, at.K), 2);
    nearest = std::min(nearest, d2[i]);
  }
  double h2 = params_.own_label_bandwidth * params_.own_label_bandwidth;
  if (params_.own_label_reach_nearest && nearest > h2) h2 = nearest;
  double sum = params_.own_label_prior_weight * own.mean, weight = params_.own_label_prior_weight;
  for (size_t i = 0; i < own.along.size(); ++i) {
    const double g = own.along[i].weight * std::exp(-0.5 * d2[i] / h2);
    sum += g * own.along[i].label;
    weight += g;
  }
  return weight > 0 ? sum / weight : own.mean;
}

std::vector<double> CostModel::predict_latency_us(const std::vector<KernelCandidate>& candidates,
                                                  const std::vector<GemmShape>& shapes) const {
  std::vector<KernelProfile> profiles;
  std::vector<double> f_mk = throughputs(candidates, &profiles);
  std::vector<double> out(candidates.size() * shapes.size());
  // f_mk already holds a measured kernel's mean label; with its labels shape by shape, each
  // shape gets the label of the shapes near it instead.
  const bool along_shapes = learned_ && params_.own_label_for_measured &&
                            params_.own_label_bandwidth > 0 && !own_labels_.empty();
  for (size_t c = 0; c < candidates.size(); ++c) {
    const OwnLabels* own = nullptr;
    if (along_shapes) {
      const auto it = own_labels_.find(candidates[c].mk.key());
      if (it != own_labels_.end() && !it->second.along.empty()) own = &it->second;
    }
    for (size_t s = 0; s < shapes.size(); ++s) {
      const double f = own ? std::exp(own_label_at(*own, shapes[s])) * profiles[c].peak_flops_per_us
                           : f_mk[c];
      out[c * shapes.size() + s] =
          model_latency_us(analytic_terms(profiles[c], shapes[s], analytic_), f);
    }
  }
  return out;
}

double CostModel::predict_latency_us(const KernelCandidate& candidate,
                                     const GemmShape& shape) const {
  return predict_latency_us(std::vector<KernelCandidate>{candidate}, {shape}).front();
}

}  // namespace dietcode
