// The micro-kernel cost model (METHOD.md §3): latency of a micro-kernel on a shape is
//
//   overhead + max(FLOPs / (f_MK * f_occ * f_pad), memory time) [+ split-K reduction]
//
// with f_occ, f_pad, the memory time and the overheads analytical (analytic.h) and f_MK, the
// kernel's own full-GPU throughput, a function of its features (features.h) alone:
//   - before `min_kernels_to_learn` distinct micro-kernels are measured, f_MK is the roofline
//     prior (prior.h), so candidates are ranked by the analytic terms;
//   - after, an XGBoost regression of log(f_MK / peak) on the features, trained on the labels
//     measurements imply: FLOPs / (f_occ * f_pad) / (latency - overheads).
// A kernel measured on many shapes yields one f_MK per shape; they should agree, and how well
// they do under a given partial-wave exponent (gamma) and launch overhead is what retrain()
// fits those two knobs to (the pooled within-kernel variance of the log labels). Training
// uses one row per kernel (its weighted mean log label), which is what squared error on all
// its rows would converge to, at a fraction of the cost.
//
// Typical use by the search: add_measurement() for every result of a round, retrain(), then
// predict_latency_us(candidates, shapes) for the next population.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "cost/analytic.h"
#include "cost/candidate.h"
#include "cost/features.h"
#include "cost/xgboost_model.h"

namespace dietcode {

// Shallow trees with a few kernels per leaf: the model sees one row per kernel, tens to a
// few hundred of them, and must generalise to kernels it has not seen.
inline XgbParams default_cost_model_xgb() {
  XgbParams p;
  p.max_depth = 4;
  p.min_child_weight = 3;
  return p;
}

struct CostModelParams {
  size_t min_kernels_to_learn = 16;
  XgbParams xgb = default_cost_model_xgb();
  AnalyticParams analytic;  // starting values; retrain() refits gamma and the overhead
  bool fit_analytic = true;
  // The ceiling of the fitted launch overhead (MachineSpec::max_launch_overhead_us).
  double max_launch_overhead_us = 5.0;
  // The say of another op's measurement beside one of the op's own (OpCostModel::learn_peer).
  double peer_weight = 0.3;
  // Once f_MK is learned, a kernel with measurements of its own is predicted from them (its
  // weighted mean label), not from the regression on its features.
  bool own_label_for_measured = true;
  // How far a measured kernel's own labels reach along the shapes: on a shape it was not
  // measured on, its label is those of the shapes it was measured on, each weighted by a
  // Gaussian of the distance between the shapes (over the logs of batch, M, N and K: 0.3 is
  // T against 1.35 T) and shrunk towards its mean label. What the analytic terms miss about a
  // kernel (edge tiles, the threads' balance at a given M, a cache that holds one M's operands
  // and not the next) changes along the shapes but smoothly, so the nearby shapes say more than
  // the mean over all of them. Replayed over the 24 BERT CPU logs in configs/tuned, it raised
  // the mean Spearman on held-out shapes from 0.898 to 0.912 and left fewer ops below 0.85 (9
  // of 96 against 16), no log's mean lower. 0: the mean alone.
  double own_label_bandwidth = 0.3;
  // The mean label's say in that, as so many of the kernel's measurements at the shape itself.
  double own_label_prior_weight = 0.3;
  // A shape farther from every measured one than the bandwidth reaches (BERT's T = 1, 2 log
  // units below T = 8; T = 8, 0.7 below T = 16) would get little but the mean label; with this
  // the bandwidth widens to the nearest measured shape's distance there, so that the shapes
  // nearest it speak first. Replayed over the 28 BERT CPU logs in configs/tuned (3 seeds), the
  // held-out-shapes Spearman at T = 8 rose from 0.840 to 0.872 on average (107 ops of 112
  // better, 1 worse), at T = 16 from 0.892 to 0.902, at T = 1 from 0.733 to 0.740, and every
  // log's mean over its shapes rose (0.911 to 0.914 over all).
  bool own_label_reach_nearest = true;
};

struct TrainingReport {
  size_t rows = 0;
  size_t kernels = 0;
  bool learned = false;  // f_MK comes from XGBoost (else from the prior)
  AnalyticParams analytic;
  double label_spread = 0;  // pooled within-kernel std. dev. of log f_MK labels
  double train_rmse = 0;    // RMSE of log latency on the training rows
  double seconds = 0;       // wall time of retrain()
};

class CostModel {
 public:
  explicit CostModel(CostModelParams params = {});

  // One measured latency of a candidate on a shape. weight scales the measurement's say in
  // training (e.g. the instance's priority). Throws std::invalid_argument unless latency_us
  // is positive and finite and weight non-negative and finite.
  void add_measurement(const KernelCandidate& candidate, const GemmShape& shape, double latency_us,
                       double weight = 1.0);
  // The same from precomputed parts: kernel_key identifies the micro-kernel (MicroKernel::key),
  // terms are analytic_terms of its profile on `shape`.
  void add_measurement(const std::string& kernel_key, const KernelFeatures& features,
                       const GemmShape& shape, const AnalyticTerms& terms, double latency_us,
                       double weight = 1.0);

  // Refits the analytic knobs and, with enough distinct kernels, f_MK.
  TrainingReport retrain();

  bool learned() const { return learned_; }
  size_t measurements() const { return rows_.size(); }
  size_t distinct_kernels() const;
  const AnalyticParams& analytic_params() const { return analytic_; }
  const TrainingReport& last_training() const { return report_; }

  // f_MK (FLOP/us) of each candidate.
  std::vector<double> predict_throughput(const std::vector<KernelCandidate>& candidates) const;

  // Predicted latency of every (candidate, shape) pair, row-major: [c * shapes.size() + s].
  // f_MK is predicted once per candidate; a kernel that cannot launch gets +infinity.
  std::vector<double> predict_latency_us(const std::vector<KernelCandidate>& candidates,
                                         const std::vector<GemmShape>& shapes) const;
  double predict_latency_us(const KernelCandidate& candidate, const GemmShape& shape) const;

  // The learned f_MK model (XGBoost's binary JSON), for debugging and reproducibility.
  // Throws std::logic_error before a model has been learned.
  std::string save_booster() const { return booster_.save(); }

 private:
  struct Row {
    size_t kernel;  // index into kernel_keys_
    KernelFeatures features;
    GemmShape shape;
    AnalyticTerms terms;
    double latency_us;
    double weight;
  };

  void fit_analytic_params();
  void train_booster();
  // f_MK of each candidate, and its profile when asked for.
  std::vector<double> throughputs(const std::vector<KernelCandidate>& candidates,
                                  std::vector<KernelProfile>* profiles) const;

  CostModelParams params_;
  AnalyticParams analytic_;
  std::vector<Row> rows_;
  // Kernel keys in the order of their first measurement, and their indices: a resumed log
  // holds tens of thousands of rows over a few hundred kernels, and grouping rows by an
  // index instead of a string key keeps retrain() from spending its time comparing keys.
  std::vector<std::string> kernel_keys_;
  std::unordered_map<std::string, size_t> kernel_ids_;
  XgbRegressor booster_;
  bool learned_ = false;
  // What a measured kernel's own measurements say (own_label_for_measured): its mean log label,
  // and its labels shape by shape for own_label_bandwidth (empty when that is 0).
  struct ShapeLabel {
    GemmShape shape;
    double label;
    double weight;  // relative to the kernel's mean weight
  };
  struct OwnLabels {
    double mean = 0;
    std::vector<ShapeLabel> along;
  };
  std::map<std::string, OwnLabels> own_labels_;  // by kernel key
  // The label of a measured kernel on `shape`: its labels on the shapes near it, shrunk towards
  // its mean label.
  double own_label_at(const OwnLabels& own, const GemmShape& shape) const;
  TrainingReport report_;
};

}  // namespace dietcode
