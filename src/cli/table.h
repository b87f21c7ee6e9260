// Aligned plain-text tables for command output: a header row, then rows of cells, columns
// padded to their widest cell and separated by two spaces. Numbers read best right-aligned,
// names left-aligned; each column says which.
#pragma once

#include <string>
#include <vector>

namespace dietcode::cli {

class TextTable {
 public:
  enum class Align { kLeft, kRight };

  // Returns the column's index.
  size_t add_column(std::string header, Align align = Align::kLeft);
  // A row with one cell per column (missing cells print empty; extra cells are an error).
  void add_row(std::vector<std::string> cells);

  size_t rows() const { return rows_.size(); }

  // Every line starts with `indent` and ends with '\n'; trailing spaces are trimmed.
  std::string render(const std::string& indent = "") const;

 private:
  std::vector<std::string> headers_;
  std::vector<Align> aligns_;
  std::vector<std::vector<std::string>> rows_;
};

// Number formats shared by the commands, so the same quantity looks the same everywhere.
std::string format_sig(double value, int significant = 4);  // "0.05663", "1.234e+06"

// Display width of UTF-8 text: one column per code point.
size_t display_width(const std::string& text);

}  // namespace dietcode::cli
