#include "cost/xgboost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <utility>

namespace dietcode {

namespace {

void check(int status) {
  if (status != 0) throw std::runtime_error(std::string("xgboost: ") + XGBGetLastError());
}

// Owns a DMatrixHandle for the length of one call.
class DMatrix {
 public:
  DMatrix(const DenseMatrix& m, int nthread) {
    check(XGDMatrixCreateFromMat_omp(m.values.data(), m.rows(), m.cols,
                                     std::numeric_limits<float>::quiet_NaN(), &handle_, nthread));
  }
  ~DMatrix() { XGDMatrixFree(handle_); }
  DMatrix(const DMatrix&) = delete;
  DMatrix& operator=(const DMatrix&) = delete;
  DMatrixHandle get() const { return handle_; }

 private:
  DMatrixHandle handle_ = nullptr;
};

void set_param(BoosterHandle booster, const char* name, const std::string& value) {
  check(XGBoosterSetParam(booster, name, value.c_str()));
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

void DenseMatrix::add_row(const std::vector<float>& row) {
  if (values.empty() && cols == 0) cols = row.size();
  if (row.size() != cols)
    throw std::invalid_argument("DenseMatrix: row of " + std::to_string(row.size()) +
                                " values in a matrix of " + std::to_string(cols) + " columns");
  values.insert(values.end(), row.begin(), row.end());
}

XgbRegressor::XgbRegressor() = default;

XgbRegressor::~XgbRegressor() { reset(); }

XgbRegressor::XgbRegressor(XgbRegressor&& other) noexcept { *this = std::move(other); }

XgbRegressor& XgbRegressor::operator=(XgbRegressor&& other) noexcept {
  if (this != &other) {
    reset();
    booster_ = std::exchange(other.booster_, nullptr);
    trained_ = std::exchange(other.trained_, false);
    num_features_ = std::exchange(other.num_features_, 0);
    nthread_ = other.nthread_;
  }
  return *this;
}

void XgbRegressor::reset() {
  if (booster_) XGBoosterFree(booster_);
  booster_ = nullptr;
  trained_ = false;
  num_features_ = 0;
}

void XgbRegressor::train(const DenseMatrix& rows, const std::vector<float>& labels,
                         const std::vector<float>& weights, const XgbParams& params) {
  size_t n = rows.rows();
  if (n == 0 || rows.cols == 0) throw std::invalid_argument("XgbRegressor: no training rows");
  if (rows.values.size() != n * rows.cols || labels.size() != n ||
      (!weights.empty() && weights.size() != n))
    throw std::invalid_argument("XgbRegressor: " + std::to_string(n) + " rows, " +
                                std::to_string(labels.size()) + " labels, " +
                                std::to_string(weights.size()) + " weights");
  reset();
  nthread_ = std::max(1, params.nthread);
  DMatrix data(rows, nthread_);
  check(XGDMatrixSetFloatInfo(data.get(), "label", labels.data(), n));
  if (!weights.empty()) check(XGDMatrixSetFloatInfo(data.get(), "weight", weights.data(), n));

  // Starting from the weighted mean label saves the first rounds from walking there.
  double sum = 0, total = 0;
  for (size_t i = 0; i < n; ++i) {
    double w = weights.empty() ? 1.0 : weights[i];
    sum += w * labels[i];
    total += w;
  }
  double base_score = total > 0 ? sum / total : 0.0;

  DMatrixHandle cache[] = {data.get()};
  check(XGBoosterCreate(cache, 1, &booster_));
  set_param(booster_, "objective", "reg:squarederror");
  set_param(booster_, "tree_method", "hist");
  set_param(booster_, "verbosity", "0");
  set_param(booster_, "max_depth", std::to_string(params.max_depth));
  set_param(booster_, "eta", number(params.eta));
  set_param(booster_, "min_child_weight", number(params.min_child_weight));
  set_param(booster_, "lambda", number(params.lambda));
  set_param(booster_, "nthread", std::to_string(nthread_));
  set_param(booster_, "seed", std::to_string(params.seed));
  set_param(booster_, "base_score", number(base_score));
  for (int round = 0; round < params.rounds; ++round)
    check(XGBoosterUpdateOneIter(booster_, round, data.get()));
  trained_ = true;
  num_features_ = rows.cols;
}

std::vector<float> XgbRegressor::predict(const DenseMatrix& rows) const {
  if (!trained_) throw std::logic_error("XgbRegressor: predict before train or load");
  if (rows.cols != num_features_)
    throw std::invalid_argument("XgbRegressor: rows have " + std::to_string(rows.cols) +
                                " features, the model " + std::to_string(num_features_));
  if (rows.rows() == 0) return {};
  DMatrix data(rows, nthread_);
  const char* config =
      R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0,
          "strict_shape": false})";
  const bst_ulong* shape = nullptr;
  bst_ulong dims = 0;
  const float* result = nullptr;
  check(XGBoosterPredictFromDMatrix(booster_, data.get(), config, &shape, &dims, &result));
  return std::vector<float>(result, result + rows.rows());
}

std::string XgbRegressor::save() const {
  if (!trained_) throw std::logic_error("XgbRegressor: save before train or load");
  bst_ulong length = 0;
  const char* bytes = nullptr;
  check(XGBoosterSaveModelToBuffer(booster_, R"({"format": "ubj"})", &length, &bytes));
  return std::string(bytes, length);
}

void XgbRegressor::load(const std::string& bytes) {
  reset();
  check(XGBoosterCreate(nullptr, 0, &booster_));
  check(XGBoosterLoadModelFromBuffer(booster_, bytes.data(), bytes.size()));
  bst_ulong features = 0;
  check(XGBoosterGetNumFeature(booster_, &features));
  set_param(booster_, "nthread", std::to_string(nthread_));
  trained_ = true;
  num_features_ = features;
}

}  // namespace dietcode
