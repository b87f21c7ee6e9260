// Dimension expressions: what parses, how it is kept (canonical sums), how it evaluates and
// prints, and the exact messages for what does not parse.
#include <gtest/gtest.h>

#include <climits>

#include "common/error.h"
#include "workload/expr.h"

namespace dietcode {
namespace {

std::string parse_error(const std::string& text) {
  try {
    Expr::parse(text);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(parsed)";
}

TEST(Expr, IntegerIsConstant) {
  Expr e = Expr::parse("768");
  EXPECT_TRUE(e.is_constant());
  EXPECT_EQ(e.constant_value(), 768);
  EXPECT_TRUE(e.variables().empty());
  EXPECT_EQ(e.to_string(), "768");
  EXPECT_EQ(e.evaluate({}), 768);
}

TEST(Expr, ConstantFactory) {
  EXPECT_EQ(Expr::constant(5).to_string(), "5");
  EXPECT_EQ(Expr::constant(0).to_string(), "0");
  EXPECT_EQ(Expr::constant(0).constant_value(), 0);
  EXPECT_EQ(Expr::constant(-3).evaluate({}), -3);
}

TEST(Expr, ScaledVariable) {
  Expr e = Expr::parse("16*T");
  EXPECT_FALSE(e.is_constant());
  EXPECT_EQ(e.variables(), std::vector<std::string>{"T"});
  EXPECT_EQ(e.evaluate({{"T", 3}}), 48);
  EXPECT_EQ(e.to_string(), "16*T");
  ASSERT_EQ(e.terms().size(), 1u);
  EXPECT_EQ(e.terms()[0].coeff, 16);
}

TEST(Expr, SpacesTabsAndCoefficientOrder) {
  EXPECT_EQ(Expr::parse(" T * 16 ").to_string(), "16*T");
  EXPECT_EQ(Expr::parse("T\t+ 3").to_string(), "T + 3");
  EXPECT_EQ(Expr::parse("2 * 8 * T").to_string(), "16*T");
}

TEST(Expr, ProductOfTwoVariablesIsSorted) {
  Expr e = Expr::parse("T*B");
  EXPECT_EQ(e.to_string(), "B*T");
  EXPECT_EQ(e.variables(), (std::vector<std::string>{"B", "T"}));
  EXPECT_EQ(e.evaluate({{"B", 4}, {"T", 7}}), 28);
  ASSERT_EQ(e.terms().size(), 1u);
  EXPECT_EQ(e.terms()[0].vars, (std::vector<std::string>{"B", "T"}));
}

TEST(Expr, CoefficientsMultiplyAndLikeTermsMerge) {
  Expr e = Expr::parse("2*B*T+1");
  EXPECT_EQ(e.to_string(), "2*B*T + 1");
  EXPECT_EQ(e.evaluate({{"B", 2}, {"T", 5}}), 21);
  EXPECT_EQ(Expr::parse("T + T + 2*T").to_string(), "4*T");
  EXPECT_EQ(Expr::parse("B*T + T*B").to_string(), "2*B*T");
  EXPECT_EQ(Expr::parse("1 + T + 2").to_string(), "T + 3");
}

TEST(Expr, SubtractionAndCancellation) {
  EXPECT_EQ(Expr::parse("T-1").to_string(), "T - 1");
  EXPECT_EQ(Expr::parse("T-1").evaluate({{"T", 1}}), 0);
  EXPECT_EQ(Expr::parse("-2*T+5").to_string(), "-2*T + 5");
  EXPECT_EQ(Expr::parse("-2*T+5").evaluate({{"T", 4}}), -3);
  Expr zero = Expr::parse("T - T");
  EXPECT_TRUE(zero.is_constant());
  EXPECT_EQ(zero.constant_value(), 0);
  EXPECT_EQ(zero.to_string(), "0");
}

TEST(Expr, SameVariableTwiceIsASquare) {
  Expr e = Expr::parse("T*T");
  EXPECT_EQ(e.to_string(), "T*T");
  EXPECT_EQ(e.variables(), std::vector<std::string>{"T"});
  EXPECT_EQ(e.evaluate({{"T", 9}}), 81);
}

TEST(Expr, EqualExpressionsHaveEqualTerms) {
  Expr a = Expr::parse("1 + 2*T*B + B");
  Expr b = Expr::parse("B + B*T*2 + 1");
  EXPECT_EQ(a.to_string(), b.to_string());
  EXPECT_EQ(a.to_string(), "B + 2*B*T + 1");
}

TEST(Expr, ToCCastsEveryTermAndRenames) {
  EXPECT_EQ(Expr::parse("16*T").to_c(), "((int64_t)16*T)");
  EXPECT_EQ(Expr::parse("2*B*T - 1").to_c({{"T", "shape[1]"}}),
            "((int64_t)2*B*shape[1] - (int64_t)1)");
  EXPECT_EQ(Expr::parse("-T").to_c(), "(-(int64_t)1*T)");
  EXPECT_EQ(Expr::constant(0).to_c(), "((int64_t)0)");
}

TEST(Expr, EvaluateOverflowIsAUserError) {
  Expr e = Expr::parse("4611686018427387904*T");
  EXPECT_EQ(e.evaluate({{"T", 1}}), 4611686018427387904LL);
  try {
    e.evaluate({{"T", 2}});
    FAIL();
  } catch (const UserError& err) {
    EXPECT_STREQ(err.what(), "\"4611686018427387904*T\" overflows 64-bit integers");
  }
  // The sum overflowing (each product fitting) is caught too.
  EXPECT_THROW(Expr::parse("T + 9223372036854775807").evaluate({{"T", 1}}), UserError);
}

TEST(Expr, EvaluateWithoutAValueIsOurBug) {
  EXPECT_THROW(Expr::parse("T").evaluate({}), std::invalid_argument);
}

TEST(Expr, ConstantValueOfNonConstantIsOurBug) {
  EXPECT_THROW(Expr::parse("T").constant_value(), std::logic_error);
}

TEST(Expr, LargestIntegersParse) {
  EXPECT_EQ(Expr::parse("9223372036854775807").constant_value(), LLONG_MAX);
  EXPECT_EQ(Expr::parse("-9223372036854775807").constant_value(), -LLONG_MAX);
}

TEST(Expr, Errors) {
  EXPECT_EQ(parse_error(""),
            "invalid expression \"\": expected a number or a shape variable at column 1");
  EXPECT_EQ(parse_error("   "),
            "invalid expression \"   \": expected a number or a shape variable at column 4");
  EXPECT_EQ(parse_error("16**T"),
            "invalid expression \"16**T\": expected a number or a shape variable at column 4");
  EXPECT_EQ(parse_error("T+"),
            "invalid expression \"T+\": expected a number or a shape variable at column 3");
  EXPECT_EQ(parse_error("--T"),
            "invalid expression \"--T\": expected a number or a shape variable at column 2");
  EXPECT_EQ(parse_error("2T"), "invalid expression \"2T\": expected '+', '-' or '*' at column 2");
  EXPECT_EQ(parse_error("T/2"), "invalid expression \"T/2\": expected '+', '-' or '*' at column 2");
  EXPECT_EQ(parse_error("1.5*T"),
            "invalid expression \"1.5*T\": expected '+', '-' or '*' at column 2");
  EXPECT_EQ(parse_error("(T)"),
            "invalid expression \"(T)\": parentheses are not supported at column 1");
  EXPECT_EQ(parse_error("T)"),
            "invalid expression \"T)\": parentheses are not supported at column 2");
  EXPECT_EQ(parse_error("A*B*C"),
            "invalid expression \"A*B*C\": a term may multiply at most two shape variables");
  EXPECT_EQ(parse_error("99999999999999999999"),
            "invalid expression \"99999999999999999999\": number 99999999999999999999 does not "
            "fit in 64 bits");
  EXPECT_EQ(parse_error("4294967296*4294967296*T"),
            "invalid expression \"4294967296*4294967296*T\": its coefficients overflow 64-bit "
            "integers");
  EXPECT_EQ(parse_error("9223372036854775807*T + 9223372036854775807*T"),
            "invalid expression \"9223372036854775807*T + 9223372036854775807*T\": its "
            "coefficients overflow 64-bit integers");
  // Control characters and non-ASCII stay escaped on one line.
  EXPECT_EQ(parse_error("T\n1"),
            "invalid expression \"T\\n1\": expected '+', '-' or '*' at column 2");
  EXPECT_EQ(parse_error(std::string("T\0", 2)),
            "invalid expression \"T\\u0000\": expected '+', '-' or '*' at column 2");
  EXPECT_EQ(parse_error("\xC3\xA9"),
            "invalid expression \"\xC3\xA9\": expected a number or a shape variable at column 1");
}

TEST(Expr, LongTextIsShortenedInMessages) {
  std::string text = "T+" + std::string(200, '1') + "+";
  std::string message = parse_error(text);
  EXPECT_LT(message.size(), 160u);
  EXPECT_NE(message.find("...\""), std::string::npos) << message;
}

}  // namespace
}  // namespace dietcode
