// The XGBoost wrapper: learns, is deterministic, round-trips, reports errors.
#include "cost/xgboost_model.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

namespace dietcode {
namespace {

// y = 2 x + 1 with x in [0, 10], plus a column of noise the model must learn to ignore and
// a column that is missing (NaN) on every third row.
struct Data {
  DenseMatrix rows;
  std::vector<float> labels;
};

Data linear_data(int n, uint64_t seed) {
  std::mt19937_64 engine(seed);
  Data d;
  d.rows.cols = 3;
  for (int i = 0; i < n; ++i) {
    float x = float(double(engine() % 100000) / 10000.0);
    float noise = float(double(engine() % 1000) / 1000.0);
    float sometimes = i % 3 == 0 ? NAN : float(i % 7);
    d.rows.add_row({x, noise, sometimes});
    d.labels.push_back(2 * x + 1);
  }
  return d;
}

XgbParams small_params() {
  XgbParams p;
  p.rounds = 200;
  p.max_depth = 4;
  p.eta = 0.3;
  p.nthread = 1;  // small data: threads only add synchronisation
  p.seed = 7;
  return p;
}

TEST(XgbRegressor, LearnsALinearFunction) {
  Data train = linear_data(2000, 1), test = linear_data(500, 2);
  XgbRegressor model;
  model.train(train.rows, train.labels, {}, small_params());
  EXPECT_TRUE(model.trained());
  EXPECT_EQ(model.num_features(), 3u);
  std::vector<float> predicted = model.predict(test.rows);
  ASSERT_EQ(predicted.size(), test.labels.size());
  double abs_error = 0;
  for (size_t i = 0; i < predicted.size(); ++i)
    abs_error += std::fabs(predicted[i] - test.labels[i]);
  EXPECT_LT(abs_error / predicted.size(), 0.1);
}

TEST(XgbRegressor, DeterministicForASeed) {
  Data train = linear_data(1000, 3), test = linear_data(100, 4);
  XgbParams params = small_params();
  params.nthread = 2;  // determinism must hold with parallel histogram building too
  params.rounds = 50;
  XgbRegressor a, b;
  a.train(train.rows, train.labels, {}, params);
  b.train(train.rows, train.labels, {}, params);
  EXPECT_EQ(a.predict(test.rows), b.predict(test.rows));
  EXPECT_EQ(a.save(), b.save());
}

TEST(XgbRegressor, SaveLoadRoundTripPredictsIdentically) {
  Data train = linear_data(1000, 5), test = linear_data(100, 6);
  XgbRegressor model;
  model.train(train.rows, train.labels, {}, small_params());
  std::string bytes = model.save();
  EXPECT_GT(bytes.size(), 1000u);
  XgbRegressor loaded;
  loaded.load(bytes);
  EXPECT_EQ(loaded.num_features(), 3u);
  EXPECT_EQ(loaded.predict(test.rows), model.predict(test.rows));
  XgbRegressor moved(std::move(loaded));
  EXPECT_EQ(moved.predict(test.rows), model.predict(test.rows));
}

TEST(XgbRegressor, WeightsDecideBetweenConflictingLabels) {
  // Every x appears twice: labelled 2x + 1 with weight 1 and -50 with weight 1e-4.
  Data d = linear_data(1000, 8);
  DenseMatrix rows;
  std::vector<float> labels, weights;
  for (size_t i = 0; i < d.labels.size(); ++i) {
    std::vector<float> row(d.rows.values.begin() + i * 3, d.rows.values.begin() + i * 3 + 3);
    rows.add_row(row);
    labels.push_back(d.labels[i]);
    weights.push_back(1.0f);
    rows.add_row(row);
    labels.push_back(-50.0f);
    weights.push_back(1e-4f);
  }
  XgbRegressor model;
  model.train(rows, labels, weights, small_params());
  std::vector<float> predicted = model.predict(d.rows);
  double abs_error = 0;
  for (size_t i = 0; i < predicted.size(); ++i) abs_error += std::fabs(predicted[i] - d.labels[i]);
  EXPECT_LT(abs_error / predicted.size(), 0.2);
}

TEST(XgbRegressor, ErrorsSayWhatIsWrong) {
  XgbRegressor model;
  DenseMatrix rows;
  rows.add_row({1, 2, 3});
  EXPECT_THROW(model.predict(rows), std::logic_error);
  EXPECT_THROW(model.train(rows, {1, 2}, {}, small_params()), std::invalid_argument);
  EXPECT_THROW(model.train(DenseMatrix{}, {}, {}, small_params()), std::invalid_argument);
  try {
    rows.add_row({1, 2});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "DenseMatrix: row of 2 values in a matrix of 3 columns");
  }

  Data train = linear_data(100, 9);
  model.train(train.rows, train.labels, {}, small_params());
  DenseMatrix narrow;
  narrow.add_row({1, 2});
  try {
    model.predict(narrow);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "XgbRegressor: rows have 2 features, the model 3");
  }
  try {
    model.load("not a model");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("xgboost: ", 0), 0u) << e.what();
  }
  EXPECT_FALSE(model.trained());
}

// A benchmark, not a test: the cost model's training cost at a realistic size.
// Run with --gtest_also_run_disabled_tests --gtest_filter='*TrainingTime*'.
TEST(XgbRegressor, DISABLED_TrainingTime5000Rows20Features) {
  std::mt19937_64 engine(11);
  DenseMatrix rows;
  std::vector<float> labels;
  for (int i = 0; i < 5000; ++i) {
    std::vector<float> row(20);
    for (float& v : row) v = float(double(engine() % 10000) / 100.0);
    labels.push_back(std::log(1 + row[0]) * row[1] / 100 + row[2] * 0.01f);
    rows.add_row(row);
  }
  for (int threads : {1, 2}) {
    XgbParams params;  // 200 rounds, depth 6
    params.nthread = threads;
    XgbRegressor model;
    auto start = std::chrono::steady_clock::now();
    model.train(rows, labels, {}, params);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("xgboost: 5000 rows x 20 features, %d rounds, depth %d, %d threads: %.3f s\n",
                params.rounds, params.max_depth, params.nthread, seconds);
    EXPECT_EQ(model.predict(rows).size(), 5000u);
  }
}

}  // namespace
}  // namespace dietcode
