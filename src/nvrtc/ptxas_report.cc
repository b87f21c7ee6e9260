#include "nvrtc/ptxas_report.h"

#include <cstdlib>
#include <sstream>

namespace dietcode {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// The text after "ptxas info    :" or "ptxas         .", trimmed; empty when the line is not
// part of a ptxas report.
std::string ptxas_payload(const std::string& line) {
  if (!starts_with(line, "ptxas")) return "";
  size_t pos = 5;
  while (pos < line.size() && line[pos] == ' ') ++pos;
  if (starts_with(line.substr(pos), "info")) pos += 4;
  while (pos < line.size() && line[pos] == ' ') ++pos;
  if (pos < line.size() && (line[pos] == ':' || line[pos] == '.')) ++pos;
  size_t end = line.size();
  while (end > pos && (line[end - 1] == ' ' || line[end - 1] == '\r')) --end;
  while (pos < end && line[pos] == ' ') ++pos;
  return line.substr(pos, end - pos);
}

// "'NAME'" at the start of s -> NAME; s unchanged when unquoted.
std::string unquote(const std::string& s) {
  if (s.size() >= 2 && s.front() == '\'') {
    size_t close = s.find('\'', 1);
    if (close != std::string::npos) return s.substr(1, close - 1);
  }
  return s;
}

// Splits "Used 32 registers, used 1 barriers, 8192 bytes smem" into (number, unit) items:
// {32, "registers"}, {1, "barriers"}, {8192, "bytes smem"}. Leading words such as "Used" are
// dropped; an item without a number is skipped.
struct Item {
  long value;
  std::string unit;
};
std::vector<Item> items(const std::string& text) {
  std::vector<Item> out;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, ',')) {
    size_t digit = part.find_first_of("0123456789");
    if (digit == std::string::npos) continue;
    char* end = nullptr;
    long value = std::strtol(part.c_str() + digit, &end, 10);
    std::string unit(end);
    size_t first = unit.find_first_not_of(' ');
    unit = first == std::string::npos ? "" : unit.substr(first);
    out.push_back({value, unit});
  }
  return out;
}

void apply_properties(const std::string& text, KernelResources& r) {
  for (const Item& item : items(text)) {
    if (item.unit == "bytes stack frame")
      r.stack_frame = int(item.value);
    else if (item.unit == "bytes spill stores")
      r.spill_stores = int(item.value);
    else if (item.unit == "bytes spill loads")
      r.spill_loads = int(item.value);
  }
}

void apply_usage(const std::string& text, KernelResources& r) {
  for (const Item& item : items(text)) {
    if (item.unit == "registers")
      r.registers = int(item.value);
    else if (item.unit == "bytes smem")
      r.static_smem = int(item.value);
  }
}

// Index of the record named `name`, appended when absent.
size_t record(std::vector<KernelResources>& list, const std::string& name) {
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i].entry == name) return i;
  list.push_back(KernelResources{name});
  return list.size() - 1;
}

bool contains(const std::vector<KernelResources>& list, const std::string& name) {
  for (const auto& r : list)
    if (r.entry == name) return true;
  return false;
}

}  // namespace

PtxasReport parse_ptxas_report(const std::string& log) {
  static const std::string kEntry = "Compiling entry function ";
  static const std::string kProperties = "Function properties for ";
  PtxasReport report;
  // Indices, not pointers: the vectors grow while we parse.
  constexpr size_t kNone = size_t(-1);
  size_t current_entry = kNone;  // the "Used N registers" line belongs to it
  std::vector<KernelResources>* properties_list = nullptr;
  size_t properties_of = kNone;  // the next "N bytes stack frame" line belongs to it
  std::stringstream stream(log);
  std::string line;
  while (std::getline(stream, line)) {
    std::string text = ptxas_payload(line);
    if (text.empty()) continue;
    if (starts_with(text, kEntry)) {
      current_entry = record(report.entries, unquote(text.substr(kEntry.size())));
      properties_of = kNone;
    } else if (starts_with(text, kProperties)) {
      std::string name = unquote(text.substr(kProperties.size()));
      // An entry's properties follow its "Compiling entry function" line; any other name is a
      // non-inlined __device__ function.
      properties_list = contains(report.entries, name) ? &report.entries : &report.functions;
      properties_of = record(*properties_list, name);
    } else if (text.find("bytes stack frame") != std::string::npos) {
      if (properties_of != kNone) apply_properties(text, (*properties_list)[properties_of]);
      properties_of = kNone;
    } else if (starts_with(text, "Used ")) {
      if (current_entry != kNone) apply_usage(text, report.entries[current_entry]);
    }
  }
  return report;
}

std::vector<KernelResources> entry_resources(const PtxasReport& report) {
  std::vector<KernelResources> out = report.entries;
  for (const KernelResources& function : report.functions) {
    for (KernelResources& entry : out) {
      entry.spill_stores += function.spill_stores;
      entry.spill_loads += function.spill_loads;
    }
  }
  return out;
}

}  // namespace dietcode
