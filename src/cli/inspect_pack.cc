#include "cli/inspect_pack.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "dispatch/decision_tree.h"

namespace dietcode::cli {
namespace {

using nlohmann::json;
using SelectFn = int (*)(const char*, const int64_t*, int);
using SelectArchFn = int (*)(const char*, int, const int64_t*, int);

struct Pack {
  json manifest;
  SelectFn select = nullptr;
  SelectArchFn select_arch = nullptr;
};

// The number dietcode_select_arch takes for an arch: "sm_90a" -> 90; a CPU pack's x86-64 level,
// "x86-64-v4" -> 4.
int arch_cc(const std::string& arch) {
  if (arch.rfind("x86-64-v", 0) == 0) return std::atoi(arch.c_str() + 8);
  return std::atoi(arch.c_str() + arch.find('_') + 1);
}

bool cpu_pack(const json& manifest) { return manifest.value("target", "cuda") == "cpu"; }

// The handle stays open: the pack is tiny and the process ends soon after.
Pack load_pack(const std::string& path) {
  std::string where = path.find('/') == std::string::npos ? "./" + path : path;
  void* handle = dlopen(where.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw UserError(path + ": cannot load the pack: " + dlerror());
  auto manifest = reinterpret_cast<const char* (*)()>(dlsym(handle, "dietcode_manifest"));
  Pack pack;
  pack.select = reinterpret_cast<SelectFn>(dlsym(handle, "dietcode_select"));
  pack.select_arch = reinterpret_cast<SelectArchFn>(dlsym(handle, "dietcode_select_arch"));
  if (!manifest || !pack.select || !pack.select_arch)
    throw UserError(path + ": not a dietcode kernel pack (it has no dietcode_manifest)");
  try {
    pack.manifest = json::parse(manifest());
  } catch (const json::parse_error& e) {
    throw UserError(path + ": the pack's manifest is not valid JSON: " + e.what());
  }
  return pack;
}

std::string us(const json& v) {
  return v.is_number() ? fmt::format("{:.3f} us", v.get<double>()) : std::string("-");
}

std::string join(const json& items) {
  std::string out;
  for (const json& i : items) out += (out.empty() ? "" : ", ") + i.get<std::string>();
  return out;
}

std::string kernel_line(const json& k, bool cpu) {
  const json& plan = k["plan"];
  if (cpu) {
    // A CPU kernel: the ISA level it was compiled for, and its register tile.
    std::string level;
    for (const auto& [arch, entries] : k["resources"].items()) level += (level.empty() ? "" : ", ") + arch;
    return fmt::format("{:>4}  {}  {}, register tile {}x{}", k["id"].get<int>(),
                       k["key"].get<std::string>(), level.empty() ? "?" : level,
                       plan["tile_m"].get<int>(), plan["tile_n"].get<int>());
  }
  std::string regs;
  for (const auto& [arch, entries] : k["resources"].items())
    for (const auto& [entry, r] : entries.items())
      if (entry == plan["entry"])
        regs += fmt::format(", {} regs ({})", r["registers"].get<int>(), arch);
  // A TMA producer: the pack encodes tensor maps on every launch (a CUDA 12.0+ driver).
  std::string tma = plan.value("tma_box_k", 0) > 0 ? ", TMA" : "";
  const int m_tiles = plan.value("m_tiles_per_block", 1);
  std::string walk = m_tiles > 1 ? fmt::format(", {} M tiles per block", m_tiles) : "";
  return fmt::format("{:>4}  {}  tile {}x{}{}, {} threads, split-K {}{}{}", k["id"].get<int>(),
                     k["key"].get<std::string>(), plan["tile_m"].get<int>(),
                     plan["tile_n"].get<int>(), walk, plan["threads"].get<int>(),
                     plan["split_k"].get<int>(), tma, regs);
}

void print_tree(const json& node, int indent) {
  std::string pad(indent, ' ');
  if (node.contains("kernel")) {
    std::printf(
        "%skernel %d   %d instance(s); time lost mean %.3f us (%.2f%%), max %.3f us "
        "(%.2f%%)\n",
        pad.c_str(), node["kernel"].get<int>(), node.value("instances", 0),
        node.value("mean_regret_us", 0.0), node.value("mean_regret_pct", 0.0),
        node.value("max_regret_us", 0.0), node.value("max_regret_pct", 0.0));
    return;
  }
  std::printf("%sif %s <= %lld:\n", pad.c_str(), node["var"].get<std::string>().c_str(),
              (long long)node["le"].get<int64_t>());
  print_tree(node["left"], indent + 2);
  std::printf("%selse:\n", pad.c_str());
  print_tree(node["right"], indent + 2);
}

void print_manifest(const std::string& path, const json& m) {
  const bool cpu = cpu_pack(m);
  if (cpu)
    std::printf("pack %s (%s): dietcode %s, ABI %d, CPU pack (host pointers, NULL stream) for %s\n",
                m["name"].get<std::string>().c_str(), path.c_str(),
                m["tool_version"].get<std::string>().c_str(), m["abi_version"].get<int>(),
                join(m["archs"]).c_str());
  else
    std::printf(
        "pack %s (%s): dietcode %s, ABI %d, CUBIN for %s%s\n", m["name"].get<std::string>().c_str(),
        path.c_str(), m["tool_version"].get<std::string>().c_str(), m["abi_version"].get<int>(),
        join(m["archs"]).c_str(),
        m["ptx_arch"].is_string() ? (", PTX " + m["ptx_arch"].get<std::string>()).c_str() : "");
  std::printf("choices: %s\n", m["choices"].get<std::string>().c_str());
  // Packs before the field have none; trees fitted for noise lose time against each
  // instance's best as measured, noise and all, by design.
  if (const double noise = m.value("timing_noise", 0.0); noise > 0)
    std::printf("dispatchers fitted for a timing noise of %.1f%% of a time: a kernel or a split "
                "only for a gain beyond twice its noise, so a leaf may lose time against an "
                "instance's best as measured\n",
                100 * noise);
  if (const double margin = m.value("portable_margin", 0.0); margin > 0)
    std::printf("a kernel every arch runs (AVX2 on a CPU) served on an arch with kernels of its "
                "own (x86-64-v4) only where measured more than %.0f%% faster than those\n",
                100 * margin);
  for (const json& v : m["shape_vars"])
    std::printf("shape variable %s: tuned over [%lld, %lld], %lld value(s)\n",
                v["name"].get<std::string>().c_str(), (long long)v["min"].get<int64_t>(),
                (long long)v["max"].get<int64_t>(), (long long)v["count"].get<int64_t>());
  for (const json& op : m["ops"]) {
    std::string dims;
    for (const auto& [d, e] : op["dims"].items()) dims += ", " + d + " = " + e.get<std::string>();
    std::printf("\nop %s: %s %s%s%s -> %s(%s, %s, stream)\n", op["name"].get<std::string>().c_str(),
                op["op"].get<std::string>().c_str(), op["dtype"].get<std::string>().c_str(),
                op["epilogue"] == "none" ? "" : (" + " + op["epilogue"].get<std::string>()).c_str(),
                dims.c_str(), op["function"].get<std::string>().c_str(), join(op["args"]).c_str(),
                join(op["vars"]).c_str());
    std::printf("  kernels:\n");
    for (const json& k : op["kernels"]) std::printf("  %s\n", kernel_line(k, cpu).c_str());
    DecisionTree tree = DecisionTree::from_json(op["tree"]);
    if (op["instances"]["values"].empty()) {
      std::printf("  dispatcher: kernel 0 for every shape (no measurements: untuned)\n");
      continue;
    }
    std::printf(
        "  dispatcher: %d leaf/leaves, depth %d; time lost against the best kernel "
        "measured on each tuned instance:\n",
        tree.leaf_count(), tree.depth());
    if (!op.contains("dispatchers")) {
      print_tree(op["tree"]["root"], 4);
      continue;
    }
    // One tree per group of archs: kernels that run on one arch only (sm_90a) are in that
    // arch's tree alone.
    for (const json& d : op["dispatchers"]) {
      DecisionTree t = DecisionTree::from_json(d["tree"]);
      std::printf("    on %s: %d leaf/leaves, depth %d\n", join(d["archs"]).c_str(), t.leaf_count(),
                  t.depth());
      print_tree(d["tree"]["root"], 6);
    }
  }
}

// "B=2,T=37" -> {B: 2, T: 37}, checked against the pack's shape variables.
std::map<std::string, int64_t> parse_shape(const std::string& text, const json& manifest) {
  std::map<std::string, int64_t> out;
  std::string known;
  for (const json& v : manifest["shape_vars"])
    known += (known.empty() ? "" : ", ") + v["name"].get<std::string>();
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    start = end + 1;
    size_t eq = item.find('=');
    char* rest = nullptr;
    long long value = eq == std::string::npos ? 0 : std::strtoll(item.c_str() + eq + 1, &rest, 10);
    if (eq == std::string::npos || eq == 0 || rest == item.c_str() + eq + 1 || *rest)
      throw UserError("inspect --shape: expected VAR=VALUE[,VAR=VALUE...], got '" + text + "'");
    std::string var = item.substr(0, eq);
    if ((", " + known + ",").find(", " + var + ",") == std::string::npos)
      throw UserError("inspect --shape: the pack has no shape variable " + var + " (it has " +
                      known + ")");
    out[var] = value;
  }
  if (out.empty())
    throw UserError("inspect --shape: expected VAR=VALUE[,VAR=VALUE...], got '" + text + "'");
  return out;
}

json explain(const json& op, const std::vector<int64_t>& values, const Pack& pack) {
  DecisionTree tree = DecisionTree::from_json(op["tree"]);
  json out = {{"op", op["name"]}};
  json path = json::array();
  std::vector<int> nodes = tree.path(values.data());
  for (size_t i = 0; i + 1 < nodes.size(); ++i) {
    const TreeNode& n = tree.nodes()[nodes[i]];
    path.push_back({{"var", tree.vars()[n.var]},
                    {"value", values[n.var]},
                    {"le", n.threshold},
                    {"taken", values[n.var] <= n.threshold}});
  }
  int kernel = tree.select(values.data());
  out["path"] = path;
  out["kernel"] = kernel;
  out["key"] = op["kernels"][kernel]["key"];
  const std::string name = op["name"].get<std::string>();
  int from_pack = pack.select(name.c_str(), values.data(), int(values.size()));
  if (from_pack != kernel) out["pack_select"] = from_pack;  // would be a generator bug
  if (op.contains("dispatchers")) {
    json on_arch = json::array();
    for (const json& d : op["dispatchers"]) {
      int k = DecisionTree::from_json(d["tree"]).select(values.data());
      json row = {{"archs", d["archs"]}, {"kernel", k}, {"key", op["kernels"][k]["key"]}};
      int cc = arch_cc(d["archs"][0].get<std::string>());
      int picked = pack.select_arch(name.c_str(), cc, values.data(), int(values.size()));
      if (picked != k) row["pack_select"] = picked;
      on_arch.push_back(row);
    }
    out["on_arch"] = on_arch;
  }
  const json& t = op["instances"];
  out["tuned"] = false;
  out["untuned_op"] = t["values"].empty();
  for (size_t row = 0; row < t["values"].size(); ++row) {
    if (t["values"][row].get<std::vector<int64_t>>() != values) continue;
    const json& lat = t["latency_us"][row];
    out["tuned"] = true;
    out["measured_us"] = lat[kernel];
    out["best_us"] = t["best_us"][row];
    if (t.contains("predicted_us")) out["predicted_us"] = t["predicted_us"][row][kernel];
    if (lat[kernel].is_number() && t["best_us"][row].is_number())
      out["regret_us"] = lat[kernel].get<double>() - t["best_us"][row].get<double>();
    int runner = -1;
    for (size_t k = 0; k < lat.size(); ++k)
      if (int(k) != kernel && lat[k].is_number() &&
          (runner < 0 || lat[k].get<double>() < lat[runner].get<double>()))
        runner = int(k);
    if (runner >= 0)
      out["runner_up"] = {
          {"kernel", runner}, {"key", op["kernels"][runner]["key"]}, {"measured_us", lat[runner]}};
  }
  return out;
}

void print_explanation(const json& e, const std::string& shape) {
  std::printf("op %s at %s:\n  path:", e["op"].get<std::string>().c_str(), shape.c_str());
  if (e["path"].empty()) std::printf(" (a single leaf)");
  for (const json& step : e["path"])
    std::printf(" %s=%lld %s %lld;", step["var"].get<std::string>().c_str(),
                (long long)step["value"].get<int64_t>(), step["taken"].get<bool>() ? "<=" : ">",
                (long long)step["le"].get<int64_t>());
  std::printf("\n  kernel %d: %s\n", e["kernel"].get<int>(), e["key"].get<std::string>().c_str());
  if (e.contains("pack_select"))
    std::printf("  WARNING: the pack's own dispatcher picks kernel %d\n",
                e["pack_select"].get<int>());
  if (e.contains("on_arch"))
    for (const json& row : e["on_arch"]) {
      std::printf("  on %s: kernel %d: %s\n", join(row["archs"]).c_str(), row["kernel"].get<int>(),
                  row["key"].get<std::string>().c_str());
      if (row.contains("pack_select"))
        std::printf("  WARNING: the pack's own dispatcher for %s picks kernel %d\n",
                    join(row["archs"]).c_str(), row["pack_select"].get<int>());
    }
  if (!e["tuned"].get<bool>()) {
    std::printf("  %s\n", e["untuned_op"].get<bool>()
                              ? "no measured time: this op of the pack is untuned"
                              : "not a tuned instance: no measured time (the tree extends the "
                                "nearest tuned values)");
    return;
  }
  std::printf("  measured %s; best measured %s", us(e["measured_us"]).c_str(),
              us(e["best_us"]).c_str());
  if (e.contains("regret_us")) std::printf(" (time lost %s)", us(e["regret_us"]).c_str());
  if (e.contains("predicted_us")) std::printf("; predicted %s", us(e["predicted_us"]).c_str());
  std::printf("\n");
  if (e.contains("runner_up"))
    std::printf("  runner-up: kernel %d (%s), measured %s\n", e["runner_up"]["kernel"].get<int>(),
                e["runner_up"]["key"].get<std::string>().c_str(),
                us(e["runner_up"]["measured_us"]).c_str());
  else
    std::printf("  runner-up: none (no other kernel of the pack was measured here)\n");
}

}  // namespace

int inspect_pack(const std::string& path, bool as_json, const std::string& shape) {
  Pack pack = load_pack(path);
  const json& m = pack.manifest;
  if (shape.empty()) {
    if (as_json)
      std::printf("%s\n", m.dump(2).c_str());
    else
      print_manifest(path, m);
    return 0;
  }
  std::map<std::string, int64_t> given = parse_shape(shape, m);
  json explained = json::array();
  for (const json& op : m["ops"]) {
    std::vector<int64_t> values;
    for (const json& var : op["vars"]) {
      auto it = given.find(var.get<std::string>());
      if (it == given.end()) break;
      values.push_back(it->second);
    }
    if (values.size() != op["vars"].size()) continue;
    for (int64_t v : values)
      if (v < 1)
        throw UserError("inspect --shape: values must be 1 or more, got " + std::to_string(v));
    explained.push_back(explain(op, values, pack));
  }
  if (explained.empty())
    throw UserError("inspect --shape: no op of the pack uses exactly these variables");
  if (as_json) {
    std::printf("%s\n", json({{"shape", given}, {"ops", explained}}).dump(2).c_str());
  } else {
    for (size_t i = 0; i < explained.size(); ++i) {
      if (i) std::printf("\n");
      print_explanation(explained[i], shape);
    }
  }
  return 0;
}

int inspect_pack(const std::string& path, bool as_json, const std::vector<std::string>& shapes) {
  std::string joined;
  for (const std::string& s : shapes) joined += (joined.empty() ? "" : ",") + s;
  return inspect_pack(path, as_json, joined);
}

}  // namespace dietcode::cli
