// dietcode inspect PATH: explain what a file holds. The command dispatches on the kind of
// file; each kind has its own inspect_<kind> function below, sharing InspectOptions.
//   WORKLOAD.json   every shape instance of every op: the shape, the GEMM it maps to (for
//                   conv2d also the NHWC geometry), FLOPs, weight and search priority.
//   libNAME.so      a kernel pack's manifest and decision trees, with each leaf's regret;
//                   --shape T=37 explains one dispatch (inspect_pack.cc)
//   LOG.jsonl       the best micro-kernel of every instance in a tuning log (inspect_log.cc);
//                   LOG.jsonl.gz too
//   WORKLOAD.json --space --gpu ID
//                   the micro-kernel candidates each op has on that GPU: count and parameters.
// --shape VAR=VALUE narrows the output to one value of a variable (repeatable).
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/inspect_log.h"
#include "search/tuning_log.h"
#include "cli/inspect_pack.h"
#include "cli/table.h"
#include "common/error.h"
#include "space/gpu_spec.h"
#include "space/space_report.h"
#include "workload/describe.h"
#include "workload/names.h"
#include "workload/op_layout.h"
#include "workload/workload.h"

namespace dietcode::cli {

namespace {

struct InspectOptions {
  std::string path;
  bool json = false;
  std::vector<std::string> shapes;  // --shape VAR=VALUE
  bool by_kernel = false;           // a log: every kernel against the best, not the best alone
  // The micro-kernel space view: the candidates a GPU allows for each op.
  bool space = false;
  size_t rows = 10;  // candidates listed per op in the text view
  size_t max_candidates = 100000;
  std::string gpu;
};

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// --shape T=37 --shape B=2 as {T: 37, B: 2}, checked against the workload's variables.
std::map<std::string, int64_t> parse_shape_filters(const std::vector<std::string>& shapes,
                                                   const Workload& workload) {
  std::map<std::string, int64_t> filters;
  std::vector<std::string> declared;
  for (const auto& var : workload.vars) declared.push_back(var.name);
  for (const auto& text : shapes) {
    size_t eq = text.find('=');
    std::string name = text.substr(0, eq == std::string::npos ? 0 : eq);
    std::string digits = eq == std::string::npos ? "" : text.substr(eq + 1);
    bool numeric = !digits.empty() && digits.size() <= 18 &&
                   digits.find_first_not_of("0123456789") == std::string::npos;
    if (name.empty() || !numeric)
      throw UserError("inspect --shape: expected VAR=VALUE with a positive integer value, got " +
                      quote(text));
    const ShapeVar* var = workload.find_var(name);
    if (!var)
      throw UserError(
          "inspect --shape: " + quote(name) + " is not a shape variable of " + workload.source +
          (declared.empty() ? " (it has none)"
                            : " (declared: " + join_alternatives(declared, "and") + ")"));
    int64_t value = std::stoll(digits);
    bool listed = false;
    for (int64_t v : var->values) listed = listed || v == value;
    if (!listed)
      throw UserError("inspect --shape: " + std::to_string(value) + " is not a value of " + name +
                      " (" + describe_values(*var) + ")");
    if (!filters.emplace(name, value).second)
      throw UserError("inspect --shape: " + name + " is given twice");
  }
  return filters;
}

bool selected(const OpSpec& op, const Instance& inst,
              const std::map<std::string, int64_t>& filters) {
  for (size_t i = 0; i < op.vars.size(); ++i) {
    auto it = filters.find(op.vars[i]);
    if (it != filters.end() && it->second != inst.values[i]) return false;
  }
  return true;
}

// The columns of an op's instance table after its variables: the operator's own geometry
// where it differs from the GEMM, then the GEMM.
std::vector<std::string> geometry_columns(const OpSpec& op) {
  switch (op.kind) {
    case OpKind::kDense:
      return {"M", "N", "K"};
    case OpKind::kBatchMatmul:
      return {"batch", "M", "N", "K"};
    case OpKind::kConv2d:
      // The implicit GEMM's extents are named by what they are made of.
      return {"N", "H", "W", "C", "K", "R", "S", "P", "Q", "M=NPQ", "N=K", "K=RSC"};
  }
  return {};
}

std::vector<int64_t> geometry_values(const OpSpec& op, const Instance& inst) {
  const GemmShape& g = inst.gemm;
  switch (op.kind) {
    case OpKind::kDense:
      return {g.M, g.N, g.K};
    case OpKind::kBatchMatmul:
      return {g.batch, g.M, g.N, g.K};
    case OpKind::kConv2d: {
      auto d = evaluate_dims(op, inst.values);
      return {d["N"], d["H"], d["W"], d["C"], d["K"], d["R"],
              d["S"], d["P"], d["Q"], g.M,    g.N,    g.K};
    }
  }
  return {};
}

nlohmann::ordered_json instance_json(const OpSpec& op, const Instance& inst) {
  nlohmann::ordered_json shape = nlohmann::ordered_json::object();
  for (size_t i = 0; i < op.vars.size(); ++i) shape[op.vars[i]] = inst.values[i];
  nlohmann::ordered_json dims = nlohmann::ordered_json::object();
  auto values = evaluate_dims(op, inst.values);
  std::vector<std::string> names = dim_names(op.kind);
  if (op.kind == OpKind::kConv2d) names.insert(names.end(), {"P", "Q"});
  for (const auto& name : names) dims[name] = values.at(name);
  return {
      {"shape", shape},
      {"dims", dims},
      {"gemm",
       {{"batch", inst.gemm.batch}, {"M", inst.gemm.M}, {"N", inst.gemm.N}, {"K", inst.gemm.K}}},
      {"flops", inst.flops},
      {"weight", inst.weight},
      {"priority", inst.priority}};
}

int inspect_workload(const InspectOptions& options, const GlobalOptions& global) {
  Workload workload = load_workload(options.path);
  auto filters = parse_shape_filters(options.shapes, workload);

  if (options.json) {
    nlohmann::ordered_json out;
    out["name"] = workload.name;
    out["source"] = workload.source;
    out["ops"] = nlohmann::ordered_json::array();
    for (const auto& op : workload.ops) {
      nlohmann::ordered_json instances = nlohmann::ordered_json::array();
      for (const auto& inst : expand_instances(workload, op))
        if (selected(op, inst, filters)) instances.push_back(instance_json(op, inst));
      out["ops"].push_back({{"name", op.name},
                            {"op", to_string(op.kind)},
                            {"dtype", to_string(op.dtype)},
                            {"epilogue", to_string(op.epilogue)},
                            {"vars", op.vars},
                            {"instances", instances}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  if (global.quiet) return 0;

  std::string text = "workload " + workload.name + " (" + workload.source + ")\n";
  for (const auto& op : workload.ops) {
    std::vector<Instance> instances = expand_instances(workload, op);
    TextTable table;
    for (const auto& var : op.vars) table.add_column(var, TextTable::Align::kRight);
    // The bar keeps the variables apart from the geometry (conv2d's N is both).
    if (!op.vars.empty()) table.add_column("|");
    for (const auto& column : geometry_columns(op))
      table.add_column(column, TextTable::Align::kRight);
    table.add_column("GFLOP", TextTable::Align::kRight);
    table.add_column("weight", TextTable::Align::kRight);
    table.add_column("priority", TextTable::Align::kRight);
    for (const auto& inst : instances) {
      if (!selected(op, inst, filters)) continue;
      std::vector<std::string> cells;
      for (int64_t v : inst.values) cells.push_back(std::to_string(v));
      if (!op.vars.empty()) cells.push_back("|");
      for (int64_t v : geometry_values(op, inst)) cells.push_back(std::to_string(v));
      cells.push_back(format_sig(inst.flops / 1e9));
      cells.push_back(format_sig(inst.weight));
      cells.push_back(format_sig(inst.priority));
      table.add_row(std::move(cells));
    }
    text += "\n" + op.name + ": " + to_string(op.kind) + " " + to_string(op.dtype) + " " +
            describe_dims(op) + ", epilogue " + to_string(op.epilogue) + ", " +
            std::to_string(table.rows()) + " of " + std::to_string(instances.size()) +
            " instances\n";
    text += table.render("  ");
  }
  std::printf("%s", text.c_str());
  return 0;
}

int inspect_space(const InspectOptions& options, const GlobalOptions& global) {
  if (options.gpu.empty()) {
    std::string known;
    for (const auto& id : list_gpu_specs()) known += (known.empty() ? "" : ", ") + id;
    throw UserError("inspect --space: --gpu ID is required (one of: " + known + ")");
  }
  Workload workload = load_workload(options.path);
  GpuSpec gpu = load_gpu_spec(options.gpu);
  // The dense spaces hold millions of valid micro-kernels; listing them all helps nobody and
  // takes minutes, so the view stops counting at max_candidates and says "at least".
  SearchLimits limits;
  limits.max_candidates = options.max_candidates;
  auto reports = report_workload_space(workload, gpu, limits);
  if (options.json) {
    std::printf("%s\n", space_report_json(reports).dump(2).c_str());
  } else if (!global.quiet) {
    std::printf("micro-kernel space of %s on %s (%s)\n\n%s", workload.name.c_str(),
                gpu.name.c_str(), gpu.arch().c_str(),
                render_space_report(reports, options.rows).c_str());
  }
  return 0;
}

int run_inspect(const InspectOptions& options, const GlobalOptions& global) {
  // Each kind of file gets its own view; the extension says which kind a path is.
  const bool is_log = is_tuning_log_path(options.path);
  if (options.by_kernel && !is_log)
    throw UserError("inspect --by-kernel: only for a tuning log (.jsonl, .jsonl.gz), got " +
                    options.path);
  if (ends_with(options.path, ".json"))
    return options.space ? inspect_space(options, global) : inspect_workload(options, global);
  if (ends_with(options.path, ".so")) return inspect_pack(options.path, options.json, options.shapes);
  if (is_log && options.by_kernel)
    return inspect_log_by_kernel(options.path, options.json, options.shapes, global.quiet);
  if (is_log) return inspect_log(options.path, options.json, options.shapes, global.quiet);
  throw UserError(options.path +
                  ": not a workload (.json), a tuning log (.jsonl, .jsonl.gz) or a kernel pack "
                  "(.so)");
}

}  // namespace

void register_inspect(CLI::App& app, GlobalOptions& global, Action& action) {
  auto options = std::make_shared<InspectOptions>();
  auto* cmd = app.add_subcommand(
      "inspect", "Explain a file: a workload's instances, a log's best kernels, a pack's kernels and trees");
  add_global_flags(*cmd, global);
  cmd->add_option("PATH", options->path, "File to inspect (WORKLOAD.json, LOG.jsonl or libNAME.so)")->required();
  cmd->add_flag("--json", options->json, "Print as JSON");
  cmd->add_flag("--by-kernel", options->by_kernel,
                "For a log: every kernel against each instance's fastest (geometric mean), "
                "not the best alone: reads off an A/B timed with tune --kernels");
  cmd->add_option("--shape", options->shapes,
                  "Only instances with this value of a shape variable, e.g. T=37 (repeatable)")
      ->allow_extra_args(false);
  cmd->add_flag("--space", options->space,
                "For a workload: the micro-kernel candidates of each op on the --gpu target");
  cmd->add_option("--gpu", options->gpu, "GPU config id for --space (configs/gpus), e.g. h100");
  cmd->add_option("--rows", options->rows, "Candidates listed per op with --space")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-candidates", options->max_candidates,
                  "Stop counting an op's candidates after this many (--space)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->footer(
      "Examples:\n"
      "  dietcode inspect configs/workloads/bert_base_dense.json\n"
      "  dietcode inspect configs/workloads/resnet50_nhwc.json --shape N=8 --json\n"
      "  dietcode inspect configs/workloads/bert_base_dense.json --space --gpu h100\n"
      "  dietcode inspect libbert_dense.so --shape T=37\n"
      "  dietcode inspect bert_dense.jsonl --shape T=128\n"
      "  dietcode inspect ab.jsonl --by-kernel             (after tune --kernels ab.json)\n");
  cmd->callback([&action, &global, options] {
    action = [&global, options] { return run_inspect(*options, global); };
  });
}

}  // namespace dietcode::cli
