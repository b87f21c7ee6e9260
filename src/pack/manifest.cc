#include "pack/manifest.h"

#include <cmath>
#include <regex>

#include "common/error.h"
#include "common/version.h"
#include "dietcode/pack_abi.h"
#include "pack/c_names.h"

namespace dietcode {

using nlohmann::json;

int arch_number(const std::string& arch, bool* arch_specific) {
  static const std::regex pattern("(sm|compute)_([0-9]+)([af]?)");
  std::smatch m;
  if (!std::regex_match(arch, m, pattern))
    throw UserError("'" + arch + "' is not a GPU arch (expected sm_80, sm_90, sm_90a, ...)");
  if (arch_specific) *arch_specific = m[3] == "a";
  return std::stoi(m[2]);
}

// Times are kept to 0.1 ns: enough for any kernel and short in the file.
static json time_us(double us) {
  if (!std::isfinite(us)) return nullptr;
  return std::round(us * 1e4) / 1e4;
}

static json shape_var_json(const ShapeVar& var) {
  json j = {
      {"name", var.name}, {"min", var.min()}, {"max", var.max()}, {"count", var.values.size()}};
  if (int64_t(var.values.size()) != var.max() - var.min() + 1) j["values"] = var.values;
  return j;
}

static json plan_json(const LaunchPlan& p) {
  json j = {{"entry", p.entry},
            {"threads", p.threads},
            {"dynamic_smem_bytes", p.dynamic_smem_bytes},
            {"tile_m", p.tile_m},
            {"tile_n", p.tile_n},
            {"split_k", p.split_k},
            {"reduce_entry", p.reduce_entry},
            {"reduce_threads", p.reduce_threads},
            {"min_alignment_bytes", p.min_alignment_bytes}};
  // Only for kernels with a TMA producer, so manifests of other packs read as before.
  if (p.tma_box_k > 0) j["tma_box_k"] = p.tma_box_k;
  if (p.m_tiles_per_block > 1) j["m_tiles_per_block"] = p.m_tiles_per_block;
  return j;
}

static json kernel_json(int id, const PackKernel& k) {
  json resources = json::object();
  for (const ArchBinary& bin : k.compiled.binaries) {
    json entries = json::object();
    for (const KernelResources& r : bin.resources)
      entries[r.entry] = {{"registers", r.registers},
                          {"spill_stores", r.spill_stores},
                          {"spill_loads", r.spill_loads},
                          {"static_smem", r.static_smem}};
    resources[bin.arch] = entries;
  }
  return {{"id", id},
          {"template", k.mk.tmpl},
          {"params", k.mk.params},
          {"key", k.mk.key()},
          {"plan", plan_json(k.generated.plan)},
          {"resources", resources}};
}

static json instances_json(const PackInstances& t) {
  auto rows = [](const std::vector<std::vector<double>>& table) {
    json out = json::array();
    for (const auto& row : table) {
      json r = json::array();
      for (double v : row) r.push_back(time_us(v));
      out.push_back(r);
    }
    return out;
  };
  json best = json::array(), weight = json::array();
  for (double v : t.best_us) best.push_back(time_us(v));
  for (double w : t.weight) weight.push_back(std::round(w * 1e9) / 1e9);
  json j = {{"values", t.values},
            {"weight", weight},
            {"best_us", best},
            {"latency_us", rows(t.latency_us)}};
  if (!t.predicted_us.empty()) j["predicted_us"] = rows(t.predicted_us);
  return j;
}

static json op_json(const Workload& workload, const PackOp& p) {
  const OpSpec& op = *p.op;
  json dims = json::object();
  for (const auto& [name, expr] : op.dims) dims[name] = expr.to_string();
  json j = {{"name", op.name},
            {"function", wrapper_name(workload, op)},
            {"op", to_string(op.kind)},
            {"dtype", to_string(op.dtype)},
            {"epilogue", to_string(op.epilogue)},
            {"weight", op.weight},
            {"vars", op.vars},
            {"args", op.arg_names()},
            {"dims", dims}};
  if (op.kind == OpKind::kDense) j["weight_layout"] = to_string(op.weight_layout);
  if (op.kind == OpKind::kBatchMatmul) {
    j["transpose_a"] = op.transpose_a;
    j["transpose_b"] = op.transpose_b;
  }
  if (op.kind == OpKind::kConv2d) {
    j["stride"] = {op.stride[0], op.stride[1]};
    j["pad"] = {op.pad[0], op.pad[1]};
    j["dilation"] = {op.dilation[0], op.dilation[1]};
  }
  json kernels = json::array();
  for (size_t i = 0; i < p.kernels.size(); ++i)
    kernels.push_back(kernel_json(int(i), p.kernels[i]));
  j["kernels"] = kernels;
  // "tree" is what dietcode_select answers from (the newest arch's dispatcher); a pack with
  // one dispatcher per arch group lists them all under "dispatchers".
  j["tree"] = p.dispatchers.at(0).tree.to_json();
  if (p.dispatchers.size() > 1) {
    json dispatchers = json::array();
    for (const PackDispatcher& d : p.dispatchers)
      dispatchers.push_back({{"archs", d.archs}, {"tree", d.tree.to_json()}});
    j["dispatchers"] = dispatchers;
  }
  j["instances"] = instances_json(p.instances);
  return j;
}

json pack_manifest(const PackRequest& request) {
  const Workload& workload = *request.workload;
  json vars = json::array();
  for (const ShapeVar& var : workload.vars) vars.push_back(shape_var_json(var));
  json ops = json::array();
  std::string ptx_arch;
  for (const PackOp& op : request.ops) {
    ops.push_back(op_json(workload, op));
    for (const PackKernel& k : op.kernels)
      if (!k.compiled.ptx.empty()) ptx_arch = k.compiled.ptx_arch;
  }
  return {{"format", "dietcode-pack"},
          {"abi_version", DIETCODE_ABI_VERSION},
          {"target", to_string(request.target)},
          {"name", workload.name},
          {"tool_version", tool_version()},
          {"archs", request.archs},
          {"ptx_arch", ptx_arch.empty() ? json(nullptr) : json(ptx_arch)},
          {"choices", request.choices},
          {"timing_noise", request.timing_noise},
          {"portable_margin", request.portable_margin},
          {"shape_vars", vars},
          {"ops", ops}};
}

}  // namespace dietcode
