// Dimension expressions: integers or affine expressions of shape variables, where a term may
// be a product of two variables ("16*T", "T+3", "B*T", "2*B*T+1"). Kept as a sum of terms so
// code generators can emit them as C and the space can bound them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dietcode {

struct ExprTerm {
  int64_t coeff = 0;
  std::vector<std::string> vars;  // empty: a constant; one or two names, sorted
};

class Expr {
 public:
  Expr() = default;
  static Expr constant(int64_t value);

  // Parses "16*T", "T + 3", "B*T". Throws UserError("<what is wrong>") without any prefix;
  // the workload parser adds the file and JSON path.
  static Expr parse(const std::string& text);

  bool is_constant() const;
  int64_t constant_value() const;              // only when is_constant()
  std::vector<std::string> variables() const;  // sorted, distinct

  // Evaluates at the given variable values; throws UserError on overflow past int64.
  int64_t evaluate(const std::map<std::string, int64_t>& values) const;

  std::string to_string() const;  // canonical text, e.g. "16*T" or "B*T + 1"
  // C expression over int64_t variables with the same names, e.g. "((int64_t)16*T)".
  std::string to_c(const std::map<std::string, std::string>& var_names = {}) const;

  const std::vector<ExprTerm>& terms() const { return terms_; }

 private:
  std::vector<ExprTerm> terms_;
};

}  // namespace dietcode
