// The per-op space report and its renderings. The workload-level entry points (which expand
// instances and consult the template registry) are in space_report_workload.cc.
#include "space/space_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace dietcode {

OpSpaceReport report_op_space(const TemplateSpace& space, const SpaceContext& context,
                              const SearchLimits& limits) {
  SearchSpace search(space, context, limits);
  OpSpaceReport report;
  report.op = context.op.name;
  report.tmpl = space.tmpl;
  report.largest = context.largest;
  report.unconstrained = search.unconstrained_size();
  report.valid = search.enumerate();
  for (const MicroKernel& mk : report.valid.candidates)
    report.resources.push_back(space.resources ? space.resources(mk) : LaunchResources{});
  return report;
}

nlohmann::json space_report_json(const OpSpaceReport& report) {
  nlohmann::json candidates = nlohmann::json::array();
  for (size_t i = 0; i < report.valid.candidates.size(); ++i) {
    nlohmann::json c = report.valid.candidates[i].params;
    c["threads"] = report.resources[i].threads;
    c["smem_bytes"] = report.resources[i].dynamic_smem_bytes;
    candidates.push_back(std::move(c));
  }
  const GemmShape& g = report.largest;
  return {{"op", report.op},
          {"template", report.tmpl.empty() ? nlohmann::json(nullptr) : nlohmann::json(report.tmpl)},
          {"largest", {{"batch", g.batch}, {"M", g.M}, {"N", g.N}, {"K", g.K}}},
          {"unconstrained", report.unconstrained},
          {"count", report.valid.candidates.size()},
          {"complete", report.valid.complete},
          {"candidates", std::move(candidates)}};
}

nlohmann::json space_report_json(const std::vector<OpSpaceReport>& reports) {
  nlohmann::json out = nlohmann::json::array();
  for (const OpSpaceReport& r : reports) out.push_back(space_report_json(r));
  return out;
}

namespace {

std::string shape_text(const GemmShape& g) {
  std::string out = fmt::format("M={} N={} K={}", g.M, g.N, g.K);
  return g.batch > 1 ? fmt::format("batch={} ", g.batch) + out : out;
}

// A table with right-aligned columns, each as wide as its widest cell.
std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], row[c].size());
    }
  std::string out;
  for (const auto& row : rows) {
    out += " ";
    for (size_t c = 0; c < row.size(); ++c) out += fmt::format(" {:>{}}", row[c], width[c]);
    out += "\n";
  }
  return out;
}

}  // namespace

std::string render_space_report(const OpSpaceReport& report, size_t rows) {
  if (report.tmpl.empty())
    return report.computation.empty()
               ? fmt::format("{}: no template can compute this op\n", report.op)
               : fmt::format("{}: no template can compute this op ({})\n", report.op,
                             report.computation);
  const auto& candidates = report.valid.candidates;
  std::string out = fmt::format(
      "{}: template {}, largest {}: {}{} valid micro-kernels of {:.0f} combinations\n", report.op,
      report.tmpl, shape_text(report.largest), report.valid.complete ? "" : "at least ",
      candidates.size(), report.unconstrained);
  if (candidates.empty()) return out;

  std::vector<std::string> names;
  for (const auto& [name, value] : candidates.front().params) names.push_back(name);
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> header = {"#"};
  header.insert(header.end(), names.begin(), names.end());
  header.push_back("threads");
  header.push_back("smem");
  cells.push_back(header);
  for (size_t i = 0; i < std::min(rows, candidates.size()); ++i) {
    std::vector<std::string> row = {std::to_string(i + 1)};
    for (const std::string& name : names) row.push_back(std::to_string(candidates[i].get(name)));
    row.push_back(std::to_string(report.resources[i].threads));
    row.push_back(std::to_string(report.resources[i].dynamic_smem_bytes));
    cells.push_back(std::move(row));
  }
  out += table(cells);
  if (candidates.size() > rows) out += fmt::format("  ... {} more\n", candidates.size() - rows);

  // Which values of each tunable survive the constraints: where the space is narrow.
  std::map<std::string, std::set<int>> used;
  for (const MicroKernel& mk : candidates)
    for (const auto& [name, value] : mk.params) used[name].insert(value);
  out += "  values used by valid candidates:\n";
  for (const auto& [name, values] : used) {
    std::string list;
    for (int v : values) list += (list.empty() ? "" : " ") + std::to_string(v);
    out += fmt::format("    {}: {}\n", name, list);
  }
  return out;
}

std::string render_space_report(const std::vector<OpSpaceReport>& reports, size_t rows) {
  std::string out;
  for (size_t i = 0; i < reports.size(); ++i) {
    if (i) out += "\n";
    out += render_space_report(reports[i], rows);
  }
  return out;
}

}  // namespace dietcode
