// dietcode validate [--json] WORKLOAD.json: parse and check a workload (SPEC §3), then
// summarise it — its shape variables, and per op the dimensions as written, the number of
// shape instances and the total work. Exit 1 with "FILE: PATH: what" when it is invalid.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "cli/table.h"
#include "workload/describe.h"
#include "workload/op_layout.h"
#include "workload/workload.h"

namespace dietcode::cli {

namespace {

struct ValidateOptions {
  std::string workload;
  bool json = false;
};

struct OpTotals {
  size_t instances = 0;
  double gflop = 0;
};

OpTotals totals(const Workload& workload, const OpSpec& op, std::vector<Instance>* keep = nullptr) {
  OpTotals t;
  std::vector<Instance> instances = expand_instances(workload, op);
  t.instances = instances.size();
  for (const auto& inst : instances) t.gflop += inst.flops / 1e9;
  if (keep) *keep = std::move(instances);
  return t;
}

nlohmann::ordered_json summary_json(const Workload& workload) {
  nlohmann::ordered_json out;
  out["name"] = workload.name;
  out["source"] = workload.source;
  out["shape_vars"] = nlohmann::ordered_json::object();
  for (const auto& var : workload.vars)
    out["shape_vars"][var.name] = {{"min", var.min()},
                                   {"max", var.max()},
                                   {"count", var.values.size()},
                                   {"weights", describe_weights(var)}};
  out["ops"] = nlohmann::ordered_json::array();
  size_t all_instances = 0;
  double all_gflop = 0;
  for (const auto& op : workload.ops) {
    OpTotals t = totals(workload, op);
    nlohmann::ordered_json dims = nlohmann::ordered_json::object();
    // As written: constants as numbers, expressions as their canonical text.
    for (const auto& name : dim_names(op.kind)) {
      const Expr& expr = op.dims.at(name);
      if (expr.is_constant())
        dims[name] = expr.constant_value();
      else
        dims[name] = expr.to_string();
    }
    out["ops"].push_back({{"name", op.name},
                          {"op", to_string(op.kind)},
                          {"dtype", to_string(op.dtype)},
                          {"epilogue", to_string(op.epilogue)},
                          {"weight", op.weight},
                          {"vars", op.vars},
                          {"dims", dims},
                          {"args", op.arg_names()},
                          {"instances", t.instances},
                          {"gflops", t.gflop}});
    all_instances += t.instances;
    all_gflop += t.gflop;
  }
  out["instances"] = all_instances;
  out["gflops"] = all_gflop;
  return out;
}

std::string summary_text(const Workload& workload, bool verbose) {
  std::string out = "workload " + workload.name + " (" + workload.source + "): valid\n";
  if (!workload.vars.empty()) {
    TextTable vars;
    vars.add_column("shape var");
    vars.add_column("values");
    vars.add_column("count", TextTable::Align::kRight);
    vars.add_column("weights");
    for (const auto& var : workload.vars)
      vars.add_row({var.name, describe_values(var), std::to_string(var.values.size()),
                    describe_weights(var)});
    out += "\n" + vars.render("  ");
  }
  TextTable ops;
  ops.add_column("op");
  ops.add_column("kind");
  ops.add_column("dtype");
  ops.add_column("dims");
  ops.add_column("epilogue");
  ops.add_column("weight", TextTable::Align::kRight);
  ops.add_column("instances", TextTable::Align::kRight);
  ops.add_column("GFLOP", TextTable::Align::kRight);
  size_t all_instances = 0;
  double all_gflop = 0;
  std::string details;
  for (const auto& op : workload.ops) {
    std::vector<Instance> instances;
    OpTotals t = totals(workload, op, &instances);
    ops.add_row({op.name, to_string(op.kind), to_string(op.dtype), describe_dims(op),
                 to_string(op.epilogue), format_sig(op.weight), std::to_string(t.instances),
                 format_sig(t.gflop, 6)});
    all_instances += t.instances;
    all_gflop += t.gflop;
    if (!verbose) continue;
    // -v lists the expanded instances as GEMMs; `dietcode inspect` has the full table.
    details += "\n  " + op.name + ":\n";
    for (const auto& inst : instances) {
      std::string shape;
      for (size_t i = 0; i < inst.values.size(); ++i)
        shape += (i ? " " : "") + op.vars[i] + "=" + std::to_string(inst.values[i]);
      const GemmShape& g = inst.gemm;
      details += "    " + (shape.empty() ? std::string("(static)") : shape) + "  gemm " +
                 (g.batch > 1 ? std::to_string(g.batch) + "x" : "") + std::to_string(g.M) + "x" +
                 std::to_string(g.N) + "x" + std::to_string(g.K) + "  " +
                 format_sig(inst.flops / 1e9) + " GFLOP\n";
    }
  }
  out += "\n" + ops.render("  ");
  out += "\n  total: " + std::to_string(workload.ops.size()) + " ops, " +
         std::to_string(all_instances) + " instances, " + format_sig(all_gflop, 6) + " GFLOP\n";
  return out + details;
}

int run_validate(const ValidateOptions& options, const GlobalOptions& global) {
  Workload workload = load_workload(options.workload);
  if (options.json) {
    std::printf("%s\n", summary_json(workload).dump(2).c_str());
  } else if (!global.quiet) {
    std::printf("%s", summary_text(workload, global.verbose > 0).c_str());
  }
  return 0;
}

}  // namespace

void register_validate(CLI::App& app, GlobalOptions& global, Action& action) {
  auto options = std::make_shared<ValidateOptions>();
  auto* cmd = app.add_subcommand(
      "validate", "Check a workload file and summarise its operators and shape instances");
  add_global_flags(*cmd, global);
  cmd->add_option("WORKLOAD", options->workload, "Workload file (JSON; see configs/workloads/)")
      ->required();
  cmd->add_flag("--json", options->json, "Print the summary as JSON");
  cmd->footer(
      "Examples:\n"
      "  dietcode validate configs/workloads/bert_base_dense.json\n"
      "  dietcode validate --json configs/workloads/resnet50_nhwc.json\n"
      "Exit code 0 when the workload is valid; 1 with a message naming the file, the JSON\n"
      "path and what is wrong when it is not. -v lists every instance; for a table of them\n"
      "with FLOPs and priorities run 'dietcode inspect WORKLOAD.json'.\n");
  cmd->callback([&action, &global, options] {
    action = [&global, options] { return run_validate(*options, global); };
  });
}

}  // namespace dietcode::cli
