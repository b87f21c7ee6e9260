// Text helpers for the workload parser: which names are legal, how to quote a user's text in
// a one-line message, and which known word a typo most likely meant.
#pragma once

#include <string>
#include <vector>

namespace dietcode {

// [A-Za-z_][A-Za-z0-9_]*: names become C identifiers and file names in generated packs.
bool is_identifier(const std::string& text);

// Free text made an identifier: letters, digits and '_' kept, anything else becomes '_'; when
// the result is empty or starts with a digit, `prefix` goes before it.
std::string c_identifier(const std::string& text, const std::string& prefix = "_");

// C and C++ keywords: shape variables become parameters of the pack's typed C wrappers.
bool is_c_keyword(const std::string& text);

// The text as a JSON string literal, escaped so that any input stays on one line, and cut
// to about max_chars so a pasted megabyte does not become the message.
std::string quote(const std::string& text, size_t max_chars = 64);

// The candidate a typo most likely meant: the closest by edit distance (ignoring case) when
// it is at most 2 edits away and the edits touch at most half of the shorter word, so
// "epilog" finds "epilogue" and "k" finds "K", but "max" does not find "M" nor "pad" "max".
// Empty when nothing is close.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

// " (did you mean \"x\"?)" or "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

// "a, b or c" (or with another final conjunction: "a, b and c").
std::string join_alternatives(const std::vector<std::string>& words, const char* last = "or");

}  // namespace dietcode
