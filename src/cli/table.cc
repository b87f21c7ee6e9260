#include "cli/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace dietcode::cli {

size_t TextTable::add_column(std::string header, Align align) {
  headers_.push_back(std::move(header));
  aligns_.push_back(align);
  return headers_.size() - 1;
}

void TextTable::add_row(std::vector<std::string> cells) {
  if (cells.size() > headers_.size())
    throw std::logic_error("TextTable: row has more cells than the table has columns");
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

size_t display_width(const std::string& text) {
  // Continuation bytes (10xxxxxx) do not start a character.
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

std::string TextTable::render(const std::string& indent) const {
  std::vector<size_t> widths(headers_.size());
  for (size_t c = 0; c < headers_.size(); ++c) {
    widths[c] = display_width(headers_[c]);
    for (const auto& row : rows_) widths[c] = std::max(widths[c], display_width(row[c]));
  }
  std::string out;
  auto emit = [&](const std::vector<std::string>& cells) {
    std::string line = indent;
    for (size_t c = 0; c < cells.size(); ++c) {
      std::string pad(widths[c] - display_width(cells[c]), ' ');
      if (c > 0) line += "  ";
      line += aligns_[c] == Align::kRight ? pad + cells[c] : cells[c] + pad;
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  };
  emit(headers_);
  for (const auto& row : rows_) emit(row);
  return out;
}

std::string format_sig(double value, int significant) {
  return fmt::format("{:.{}g}", value, significant);
}

}  // namespace dietcode::cli
