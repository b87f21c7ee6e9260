#include "workload/names.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <set>

namespace dietcode {

bool is_identifier(const std::string& text) {
  if (text.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(text[0])) return false;
  return std::all_of(text.begin(), text.end(),
                     [&](char c) { return alpha(c) || (c >= '0' && c <= '9'); });
}

std::string c_identifier(const std::string& text, const std::string& prefix) {
  std::string out;
  for (char c : text) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = prefix + out;
  return out;
}

bool is_c_keyword(const std::string& text) {
  static const std::set<std::string> keywords = {
      // C11
      "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
      "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
      "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
      "union", "unsigned", "void", "volatile", "while", "_Alignas", "_Alignof", "_Atomic", "_Bool",
      "_Complex", "_Generic", "_Imaginary", "_Noreturn", "_Static_assert", "_Thread_local",
      // C++17 additions (the generated header is included from C++ too)
      "alignas", "alignof", "and", "and_eq", "asm", "bitand", "bitor", "bool", "catch", "char16_t",
      "char32_t", "class", "compl", "constexpr", "const_cast", "decltype", "delete", "dynamic_cast",
      "explicit", "export", "false", "friend", "mutable", "namespace", "new", "noexcept", "not",
      "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected", "public",
      "reinterpret_cast", "static_assert", "static_cast", "template", "this", "thread_local",
      "throw", "true", "try", "typeid", "typename", "using", "virtual", "wchar_t", "xor", "xor_eq",
      // Types and macros every generated file sees
      "int64_t", "int32_t", "size_t", "NULL"};
  return keywords.count(text) > 0;
}

std::string quote(const std::string& text, size_t max_chars) {
  std::string cut = text.size() > max_chars ? text.substr(0, max_chars) + "..." : text;
  // `replace` turns a UTF-8 sequence broken by the cut (or any invalid byte) into U+FFFD
  // instead of throwing; dump() escapes control characters, so the result is one line.
  return nlohmann::json(cut).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {
std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t substitute = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, substitute});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  // Long inputs cannot be within two edits of a short key; skip the quadratic work.
  if (word.size() > 64) return "";
  std::string best;
  size_t best_distance = 3;
  const std::string lw = lower(word);
  for (const auto& candidate : candidates) {
    size_t d = edit_distance(lw, lower(candidate));
    if (d < best_distance && 2 * d <= std::min(word.size(), candidate.size())) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  std::string match = closest_match(word, candidates);
  return match.empty() ? "" : " (did you mean " + quote(match) + "?)";
}

std::string join_alternatives(const std::vector<std::string>& words, const char* last) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? std::string(" ") + last + " " : std::string(", ");
    out += words[i];
  }
  return out;
}

}  // namespace dietcode
