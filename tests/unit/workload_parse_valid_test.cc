// Workloads the parser accepts, and what it makes of them: defaults, conv pairs, file order
// of variables, names that look like dimensions, a UTF-8 byte-order mark, dense weight layouts.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "workload/describe.h"
#include "workload/op_layout.h"
#include "workload/workload.h"

namespace dietcode {
namespace {

TEST(WorkloadParse, SpecExampleParses) {
  Workload w = parse_workload(R"({
    "name": "bert_dense",
    "shape_vars": {"T": {"min": 1, "max": 128, "weights": "uniform"}},
    "ops": [
      {"name": "qkv", "op": "dense", "dtype": "float32", "M": "16*T", "N": 2304, "K": 768},
      {"name": "fc1", "op": "dense", "dtype": "float32", "M": "16*T", "N": 3072, "K": 768,
       "epilogue": "bias_gelu", "weight": 1.0}
    ]})",
                              "w.json");
  EXPECT_EQ(w.name, "bert_dense");
  EXPECT_EQ(w.source, "w.json");
  ASSERT_EQ(w.vars.size(), 1u);
  EXPECT_EQ(w.vars[0].values.size(), 128u);
  EXPECT_EQ(w.vars[0].min(), 1);
  EXPECT_EQ(w.vars[0].max(), 128);
  ASSERT_EQ(w.ops.size(), 2u);
  EXPECT_EQ(w.ops[0].dims.at("M").to_string(), "16*T");
  EXPECT_EQ(w.ops[0].dims.at("N").constant_value(), 2304);
  EXPECT_EQ(w.ops[0].vars, std::vector<std::string>{"T"});
  EXPECT_EQ(w.ops[1].epilogue, Epilogue::kBiasGelu);
  EXPECT_EQ(w.ops[1].arg_names(), (std::vector<std::string>{"X", "W", "bias", "Y"}));
  EXPECT_EQ(w.find_op("fc1"), &w.ops[1]);
  EXPECT_EQ(w.find_op("fc2"), nullptr);
  EXPECT_EQ(w.find_var("T"), &w.vars[0]);
  EXPECT_EQ(w.find_var("B"), nullptr);
}

TEST(WorkloadParse, Defaults) {
  Workload w = parse_workload(
      R"({"name": "s", "ops": [{"name": "a", "op": "dense", "M": 2, "N": 3, "K": 4},
          {"name": "c", "op": "conv2d", "layout": "NHWC", "N": 1, "H": 8, "W": 8, "C": 4,
           "K": 16, "R": 3, "S": 3}]})",
      "w.json");
  EXPECT_TRUE(w.vars.empty());
  const OpSpec& a = w.ops[0];
  EXPECT_EQ(a.dtype, DType::kFloat32);
  EXPECT_EQ(a.epilogue, Epilogue::kNone);
  EXPECT_EQ(a.weight, 1.0);
  EXPECT_TRUE(a.vars.empty());
  EXPECT_EQ(a.weight_layout, WeightLayout::kNK);
  EXPECT_TRUE(a.b_k_contiguous());
  const OpSpec& c = w.ops[1];
  EXPECT_EQ(c.stride[0], 1);
  EXPECT_EQ(c.stride[1], 1);
  EXPECT_EQ(c.pad[0], 0);
  EXPECT_EQ(c.dilation[1], 1);
  EXPECT_EQ(c.arg_names(), (std::vector<std::string>{"X", "Wt", "Y"}));
}

TEST(WorkloadParse, DenseWeightLayoutKN) {
  Workload w = parse_workload(
      R"({"name": "s", "ops": [{"name": "a", "op": "dense", "M": 2, "N": 3, "K": 4,
          "weight_layout": "KN", "epilogue": "bias"},
          {"name": "b", "op": "dense", "M": 2, "N": 3, "K": 4, "weight_layout": "NK"}]})",
      "w.json");
  const OpSpec& a = w.ops[0];
  EXPECT_EQ(a.weight_layout, WeightLayout::kKN);
  EXPECT_FALSE(a.b_k_contiguous());
  EXPECT_EQ(describe_dims(a), "M=2 N=3 K=4 weight_layout=KN");
  EXPECT_EQ(a.arg_names(), (std::vector<std::string>{"X", "W", "bias", "Y"}));
  const std::vector<TensorLayout> tensors = tensor_layouts(a);
  EXPECT_EQ(tensors[1].dims, (std::vector<std::string>{"K", "N"}));
  EXPECT_EQ(w.ops[1].weight_layout, WeightLayout::kNK);
  EXPECT_EQ(describe_dims(w.ops[1]), "M=2 N=3 K=4");
  EXPECT_EQ(tensor_layouts(w.ops[1])[1].dims, (std::vector<std::string>{"N", "K"}));
}

TEST(WorkloadParse, ConvPairsAndTransposes) {
  Workload w = parse_workload(
      R"({"name": "s", "shape_vars": {"N": {"values": [1, 2]}}, "ops": [
          {"name": "c", "op": "conv2d", "layout": "NHWC", "N": "N", "H": 9, "W": 9, "C": 4,
           "K": 16, "R": 3, "S": 3, "stride": [2, 1], "pad": 1, "dilation": [1, 2],
           "epilogue": "bias_relu", "dtype": "float16"},
          {"name": "b", "op": "batch_matmul", "B": 2, "M": 3, "N": 4, "K": 5,
           "transpose_a": true, "dtype": "bfloat16", "epilogue": "gelu"}]})",
      "w.json");
  const OpSpec& c = w.ops[0];
  EXPECT_EQ(c.kind, OpKind::kConv2d);
  EXPECT_EQ(c.dtype, DType::kFloat16);
  EXPECT_EQ(c.stride[0], 2);
  EXPECT_EQ(c.stride[1], 1);
  EXPECT_EQ(c.pad[0], 1);
  EXPECT_EQ(c.pad[1], 1);
  EXPECT_EQ(c.dilation[0], 1);
  EXPECT_EQ(c.dilation[1], 2);
  EXPECT_EQ(c.arg_names(), (std::vector<std::string>{"X", "Wt", "bias", "Y"}));
  const OpSpec& b = w.ops[1];
  EXPECT_TRUE(b.transpose_a);
  EXPECT_FALSE(b.transpose_b);
  EXPECT_EQ(b.dtype, DType::kBFloat16);
  EXPECT_EQ(b.arg_names(), (std::vector<std::string>{"A", "B", "Y"}));
}

TEST(WorkloadParse, VarsKeepFileOrderAndUnusedVarsAreAllowed) {
  Workload w = parse_workload(
      R"({"name": "s", "shape_vars": {"T": {"min": 1, "max": 2}, "B": {"values": [1, 2]},
          "unused": {"values": [3]}},
          "ops": [{"name": "a", "op": "dense", "M": "B*T", "N": 3, "K": "T+1"}]})",
      "w.json");
  ASSERT_EQ(w.vars.size(), 3u);
  EXPECT_EQ(w.vars[0].name, "T");
  EXPECT_EQ(w.vars[1].name, "B");
  EXPECT_EQ(w.vars[2].name, "unused");
  // An op's variables follow the workload's order, not the order they appear in its dims.
  EXPECT_EQ(w.ops[0].vars, (std::vector<std::string>{"T", "B"}));
}

TEST(WorkloadParse, NamesThatLookLikeDimsAreFine) {
  // A conv's dynamic batch is naturally called N, and an identifier may be 64 characters.
  std::string long_name(64, 'x');
  Workload w = parse_workload(R"({"name": ")" + long_name + R"(",
      "shape_vars": {"N": {"min": 1, "max": 4}}, "ops": [
        {"name": "c", "op": "conv2d", "layout": "NHWC", "N": "N", "H": 8, "W": 8, "C": 4,
         "K": 16, "R": 1, "S": 1}]})",
                              "w.json");
  EXPECT_EQ(w.name, long_name);
  EXPECT_EQ(w.ops[0].vars, std::vector<std::string>{"N"});
}

TEST(WorkloadParse, Utf8BomAndUnicodeStringsAreHandled) {
  Workload w = parse_workload(
      "\xEF\xBB\xBF{\"name\": \"w\", \"ops\": [{\"name\": \"a\", \"op\": "
      "\"dense\", \"M\": 1, \"N\": 1, \"K\": 1}]}",
      "w.json");
  EXPECT_EQ(w.name, "w");
  try {
    parse_workload(R"({"name": "w\u00e9"})", "w.json");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(),
                 "w.json: name: \"w\xC3\xA9\" is not a valid workload name: use up to 64 "
                 "letters, digits and '_', not starting with a digit");
  }
}

}  // namespace
}  // namespace dietcode
