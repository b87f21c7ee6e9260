// The workload parser's contract with users: every malformed workload is rejected with one
// exact line "FILE: JSON.PATH: what is wrong". Each case below is a file a user could write.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "workload/workload.h"

namespace dietcode {
namespace {

// A workload with one variable T in [1, 8] and the given op(s).
std::string with_ops(const std::string& ops) {
  return R"({"name": "w", "shape_vars": {"T": {"min": 1, "max": 8}}, "ops": [)" + ops + "]}";
}
std::string with_vars(const std::string& vars, const std::string& ops) {
  return R"({"name": "w", "shape_vars": {)" + vars + R"(}, "ops": [)" + ops + "]}";
}
std::string dense(const std::string& extra, const std::string& m = "\"16*T\"") {
  return R"({"name": "a", "op": "dense", "M": )" + m + R"(, "N": 64, "K": 32)" + extra + "}";
}
std::string conv(const std::string& extra) {
  return R"({"name": "c", "op": "conv2d", "layout": "NHWC", "N": "T", "H": 8, "W": 8, "C": 4,)"
         R"( "K": 16, "R": 3, "S": 3)" +
         extra + "}";
}
std::string bmm(const std::string& extra) {
  return R"({"name": "b", "op": "batch_matmul", "B": 4, "M": "T", "N": "T", "K": 64)" + extra + "}";
}

struct BadWorkload {
  const char* label;
  std::string text;
  std::string message;
};

std::vector<BadWorkload> bad_workloads() {
  const std::string expected_dim =
      "expected a positive integer or an expression of shape variables, got ";
  return {
      // File level
      {"Empty", "", "w.json: empty file (expected a JSON object)"},
      {"Blank", " \n\t\n", "w.json: empty file (expected a JSON object)"},
      {"TopLevelArray", "[1, 2]", "w.json: expected a JSON object at the top level, got an array"},
      {"TopLevelString", "\"bert\"",
       "w.json: expected a JSON object at the top level, got \"bert\""},
      {"Truncated", "{\"name\": \"w\"",
       "w.json: not valid JSON: parse error at line 1, column 13: syntax error while parsing "
       "object - unexpected end of input; expected '}'"},
      {"TrailingComma", "{\"name\": \"w\",}",
       "w.json: not valid JSON: parse error at line 1, column 14: syntax error while parsing "
       "object key - unexpected '}'; expected string literal"},
      {"BinaryJunk", std::string("\x7f\x00\x01", 3),
       "w.json: not valid JSON: parse error at line 1, column 1: syntax error while parsing "
       "value - invalid literal; last read: '\\x7f'"},
      {"NumberOverflow", with_ops(dense("", "1e400")),
       "w.json: not valid JSON: number overflow parsing '1e400'"},
      {"DuplicateKey", R"({"name": "w", "name": "v"})", "w.json: duplicate key \"name\""},
      {"DuplicateKeyInOp", with_ops(R"({"name": "a", "op": "dense", "M": 1, "M": 2})"),
       "w.json: ops[0]: duplicate key \"M\""},
      {"DeepNesting", std::string(100000, '['), "w.json: JSON nested more than 64 levels deep"},
      {"DeepObjects", R"({"name": )" + std::string(200, '[') + "1" + std::string(200, ']') + "}",
       "w.json: JSON nested more than 64 levels deep"},
      // Top-level keys
      {"UnknownTopKey", R"({"nme": "w"})", "w.json: unknown key \"nme\" (did you mean \"name\"?)"},
      {"UnknownTopKeyNoHint", R"({"name": "w", "description": "bert"})",
       "w.json: unknown key \"description\""},
      {"MissingName", R"({"ops": []})", "w.json: missing key \"name\""},
      {"NameNotString", R"({"name": 3})", "w.json: name: expected a string, got 3"},
      {"NameWithDash", R"({"name": "bert-dense"})",
       "w.json: name: \"bert-dense\" is not a valid workload name: use up to 64 letters, "
       "digits and '_', not starting with a digit"},
      {"NameTooLong", R"({"name": ")" + std::string(65, 'a') + "\"}",
       "w.json: name: \"" + std::string(64, 'a') +
           "...\" is not a valid workload name: use up to 64 letters, digits and '_', not "
           "starting with a digit"},
      {"MissingOps", R"({"name": "w"})", "w.json: missing key \"ops\""},
      {"OpsNotList", R"({"name": "w", "ops": {}})",
       "w.json: ops: expected a list of ops, got an object"},
      {"OpsEmpty", R"({"name": "w", "ops": []})", "w.json: ops: expected at least one op"},
      // Shape variables
      {"VarsNotObject", R"({"name": "w", "shape_vars": [], "ops": []})",
       "w.json: shape_vars: expected an object, got an array"},
      {"VarBadName", with_vars(R"("T-1": {"min": 1, "max": 2})", dense("", "1")),
       "w.json: shape_vars: \"T-1\" is not a valid shape variable name: use up to 64 letters, "
       "digits and '_', not starting with a digit"},
      {"VarKeyword", with_vars(R"("int": {"min": 1, "max": 2})", dense("", "1")),
       "w.json: shape_vars: \"int\" cannot name a shape variable: it is reserved in generated C "
       "code"},
      {"VarStream", with_vars(R"("stream": {"min": 1, "max": 2})", dense("", "1")),
       "w.json: shape_vars: \"stream\" cannot name a shape variable: it is reserved in "
       "generated C code"},
      {"VarNotObject", with_vars(R"("T": 8)", dense("")),
       "w.json: shape_vars.T: expected an object, got 8"},
      {"VarUnknownKey", with_vars(R"("T": {"min": 1, "mx": 8})", dense("")),
       "w.json: shape_vars.T: unknown key \"mx\" (did you mean \"max\"?)"},
      {"VarValuesAndRange", with_vars(R"("T": {"min": 1, "values": [1]})", dense("")),
       "w.json: shape_vars.T: give either \"values\" or \"min\"/\"max\" (with \"step\"), not "
       "both"},
      {"VarNoRange", with_vars(R"("T": {})", dense("")),
       "w.json: shape_vars.T: expected \"min\" and \"max\", or \"values\""},
      {"VarMissingMax", with_vars(R"("T": {"min": 1})", dense("")),
       "w.json: shape_vars.T: missing key \"max\""},
      {"VarMinZero", with_vars(R"("T": {"min": 0, "max": 8})", dense("")),
       "w.json: shape_vars.T.min: expected a positive integer, got 0"},
      {"VarMinFloat", with_vars(R"("T": {"min": 1.5, "max": 8})", dense("")),
       "w.json: shape_vars.T.min: expected a positive integer, got 1.5"},
      {"VarMaxString", with_vars(R"("T": {"min": 1, "max": "8"})", dense("")),
       "w.json: shape_vars.T.max: expected a positive integer, got \"8\""},
      {"VarMaxBelowMin", with_vars(R"("T": {"min": 16, "max": 8})", dense("")),
       "w.json: shape_vars.T.max: must be at least min (16), got 8"},
      {"VarStepNotDividing", with_vars(R"("T": {"min": 1, "max": 128, "step": 8})", dense("")),
       "w.json: shape_vars.T.step: 8 does not divide max - min = 127, so the range would stop "
       "at 121"},
      {"VarTooManyValues", with_vars(R"("T": {"min": 1, "max": 2000000})", dense("")),
       "w.json: shape_vars.T: 2000000 values; at most 1000000 are supported"},
      {"VarValuesNotList", with_vars(R"("T": {"values": "1,2"})", dense("")),
       "w.json: shape_vars.T.values: expected a list of positive integers, got \"1,2\""},
      {"VarValuesEmpty", with_vars(R"("T": {"values": []})", dense("")),
       "w.json: shape_vars.T.values: expected at least one value"},
      {"VarValueNegative", with_vars(R"("T": {"values": [1, -2]})", dense("")),
       "w.json: shape_vars.T.values[1]: expected a positive integer, got -2"},
      {"VarValueRepeated", with_vars(R"("T": {"values": [4, 1, 4]})", dense("")),
       "w.json: shape_vars.T.values[2]: 4 appears twice"},
      {"WeightsTypo", with_vars(R"("T": {"min": 1, "max": 2, "weights": "unifrom"})", dense("")),
       "w.json: shape_vars.T.weights: expected \"uniform\", a list or an object, got "
       "\"unifrom\" (did you mean \"uniform\"?)"},
      {"WeightsNumber", with_vars(R"("T": {"min": 1, "max": 2, "weights": 3})", dense("")),
       "w.json: shape_vars.T.weights: expected \"uniform\", a list or an object, got 3"},
      {"WeightsWrongLength",
       with_vars(R"("T": {"min": 1, "max": 4, "weights": [1, 2, 3]})", dense("")),
       "w.json: shape_vars.T.weights: expected 4 weights (one per value), got 3"},
      {"WeightNegative", with_vars(R"("T": {"min": 1, "max": 2, "weights": [-1, 1]})", dense("")),
       "w.json: shape_vars.T.weights[0]: expected a non-negative number, got -1"},
      {"WeightsAllZero", with_vars(R"("T": {"min": 1, "max": 2, "weights": [0, 0.0]})", dense("")),
       "w.json: shape_vars.T.weights: all weights are zero"},
      {"WeightsInfinite",
       with_vars(R"("T": {"min": 1, "max": 2, "weights": [1e308, 1e308]})", dense("")),
       "w.json: shape_vars.T.weights: the weights add up to infinity"},
      {"WeightsObjectUnknownValue",
       with_vars(R"("T": {"min": 1, "max": 8, "weights": {"4": 1, "500": 2}})", dense("")),
       "w.json: shape_vars.T.weights: \"500\" is not one of the values of T"},
      {"WeightsObjectBadWeight",
       with_vars(R"("T": {"min": 1, "max": 8, "weights": {"4": "high"}})", dense("")),
       "w.json: shape_vars.T.weights[\"4\"]: expected a non-negative number, got \"high\""},
      // Ops: common keys
      {"OpNotObject", with_ops("3"), "w.json: ops[0]: expected an object, got 3"},
      {"OpUnknownKey", with_ops(dense(R"(, "epilog": "bias")")),
       "w.json: ops[0]: unknown key \"epilog\" (did you mean \"epilogue\"?)"},
      {"OpUnknownKeyCase", with_ops(R"({"name": "a", "op": "dense", "M": 1, "N": 1, "k": 1})"),
       "w.json: ops[0]: unknown key \"k\" (did you mean \"K\"?)"},
      {"OpUnknownKeyNoHint", with_ops(dense(R"(, "Z": 1)")), "w.json: ops[0]: unknown key \"Z\""},
      {"OpMissingName", with_ops(R"({"op": "dense"})"), "w.json: ops[0]: missing key \"name\""},
      {"OpBadName", with_ops(R"({"name": "1a", "op": "dense"})"),
       "w.json: ops[0].name: \"1a\" is not a valid op name: use up to 64 letters, digits and "
       "'_', not starting with a digit"},
      {"OpDuplicateName", with_ops(dense("") + ", " + dense("")),
       "w.json: ops[1].name: \"a\" is already the name of ops[0]"},
      {"OpMissingKind", with_ops(R"({"name": "a"})"), "w.json: ops[0]: missing key \"op\""},
      {"OpUnknownKind", with_ops(R"({"name": "a", "op": "dens"})"),
       "w.json: ops[0].op: unknown op \"dens\" (did you mean \"dense\"?); expected dense, "
       "batch_matmul or conv2d"},
      {"OpKindNotString", with_ops(R"({"name": "a", "op": ["dense"]})"),
       "w.json: ops[0].op: expected a string, got an array"},
      {"OpKeyOfOtherKind", with_ops(dense(R"(, "transpose_a": true)")),
       "w.json: ops[0]: key \"transpose_a\" does not apply to a dense op"},
      {"DenseUnknownWeightLayout", with_ops(dense(R"(, "weight_layout": "kn")")),
       "w.json: ops[0].weight_layout: unknown weight layout \"kn\" (did you mean \"KN\"?); "
       "expected NK or KN"},
      {"WeightLayoutOnBatchMatmul", with_ops(bmm(R"(, "weight_layout": "KN")")),
       "w.json: ops[0]: key \"weight_layout\" does not apply to a batch_matmul op"},
      {"OpUnknownDtype", with_ops(dense(R"(, "dtype": "fp16")")),
       "w.json: ops[0].dtype: unknown dtype \"fp16\"; expected float32, float16 or bfloat16"},
      {"OpUnknownEpilogue", with_ops(dense(R"(, "epilogue": "bias_gelu2")")),
       "w.json: ops[0].epilogue: unknown epilogue \"bias_gelu2\" (did you mean \"bias_gelu\"?); "
       "expected none, bias, relu, bias_relu, gelu or bias_gelu"},
      {"OpWeightZero", with_ops(dense(R"(, "weight": 0)")),
       "w.json: ops[0].weight: expected a positive number, got 0"},
      {"OpWeightString", with_ops(dense(R"(, "weight": "1")")),
       "w.json: ops[0].weight: expected a positive number, got \"1\""},
      {"OpWeightHuge", with_ops(dense(R"(, "weight": 10000000)")),
       "w.json: ops[0].weight: must be at most 1000000, got 10000000"},
      // Dimensions
      {"DimMissing", with_ops(R"({"name": "a", "op": "dense", "M": 1, "N": 1})"),
       "w.json: ops[0]: missing key \"K\""},
      {"DimZero", with_ops(dense("", "0")), "w.json: ops[0].M: " + expected_dim + "0"},
      {"DimFloat", with_ops(dense("", "1.5")), "w.json: ops[0].M: " + expected_dim + "1.5"},
      {"DimHugeFloat", with_ops(dense("", "1e30")), "w.json: ops[0].M: " + expected_dim + "1e+30"},
      {"DimBool", with_ops(dense("", "true")), "w.json: ops[0].M: " + expected_dim + "true"},
      {"DimNull", with_ops(dense("", "null")), "w.json: ops[0].M: " + expected_dim + "null"},
      {"DimList", with_ops(dense("", "[16]")), "w.json: ops[0].M: " + expected_dim + "an array"},
      {"DimPast64Bits", with_ops(dense("", "99999999999999999999")),
       "w.json: ops[0].M: integer 99999999999999999999 does not fit in 64 bits"},
      {"DimPastInt64", with_ops(dense("", "18446744073709551615")),
       "w.json: ops[0].M: must be at most 9223372036854775807, got 18446744073709551615"},
      {"ExprEmpty", with_ops(dense("", "\"\"")),
       "w.json: ops[0].M: invalid expression \"\": expected a number or a shape variable at "
       "column 1"},
      {"ExprDoubleStar", with_ops(dense("", "\"16**T\"")),
       "w.json: ops[0].M: invalid expression \"16**T\": expected a number or a shape variable "
       "at column 4"},
      {"ExprParentheses", with_ops(dense("", "\"2*(T+1)\"")),
       "w.json: ops[0].M: invalid expression \"2*(T+1)\": parentheses are not supported at "
       "column 3"},
      {"ExprJuxtaposed", with_ops(dense("", "\"2T\"")),
       "w.json: ops[0].M: invalid expression \"2T\": expected '+', '-' or '*' at column 2"},
      {"ExprThreeVars",
       with_vars(R"("A": {"values": [1]}, "B": {"values": [1]}, "C": {"values": [1]})",
                 dense("", "\"A*B*C\"")),
       "w.json: ops[0].M: invalid expression \"A*B*C\": a term may multiply at most two shape "
       "variables"},
      {"ExprHugeNumber", with_ops(dense("", "\"99999999999999999999*T\"")),
       "w.json: ops[0].M: invalid expression \"99999999999999999999*T\": number "
       "99999999999999999999 does not fit in 64 bits"},
      {"ExprUndeclaredVar", with_ops(dense("", "\"S*T\"")),
       "w.json: ops[0].M: unknown shape variable \"S\" (declared: T)"},
      {"ExprNoVarsDeclared", R"({"name": "w", "ops": [)" + dense("") + "]}",
       "w.json: ops[0].M: unknown shape variable \"T\" (no shape variables are declared)"},
      {"ExprVarTypo", with_vars(R"("seq_len": {"min": 1, "max": 8})", dense("", "\"seqlen\"")),
       "w.json: ops[0].M: unknown shape variable \"seqlen\" (did you mean \"seq_len\"?)"},
      {"ExprBelowOne", with_ops(dense("", "\"T-2\"")),
       "w.json: ops[0].M: \"T - 2\" is -1 at T=1; a dimension must be at least 1"},
      {"ExprConstantZero", with_ops(dense("", "\"3-3\"")),
       "w.json: ops[0].M: \"0\" is 0; a dimension must be at least 1"},
      {"ExprNegativeSlope", with_vars(R"("T": {"min": 1, "max": 10})", dense("", "\"10-T\"")),
       "w.json: ops[0].M: \"-T + 10\" is 0 at T=10; a dimension must be at least 1"},
      {"ExprOverflow",
       with_vars(R"("T": {"values": [1, 4000000000]})", dense("", "\"9999999999*T*T\"")),
       "w.json: ops[0].M: \"9999999999*T*T\" overflows 64-bit integers at T=4000000000"},
      {"TensorTooLarge", with_vars(R"("T": {"values": [1, 2000000]})", dense("", "\"T*T\"")),
       "w.json: ops[0]: tensor X [4000000000000, 32] has more than 2^40 elements at T=2000000"},
      {"TooManyInstances",
       with_vars(R"("A": {"min": 1, "max": 2000}, "B": {"min": 1, "max": 2000})",
                 dense("", "\"A*B\"")),
       "w.json: ops[0]: more than 1000000 instances (the cross product of A and B); at most "
       "1000000 are supported"},
      // batch_matmul
      {"BmmTransposeNotBool", with_ops(bmm(R"(, "transpose_a": "yes")")),
       "w.json: ops[0].transpose_a: expected true or false, got \"yes\""},
      {"BmmBiasEpilogue", with_ops(bmm(R"(, "epilogue": "bias_relu")")),
       "w.json: ops[0].epilogue: a batch_matmul op has no bias argument; use none, relu or "
       "gelu"},
      {"BmmVarNamedLikeArg",
       with_vars(R"("B": {"min": 1, "max": 4})",
                 R"({"name": "b", "op": "batch_matmul", "B": "B", "M": 8, "N": 8, "K": 8})"),
       "w.json: ops[0]: shape variable \"B\" has the same name as the op's argument B; rename "
       "the variable"},
      // conv2d
      {"ConvMissingLayout",
       with_ops(R"({"name": "c", "op": "conv2d", "N": 1, "H": 8, "W": 8, "C": 4, "K": 16,)"
                R"( "R": 3, "S": 3})"),
       "w.json: ops[0]: missing key \"layout\" (only \"NHWC\" is supported)"},
      {"ConvLayoutNCHW",
       with_ops(R"({"name": "c", "op": "conv2d", "layout": "NCHW", "N": 1, "H": 8, "W": 8,)"
                R"( "C": 4, "K": 16, "R": 3, "S": 3})"),
       "w.json: ops[0].layout: only \"NHWC\" is supported, got \"NCHW\""},
      {"ConvKeyOfOtherKind", with_ops(conv(R"(, "M": 4)")),
       "w.json: ops[0]: key \"M\" does not apply to a conv2d op"},
      {"ConvStrideZero", with_ops(conv(R"(, "stride": 0)")),
       "w.json: ops[0].stride: expected a positive integer, got 0"},
      {"ConvStrideHuge", with_ops(conv(R"(, "stride": 100000)")),
       "w.json: ops[0].stride: must be at most 65536, got 100000"},
      {"ConvStrideThree", with_ops(conv(R"(, "stride": [1, 2, 3])")),
       "w.json: ops[0].stride: expected a list [h, w] of two integers, got 3 elements"},
      {"ConvPadNegative", with_ops(conv(R"(, "pad": [0, -1])")),
       "w.json: ops[0].pad[1]: expected a non-negative integer, got -1"},
      {"ConvDilationString", with_ops(conv(R"(, "dilation": "2")")),
       "w.json: ops[0].dilation: expected an integer or a list [h, w], got \"2\""},
      {"ConvOutputEmpty", with_ops(conv(R"(, "dilation": [1, 4])")),
       "w.json: ops[0]: output width is empty at T=1: the filter (S=3, dilation 4) is larger "
       "than the padded input (W=8, pad 0)"},
  };
}

// Failures print the case's name and text rather than the struct's bytes.
void PrintTo(const BadWorkload& c, std::ostream* os) { *os << c.label << ": " << c.text; }

class BadWorkloadTest : public testing::TestWithParam<BadWorkload> {};

TEST_P(BadWorkloadTest, RejectedWithExactMessage) {
  const BadWorkload& c = GetParam();
  try {
    parse_workload(c.text, "w.json");
    FAIL() << "accepted: " << c.text;
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), c.message);
  }
}

INSTANTIATE_TEST_SUITE_P(Workload, BadWorkloadTest, testing::ValuesIn(bad_workloads()),
                         [](const testing::TestParamInfo<BadWorkload>& info) {
                           return std::string(info.param.label);
                         });

TEST(WorkloadParse, SpecExampleErrorMessage) {
  // SPEC §3 quotes this message verbatim.
  std::string text = with_ops(dense("") + ", " +
                              R"({"name": "b", "op": "dense", "M": 1, "N": 1, "K": 1}, )"
                              R"({"name": "c", "op": "dense", "M": "16*T", "N": 768, "K": -768})");
  try {
    parse_workload(text, "workload.json");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(),
                 "workload.json: ops[2].K: expected a positive integer or an expression of "
                 "shape variables, got -768");
  }
}

TEST(WorkloadParse, EveryMessageIsOneLine) {
  for (const auto& c : bad_workloads()) {
    try {
      parse_workload(c.text, "w.json");
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << c.label;
    }
  }
}

TEST(WorkloadParse, MissingFileNamesTheFileAndTheReason) {
  try {
    load_workload("/nonexistent/w.json");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "/nonexistent/w.json: cannot read: No such file or directory");
  }
}

TEST(WorkloadParse, DirectoryIsNotReadable) {
  try {
    load_workload("/");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "/: cannot read: Is a directory");
  }
}

}  // namespace
}  // namespace dietcode
