#include "import/sym_dim.h"

#include <algorithm>
#include <stdexcept>

namespace dietcode::onnx_import {

SymDim::SymDim(int64_t value) {
  if (value != 0) terms_[{}] = value;
}

SymDim SymDim::symbol(const std::string& name) {
  SymDim d;
  d.terms_[{name}] = 1;
  return d;
}

bool SymDim::is_constant() const {
  return terms_.empty() || (terms_.size() == 1 && terms_.begin()->first.empty());
}

int64_t SymDim::constant() const {
  if (!is_constant()) throw std::logic_error("SymDim::constant of " + to_string());
  return terms_.empty() ? 0 : terms_.begin()->second;
}

std::vector<std::string> SymDim::symbols() const {
  std::vector<std::string> out;
  for (const auto& [monomial, coeff] : terms_)
    out.insert(out.end(), monomial.begin(), monomial.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int SymDim::degree() const {
  size_t d = 0;
  for (const auto& [monomial, coeff] : terms_) d = std::max(d, monomial.size());
  return int(d);
}

SymDim SymDim::operator+(const SymDim& other) const {
  SymDim out = *this;
  for (const auto& [monomial, coeff] : other.terms_) {
    int64_t& c = out.terms_[monomial];
    c += coeff;
    if (c == 0) out.terms_.erase(monomial);
  }
  return out;
}

SymDim SymDim::operator-(const SymDim& other) const { return *this + other * SymDim(-1); }

SymDim SymDim::operator*(const SymDim& other) const {
  SymDim out;
  for (const auto& [ma, ca] : terms_)
    for (const auto& [mb, cb] : other.terms_) {
      std::vector<std::string> m = ma;
      m.insert(m.end(), mb.begin(), mb.end());
      std::sort(m.begin(), m.end());
      int64_t& c = out.terms_[m];
      c += ca * cb;
      if (c == 0) out.terms_.erase(m);
    }
  return out;
}

std::optional<SymDim> SymDim::divide(const SymDim& divisor) const {
  if (divisor.terms_.empty()) return std::nullopt;
  if (*this == divisor) return SymDim(1);
  if (divisor.terms_.size() != 1) return std::nullopt;
  const auto& [dm, dc] = *divisor.terms_.begin();
  SymDim out;
  for (const auto& [monomial, coeff] : terms_) {
    if (coeff % dc != 0) return std::nullopt;
    // Remove the divisor's symbols from the monomial (a multiset difference).
    std::vector<std::string> rest;
    if (!std::includes(monomial.begin(), monomial.end(), dm.begin(), dm.end())) return std::nullopt;
    std::set_difference(monomial.begin(), monomial.end(), dm.begin(), dm.end(),
                        std::back_inserter(rest));
    out.terms_[rest] += coeff / dc;
  }
  return out;
}

int64_t SymDim::evaluate(const std::map<std::string, int64_t>& values) const {
  int64_t total = 0;
  for (const auto& [monomial, coeff] : terms_) {
    int64_t term = coeff;
    for (const std::string& s : monomial) {
      auto it = values.find(s);
      if (it == values.end()) throw std::logic_error("SymDim::evaluate: no value for " + s);
      term *= it->second;
    }
    total += term;
  }
  return total;
}

SymDim SymDim::renamed(const std::map<std::string, std::string>& renames) const {
  SymDim out;
  for (const auto& [monomial, coeff] : terms_) {
    std::vector<std::string> m;
    for (const std::string& s : monomial) {
      auto it = renames.find(s);
      m.push_back(it == renames.end() ? s : it->second);
    }
    std::sort(m.begin(), m.end());
    out.terms_[m] += coeff;
  }
  return out;
}

std::string SymDim::to_string() const {
  if (terms_.empty()) return "0";
  // Higher-degree terms first, the constant last: "B*T + 1".
  std::vector<std::pair<std::vector<std::string>, int64_t>> ordered(terms_.begin(), terms_.end());
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  std::string out;
  for (const auto& [monomial, coeff] : ordered) {
    int64_t c = coeff;
    if (out.empty()) {
      if (c < 0) out += "-", c = -c;
    } else {
      out += c < 0 ? " - " : " + ";
      if (c < 0) c = -c;
    }
    std::string factors;
    if (c != 1 || monomial.empty()) factors = std::to_string(c);
    for (const std::string& s : monomial) factors += (factors.empty() ? "" : "*") + s;
    out += factors;
  }
  return out;
}

SymDim product(const std::vector<SymDim>& dims) {
  SymDim p(1);
  for (const SymDim& d : dims) p = p * d;
  return p;
}

}  // namespace dietcode::onnx_import
