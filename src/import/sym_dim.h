// SymDim: a tensor dimension of an imported model as a polynomial of its symbolic dimensions
// (ONNX dim_params such as batch_size and sequence_length), with integer coefficients:
// 768, batch*seq, 12*seq, seq + 1. The importer propagates these through the graph itself,
// because ONNX shape inference gives up on most of what a dynamic-axes export computes
// (a Reshape whose target shape comes from Shape -> Gather -> Concat) and leaves the dimension
// unknown, while the workload needs it as an expression ("16*T", "B*T").
//
// A SymDim is exact or absent (std::optional at the call sites): nothing is approximated.
// Division is exact division only (a reshape's -1 = product of the input / product of the
// rest): when the quotient is not a polynomial with integer coefficients, there is none.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dietcode::onnx_import {

class SymDim {
 public:
  SymDim() = default;                 // 0
  SymDim(int64_t value);              // NOLINT: a constant, implicitly
  static SymDim symbol(const std::string& name);

  bool is_constant() const;
  int64_t constant() const;  // only when is_constant()
  // The symbols it uses, sorted and distinct.
  std::vector<std::string> symbols() const;
  // The largest number of symbols multiplied in one term (batch*seq: 2).
  int degree() const;

  SymDim operator+(const SymDim& other) const;
  SymDim operator-(const SymDim& other) const;
  SymDim operator*(const SymDim& other) const;
  // this / divisor when it is exact: every term divisible by a one-term divisor
  // (batch*seq*768 / 768 = batch*seq; 12*seq / seq = 12), or two equal values. Else nothing.
  std::optional<SymDim> divide(const SymDim& divisor) const;
  bool operator==(const SymDim& other) const { return terms_ == other.terms_; }
  bool operator!=(const SymDim& other) const { return !(*this == other); }

  // Its value with every symbol set (each must be in `values`).
  int64_t evaluate(const std::map<std::string, int64_t>& values) const;
  // With symbols renamed (names not in `renames` stay as they are).
  SymDim renamed(const std::map<std::string, std::string>& renames) const;

  // Workload expression text: "768", "16*T", "B*T", "T + 1" (Expr::parse reads it back).
  std::string to_string() const;

 private:
  // monomial (sorted symbol names, repeats allowed) -> coefficient; no zero coefficients.
  std::map<std::vector<std::string>, int64_t> terms_;
};

// The product of a shape's dimensions (the element count).
SymDim product(const std::vector<SymDim>& dims);

}  // namespace dietcode::onnx_import
