// Dimension expressions. The grammar is deliberately tiny — sums of terms, each term a product
// of integer factors and at most two shape variables — because that is what tensor shapes
// need (16*T, T+1, B*T) and it keeps every expression a sum the code generators can emit as
// C and the space can bound without a symbolic algebra.
//
//   expr   := ['-'] term (('+' | '-') term)*
//   term   := factor ('*' factor)*
//   factor := integer | identifier
#include "workload/expr.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "common/error.h"
#include "workload/checked_math.h"
#include "workload/names.h"

namespace dietcode {

namespace {

// A runaway number is cut like quote() cuts text, so the message stays one short line.
std::string shortened(const std::string& digits) {
  return digits.size() > 32 ? digits.substr(0, 32) + "..." : digits;
}

class ExprParser {
 public:
  explicit ExprParser(const std::string& text) : text_(text) {}

  std::vector<ExprTerm> parse() {
    std::vector<ExprTerm> terms;
    skip_spaces();
    int64_t sign = 1;
    if (peek() == '-') {
      sign = -1;
      ++pos_;
    }
    for (;;) {
      ExprTerm term = parse_term();
      if (!checked_mul(term.coeff, sign, &term.coeff)) fail_overflow();
      terms.push_back(std::move(term));
      skip_spaces();
      char c = peek();
      if (c == '\0' && pos_ == text_.size()) break;
      if (c == '+' || c == '-') {
        sign = c == '-' ? -1 : 1;
        ++pos_;
        continue;
      }
      if (c == '(' || c == ')') fail("parentheses are not supported");
      fail("expected '+', '-' or '*'");
    }
    return terms;
  }

 private:
  ExprTerm parse_term() {
    ExprTerm term;
    term.coeff = 1;
    parse_factor(term);
    for (;;) {
      skip_spaces();
      if (peek() != '*') return term;
      ++pos_;
      parse_factor(term);
    }
  }

  void parse_factor(ExprTerm& term) {
    skip_spaces();
    char c = peek();
    if (c >= '0' && c <= '9') {
      size_t start = pos_;
      int64_t value = 0;
      bool fits = true;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        fits =
            fits && checked_mul(value, 10, &value) && checked_add(value, text_[pos_] - '0', &value);
        ++pos_;
      }
      if (!fits)
        throw UserError(prefix() + "number " + shortened(text_.substr(start, pos_ - start)) +
                        " does not fit in 64 bits");
      if (!checked_mul(term.coeff, value, &term.coeff)) fail_overflow();
      return;
    }
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
      size_t start = pos_;
      while (pos_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
        ++pos_;
      term.vars.push_back(text_.substr(start, pos_ - start));
      if (term.vars.size() > 2)
        throw UserError(prefix() + "a term may multiply at most two shape variables");
      return;
    }
    if (c == '(' || c == ')') fail("parentheses are not supported");
    fail("expected a number or a shape variable");
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void skip_spaces() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }

  std::string prefix() const { return "invalid expression " + quote(text_) + ": "; }

  [[noreturn]] void fail(const std::string& what) const {
    throw UserError(prefix() + what + " at column " + std::to_string(pos_ + 1));
  }

  [[noreturn]] void fail_overflow() const {
    throw UserError(prefix() + "its coefficients overflow 64-bit integers");
  }

  const std::string& text_;
  size_t pos_ = 0;
};

// Merges terms over the same variables and drops those that cancel, so that equal
// expressions have equal term lists whatever way they were written.
std::vector<ExprTerm> canonicalize(std::vector<ExprTerm> terms, const std::string& text) {
  for (auto& term : terms) std::sort(term.vars.begin(), term.vars.end());
  // Variable terms first (ordered by their variables), the constant last.
  auto order = [](const ExprTerm& a, const ExprTerm& b) {
    if (a.vars.empty() != b.vars.empty()) return b.vars.empty();
    return a.vars < b.vars;
  };
  std::stable_sort(terms.begin(), terms.end(), order);
  std::vector<ExprTerm> merged;
  for (auto& term : terms) {
    if (!merged.empty() && merged.back().vars == term.vars) {
      if (!checked_add(merged.back().coeff, term.coeff, &merged.back().coeff))
        throw UserError("invalid expression " + quote(text) +
                        ": its coefficients overflow 64-bit integers");
    } else {
      merged.push_back(std::move(term));
    }
  }
  std::vector<ExprTerm> out;
  for (auto& term : merged) {
    // INT64_MIN has no positive counterpart, which to_string and to_c rely on.
    if (term.coeff == INT64_MIN)
      throw UserError("invalid expression " + quote(text) +
                      ": its coefficients overflow 64-bit integers");
    if (term.coeff != 0) out.push_back(std::move(term));
  }
  return out;
}

// What precedes term i when printed: "-" before a negative first term, " - " or " + " between
// terms; the term itself is then printed with its magnitude.
const char* sign_before_term(size_t i, int64_t coeff) {
  if (i == 0) return coeff < 0 ? "-" : "";
  return coeff < 0 ? " - " : " + ";
}

}  // namespace

Expr Expr::constant(int64_t value) {
  Expr e;
  if (value != 0) e.terms_.push_back(ExprTerm{value, {}});
  return e;
}

Expr Expr::parse(const std::string& text) {
  Expr e;
  e.terms_ = canonicalize(ExprParser(text).parse(), text);
  return e;
}

bool Expr::is_constant() const {
  return std::all_of(terms_.begin(), terms_.end(),
                     [](const ExprTerm& t) { return t.vars.empty(); });
}

int64_t Expr::constant_value() const {
  if (!is_constant()) throw std::logic_error("Expr::constant_value on " + to_string());
  // Canonical terms hold at most one constant term, so there is nothing to add up.
  return terms_.empty() ? 0 : terms_.back().coeff;
}

std::vector<std::string> Expr::variables() const {
  std::vector<std::string> vars;
  for (const auto& term : terms_) vars.insert(vars.end(), term.vars.begin(), term.vars.end());
  std::sort(vars.begin(), vars.end());
  vars.erase(std::unique(vars.begin(), vars.end()), vars.end());
  return vars;
}

int64_t Expr::evaluate(const std::map<std::string, int64_t>& values) const {
  int64_t sum = 0;
  for (const auto& term : terms_) {
    int64_t product = term.coeff;
    for (const auto& var : term.vars) {
      auto it = values.find(var);
      if (it == values.end())
        throw std::invalid_argument("Expr::evaluate: no value for " + var + " in " + to_string());
      if (!checked_mul(product, it->second, &product))
        throw UserError(quote(to_string()) + " overflows 64-bit integers");
    }
    if (!checked_add(sum, product, &sum))
      throw UserError(quote(to_string()) + " overflows 64-bit integers");
  }
  return sum;
}

std::string Expr::to_string() const {
  if (terms_.empty()) return "0";
  std::string out;
  for (size_t i = 0; i < terms_.size(); ++i) {
    const ExprTerm& term = terms_[i];
    const int64_t magnitude = term.coeff < 0 ? -term.coeff : term.coeff;
    out += sign_before_term(i, term.coeff);
    std::string factors;
    if (magnitude != 1 || term.vars.empty()) factors = std::to_string(magnitude);
    for (const auto& var : term.vars) factors += (factors.empty() ? "" : "*") + var;
    out += factors;
  }
  return out;
}

std::string Expr::to_c(const std::map<std::string, std::string>& var_names) const {
  if (terms_.empty()) return "((int64_t)0)";
  std::string out = "(";
  for (size_t i = 0; i < terms_.size(); ++i) {
    const ExprTerm& term = terms_[i];
    const int64_t magnitude = term.coeff < 0 ? -term.coeff : term.coeff;
    out += sign_before_term(i, term.coeff);
    // The cast makes the whole product int64_t even if a variable is renamed to an int.
    out += "(int64_t)" + std::to_string(magnitude);
    for (const auto& var : term.vars) {
      auto it = var_names.find(var);
      out += "*" + (it == var_names.end() ? var : it->second);
    }
  }
  return out + ")";
}

}  // namespace dietcode
