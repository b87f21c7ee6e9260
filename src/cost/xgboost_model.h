// A thin RAII wrapper over XGBoost's C API (1.7): gradient-boosted regression trees on dense
// float rows. Every failing XGBoost call becomes std::runtime_error("xgboost: <its message>").
//
// Deterministic: the hist tree method with no row or column subsampling gives the same model
// for the same data, parameters and nthread; the seed is passed on for completeness.
// Prediction on one model from several threads at once is not supported (XGBoost hands back
// a buffer owned by the booster).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dietcode {

// Row-major dense matrix of features; NaN marks a missing value.
struct DenseMatrix {
  size_t cols = 0;
  std::vector<float> values;

  size_t rows() const { return cols ? values.size() / cols : 0; }
  void add_row(const std::vector<float>& row);  // throws std::invalid_argument on a width change
};

struct XgbParams {
  int rounds = 200;
  int max_depth = 6;
  double eta = 0.1;
  double min_child_weight = 1.0;
  double lambda = 1.0;  // L2 regularisation of leaf weights
  int nthread = 2;
  uint64_t seed = 0;
};

class XgbRegressor {
 public:
  XgbRegressor();
  ~XgbRegressor();
  XgbRegressor(XgbRegressor&& other) noexcept;
  XgbRegressor& operator=(XgbRegressor&& other) noexcept;
  XgbRegressor(const XgbRegressor&) = delete;
  XgbRegressor& operator=(const XgbRegressor&) = delete;

  // Fits squared-error regression from scratch. weights may be empty (all 1); otherwise it
  // and labels have one entry per row. Throws std::invalid_argument on mismatched sizes or
  // no rows.
  void train(const DenseMatrix& rows, const std::vector<float>& labels,
             const std::vector<float>& weights, const XgbParams& params);

  // One prediction per row. Throws std::logic_error when not trained or loaded, and
  // std::invalid_argument when the width differs from the training data's.
  std::vector<float> predict(const DenseMatrix& rows) const;

  bool trained() const { return trained_; }
  size_t num_features() const { return num_features_; }

  // The model as XGBoost's universal binary JSON, and back; predictions after a round trip
  // are identical.
  std::string save() const;
  void load(const std::string& bytes);

 private:
  void reset();

  void* booster_ = nullptr;  // BoosterHandle
  bool trained_ = false;
  size_t num_features_ = 0;
  int nthread_ = 1;
};

}  // namespace dietcode
