// From a parsed workload to concrete shapes: value lists and weights of shape variables, the
// cross product of an op's variables, the GEMM each op computes, FLOPs and priorities.
#include <gtest/gtest.h>

#include "common/error.h"
#include "workload/describe.h"
#include "workload/workload.h"

namespace dietcode {
namespace {

Workload parse(const std::string& text) { return parse_workload(text, "w.json"); }

TEST(ShapeVars, RangeWithStep) {
  Workload w = parse(R"({"name": "w", "shape_vars": {"T": {"min": 8, "max": 32, "step": 8}},
      "ops": [{"name": "a", "op": "dense", "M": "T", "N": 1, "K": 1}]})");
  EXPECT_EQ(w.vars[0].values, (std::vector<int64_t>{8, 16, 24, 32}));
  EXPECT_EQ(w.vars[0].weights, (std::vector<double>{0.25, 0.25, 0.25, 0.25}));
  EXPECT_EQ(describe_values(w.vars[0]), "8..32 step 8");
  EXPECT_EQ(describe_weights(w.vars[0]), "uniform");
}

TEST(ShapeVars, ValuesAreSortedWithTheirWeights) {
  Workload w =
      parse(R"({"name": "w", "shape_vars": {"B": {"values": [8, 1, 4], "weights": [2, 1, 1]}},
      "ops": [{"name": "a", "op": "dense", "M": "B", "N": 1, "K": 1}]})");
  EXPECT_EQ(w.vars[0].values, (std::vector<int64_t>{1, 4, 8}));
  EXPECT_EQ(w.vars[0].weights, (std::vector<double>{0.25, 0.25, 0.5}));
  EXPECT_EQ(describe_values(w.vars[0]), "{1, 4, 8}");
  EXPECT_EQ(describe_weights(w.vars[0]), "weighted");
}

TEST(ShapeVars, WeightObjectLeavesUnlistedValuesAtZero) {
  Workload w = parse(R"({"name": "w", "shape_vars": {"T": {"min": 1, "max": 4,
      "weights": {"2": 3, "4": 1.0}}},
      "ops": [{"name": "a", "op": "dense", "M": "T", "N": 1, "K": 1}]})");
  EXPECT_EQ(w.vars[0].weights, (std::vector<double>{0, 0.75, 0, 0.25}));
}

TEST(ShapeVars, DescribeLongIrregularList) {
  ShapeVar v{"T", {1, 2, 3, 5, 8, 13, 21, 34, 55, 89}, {}};
  EXPECT_EQ(describe_values(v), "{1, 2, 3, 5, 8, 13, ..., 89} (10 values)");
  EXPECT_EQ(describe_values(ShapeVar{"T", {7}, {1}}), "{7}");
  EXPECT_EQ(describe_values(ShapeVar{"T", {1, 2}, {}}), "{1, 2}");
}

TEST(Instances, CrossProductFirstVariableSlowest) {
  Workload w = parse(R"({"name": "w", "shape_vars": {
        "B": {"values": [1, 2], "weights": [3, 1]},
        "T": {"values": [10, 20, 30]}},
      "ops": [{"name": "a", "op": "dense", "M": "B*T", "N": 4, "K": 8, "weight": 2}]})");
  const OpSpec& op = w.ops[0];
  auto instances = expand_instances(w, op);
  ASSERT_EQ(instances.size(), 6u);
  std::vector<std::vector<int64_t>> order;
  for (const auto& inst : instances) order.push_back(inst.values);
  EXPECT_EQ(order, (std::vector<std::vector<int64_t>>{
                       {1, 10}, {1, 20}, {1, 30}, {2, 10}, {2, 20}, {2, 30}}));
  // weight = P(B) * P(T) * op weight
  EXPECT_DOUBLE_EQ(instances[0].weight, 0.75 / 3 * 2);
  EXPECT_DOUBLE_EQ(instances[5].weight, 0.25 / 3 * 2);
  double total = 0;
  for (const auto& inst : instances) total += inst.weight;
  EXPECT_DOUBLE_EQ(total, 2.0);
  // B=2, T=30: M = 60
  EXPECT_EQ(instances[5].gemm.M, 60);
  EXPECT_EQ(instances[5].gemm.N, 4);
  EXPECT_EQ(instances[5].gemm.K, 8);
  EXPECT_EQ(instances[5].gemm.batch, 1);
  EXPECT_DOUBLE_EQ(instances[5].flops, 2.0 * 60 * 4 * 8);
  EXPECT_DOUBLE_EQ(instances[5].priority, instances[5].flops * instances[5].weight);
}

TEST(Instances, OpWithoutVariablesHasOneInstance) {
  Workload w = parse(R"({"name": "w", "shape_vars": {"T": {"min": 1, "max": 4}},
      "ops": [{"name": "a", "op": "dense", "M": 3, "N": 4, "K": 5, "weight": 0.5}]})");
  auto instances = expand_instances(w, w.ops[0]);
  ASSERT_EQ(instances.size(), 1u);
  EXPECT_TRUE(instances[0].values.empty());
  EXPECT_DOUBLE_EQ(instances[0].weight, 0.5);
  EXPECT_DOUBLE_EQ(instances[0].flops, 120);
}

TEST(Instances, BertDenseFlops) {
  Workload w =
      load_workload(std::string(DIETCODE_SOURCE_DIR) + "/configs/workloads/bert_base_dense.json");
  EXPECT_EQ(w.name, "bert_dense");
  ASSERT_EQ(w.ops.size(), 4u);
  auto instances = expand_instances(w, w.ops[0]);
  ASSERT_EQ(instances.size(), 128u);
  EXPECT_EQ(instances[36].values, std::vector<int64_t>{37});
  EXPECT_EQ(instances[36].gemm.M, 16 * 37);
  EXPECT_DOUBLE_EQ(instances[36].flops, 2.0 * 16 * 37 * 2304 * 768);
  EXPECT_DOUBLE_EQ(instances[36].weight, 1.0 / 128);
}

TEST(Instances, BatchMatmulKeepsTheBatch) {
  Workload w = parse(R"({"name": "w", "shape_vars": {"T": {"min": 1, "max": 128}},
      "ops": [{"name": "qk", "op": "batch_matmul", "B": 192, "M": "T", "N": "T", "K": 64,
               "transpose_b": true}]})");
  GemmShape g = gemm_shape(w.ops[0], {100});
  EXPECT_EQ(g.batch, 192);
  EXPECT_EQ(g.M, 100);
  EXPECT_EQ(g.N, 100);
  EXPECT_EQ(g.K, 64);
  EXPECT_DOUBLE_EQ(g.flops(), 2.0 * 192 * 100 * 100 * 64);
}

TEST(Instances, ConvGeometryIsAnImplicitGemm) {
  // ResNet-50's stem: 224x224x3, 7x7 filter, stride 2, pad 3 -> 112x112.
  Workload w = parse(R"({"name": "w", "shape_vars": {"N": {"values": [1, 8]}},
      "ops": [{"name": "c", "op": "conv2d", "layout": "NHWC", "N": "N", "H": 224, "W": 224,
               "C": 3, "K": 64, "R": 7, "S": 7, "stride": 2, "pad": 3}]})");
  auto dims = evaluate_dims(w.ops[0], {8});
  EXPECT_EQ(dims.at("P"), 112);
  EXPECT_EQ(dims.at("Q"), 112);
  EXPECT_EQ(dims.at("N"), 8);
  GemmShape g = gemm_shape(w.ops[0], {8});
  EXPECT_EQ(g.batch, 1);
  EXPECT_EQ(g.M, 8 * 112 * 112);
  EXPECT_EQ(g.N, 64);
  EXPECT_EQ(g.K, 7 * 7 * 3);
}

TEST(Instances, ConvAsymmetricStridePadDilation) {
  // H: (10 + 2*1 - 2*(3-1) - 1)/2 + 1 = 4;  W: (9 + 0 - 1*(2-1) - 1)/1 + 1 = 8
  Workload w = parse(R"({"name": "w", "ops": [{"name": "c", "op": "conv2d", "layout": "NHWC",
      "N": 2, "H": 10, "W": 9, "C": 5, "K": 6, "R": 3, "S": 2,
      "stride": [2, 1], "pad": [1, 0], "dilation": [2, 1]}]})");
  auto dims = evaluate_dims(w.ops[0], {});
  EXPECT_EQ(dims.at("P"), 4);
  EXPECT_EQ(dims.at("Q"), 8);
  GemmShape g = gemm_shape(w.ops[0], {});
  EXPECT_EQ(g.M, 2 * 4 * 8);
  EXPECT_EQ(g.N, 6);
  EXPECT_EQ(g.K, 3 * 2 * 5);
}

TEST(Instances, ConvFilterAsLargeAsPaddedInputGivesOnePixel) {
  Workload w = parse(R"({"name": "w", "ops": [{"name": "c", "op": "conv2d", "layout": "NHWC",
      "N": 1, "H": 3, "W": 1, "C": 1, "K": 1, "R": 5, "S": 1, "pad": [1, 0]}]})");
  EXPECT_EQ(evaluate_dims(w.ops[0], {}).at("P"), 1);
}

TEST(Instances, ShapesOutsideTheRangeStillEvaluate) {
  // Packs dispatch any value >= 1, so evaluation is not limited to the declared range...
  Workload w = parse(R"({"name": "w", "shape_vars": {"T": {"min": 1, "max": 8}},
      "ops": [{"name": "a", "op": "dense", "M": "16*T", "N": 1, "K": 1}]})");
  EXPECT_EQ(gemm_shape(w.ops[0], {1000}).M, 16000);
  // ...but overflow is reported, not wrapped.
  try {
    gemm_shape(w.ops[0], {int64_t{1} << 62});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "op a: M = \"16*T\" overflows 64-bit integers at T=4611686018427387904");
  }
  EXPECT_THROW(gemm_shape(w.ops[0], {}), std::invalid_argument);
}

TEST(Instances, ConvEmptyOutputOutsideTheRange) {
  Workload w = parse(R"({"name": "w", "shape_vars": {"H": {"min": 3, "max": 8}},
      "ops": [{"name": "c", "op": "conv2d", "layout": "NHWC", "N": 1, "H": "H", "W": 8,
               "C": 1, "K": 1, "R": 3, "S": 3}]})");
  try {
    gemm_shape(w.ops[0], {2});
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "op c: the convolution output P is empty at H=2");
  }
}

TEST(Instances, HalfAMillionInstancesExpand) {
  // 500 x 1000 instances: the parser visits every one to check it, then they expand.
  Workload w = parse(R"({"name": "w", "shape_vars": {"B": {"min": 1, "max": 500},
      "T": {"min": 1, "max": 1000}},
      "ops": [{"name": "a", "op": "dense", "M": "B*T", "N": 64, "K": "T+1"}]})");
  EXPECT_EQ(expand_instances(w, w.ops[0]).size(), 500000u);
}

TEST(Enums, NamesAndSizes) {
  EXPECT_STREQ(to_string(OpKind::kDense), "dense");
  EXPECT_STREQ(to_string(OpKind::kBatchMatmul), "batch_matmul");
  EXPECT_STREQ(to_string(OpKind::kConv2d), "conv2d");
  EXPECT_STREQ(to_string(DType::kFloat32), "float32");
  EXPECT_STREQ(to_string(DType::kFloat16), "float16");
  EXPECT_STREQ(to_string(DType::kBFloat16), "bfloat16");
  EXPECT_STREQ(to_string(Epilogue::kNone), "none");
  EXPECT_STREQ(to_string(Epilogue::kBiasGelu), "bias_gelu");
  EXPECT_EQ(dtype_bytes(DType::kFloat32), 4);
  EXPECT_EQ(dtype_bytes(DType::kFloat16), 2);
  EXPECT_EQ(dtype_bytes(DType::kBFloat16), 2);
  EXPECT_TRUE(epilogue_has_bias(Epilogue::kBias));
  EXPECT_TRUE(epilogue_has_bias(Epilogue::kBiasRelu));
  EXPECT_TRUE(epilogue_has_bias(Epilogue::kBiasGelu));
  EXPECT_FALSE(epilogue_has_bias(Epilogue::kNone));
  EXPECT_FALSE(epilogue_has_bias(Epilogue::kRelu));
  EXPECT_FALSE(epilogue_has_bias(Epilogue::kGelu));
}

TEST(Describe, DimsAsWritten) {
  Workload w = parse(R"({"name": "w", "shape_vars": {"T": {"min": 1, "max": 8}}, "ops": [
      {"name": "a", "op": "dense", "M": "16*T", "N": 2304, "K": "T + 1"},
      {"name": "b", "op": "batch_matmul", "B": 192, "M": "T", "N": "T", "K": 64,
       "transpose_b": true},
      {"name": "c", "op": "conv2d", "layout": "NHWC", "N": "T", "H": 56, "W": 56, "C": 64,
       "K": 64, "R": 3, "S": 3, "stride": [2, 1], "pad": 1}]})");
  EXPECT_EQ(describe_dims(w.ops[0]), "M=16*T N=2304 K=T+1");
  EXPECT_EQ(describe_dims(w.ops[1]), "B=192 M=T N=T K=64 transpose_b");
  EXPECT_EQ(describe_dims(w.ops[2]), "N=T H=56 W=56 C=64 K=64 R=3 S=3 stride=[2,1] pad=1");
}

}  // namespace
}  // namespace dietcode
