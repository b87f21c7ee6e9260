// dietcode import MODEL.onnx [--dynamic NAME=MIN:MAX[:STEP]]... [--weights NAME=JSON]...
//                            [--name N] [-o WORKLOAD.json] [--json]
// Reads an ONNX model, finds the operators dietcode compiles (src/import/), and writes a
// workload file that `dietcode validate` accepts as it is. The file is checked with the
// workload parser before it is written, and written whole or not at all.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/app.h"
#include "common/error.h"
#include "search/log_merge.h"
#include "workload/names.h"
#include "workload/workload.h"

#ifdef DIETCODE_HAVE_ONNX
#include "import/graph.h"
#include "import/imported_op.h"
#include "import/onnx_model.h"
#include "import/workload_builder.h"
#endif

namespace dietcode::cli {

namespace {

struct ImportOptions {
  std::string model;
  std::vector<std::string> dynamic;
  std::vector<std::string> weights;
  std::string name;
  std::string output;
  std::string weight_layout = "stored";
  bool json = false;
};

// The model's file name as a workload name: "bert-tiny.onnx" -> "bert_tiny".
std::string name_from_path(const std::string& path) {
  return c_identifier(std::filesystem::path(path).stem().string(), "model_");
}

#ifdef DIETCODE_HAVE_ONNX
int run_import(const ImportOptions& o, const GlobalOptions& global) {
  using namespace onnx_import;
  BuildOptions build;
  build.name = o.name.empty() ? name_from_path(o.model) : o.name;
  if (!is_identifier(build.name))
    throw UserError("--name " + quote(build.name) + ": a workload name is a C identifier");
  for (const std::string& d : o.dynamic) build.dynamic.push_back(parse_dynamic(d));
  for (const std::string& w : o.weights) {
    const size_t eq = w.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UserError("--weights " + w + ": expected NAME=JSON, e.g. T='\"uniform\"' or T='[...]'");
    try {
      build.weights[w.substr(0, eq)] = nlohmann::json::parse(w.substr(eq + 1));
    } catch (const nlohmann::json::exception&) {
      throw UserError("--weights " + w + ": the value is not JSON (the workload file's syntax)");
    }
  }
  build.weight_passing =
      o.weight_layout == "NK" ? WeightPassing::kTransposeToNK : WeightPassing::kAsStored;
  const std::string output = o.output.empty() ? build.name + ".json" : o.output;

  LoadedModel loaded = load_onnx_model(o.model);
  Graph graph(loaded.model.graph());
  propagate_shapes(graph);
  ImportReport report = build_workload(match_operators(graph), build, o.model);

  const std::string text = report.workload.dump(2) + "\n";
  try {
    parse_workload(text, output);
  } catch (const UserError& e) {
    throw UserError(o.model + ": the workload made from it does not validate (" + e.what() +
                    "); please report this with the model");
  }
  write_file_atomically(output, text);

  if (o.json) {
    nlohmann::ordered_json j = summary_json(report);
    j["model"] = o.model;
    j["opset"] = loaded.opset;
    j["onnx_shape_inference"] = loaded.shapes_inferred ? "ok" : loaded.inference_error;
    j["output"] = output;
    std::printf("%s\n", j.dump(2).c_str());
  } else if (!global.quiet) {
    std::printf("%s: opset %lld, %d nodes\n", o.model.c_str(), (long long)loaded.opset,
                loaded.model.graph().node_size());
    if (!loaded.shapes_inferred)
      std::printf("note: ONNX shape inference failed (%s); shapes come from dietcode's own "
                  "propagation alone\n", loaded.inference_error.c_str());
    std::printf("%s", summary_text(report).c_str());
    std::printf("wrote %s; next: dietcode tune %s\n", output.c_str(), output.c_str());
  }
  return 0;
}
#else
int run_import(const ImportOptions&, const GlobalOptions&) {
  throw EnvironmentError(
      "this dietcode was built without ONNX import (libonnx-dev was not found when it was "
      "built); install libonnx-dev and rebuild");
}
#endif

}  // namespace

void register_import(CLI::App& app, GlobalOptions& global, Action& action) {
  auto options = std::make_shared<ImportOptions>();
  auto* cmd = app.add_subcommand("import", "Make a workload file from an ONNX model");
  add_global_flags(*cmd, global);
  cmd->add_option("MODEL", options->model, "The model (.onnx)")->required();
  cmd->add_option("--dynamic", options->dynamic,
                  "A symbolic dimension's range: NAME=MIN:MAX[:STEP] or NAME=V1,V2,... "
                  "(repeat for each)");
  cmd->add_option("--weights", options->weights,
                  "A shape variable's weights in the workload file's syntax: NAME=JSON, e.g. "
                  "seq='[...]' or seq='{\"128\": 0.5, ...}'");
  cmd->add_option("--name", options->name, "The workload's name (default: the model's file name)");
  cmd->add_option("-o,--output", options->output, "The workload file (default: NAME.json)");
  cmd->add_option("--weight-layout", options->weight_layout,
                  "How dense weights reach the pack: stored (default): as the model stores them, "
                  "weight_layout KN for a [K,N] MatMul weight (the CPU templates read it in "
                  "place); NK: always [N,K], a [K,N] weight transposed once at load (the only "
                  "layout the GPU templates read)")
      ->check(CLI::IsMember({"stored", "NK"}));
  cmd->add_flag("--json", options->json, "Print the summary as JSON");
  cmd->footer(
      "Examples:\n"
      "  dietcode import bert.onnx --dynamic batch_size=1:8 --dynamic sequence_length=1:128\n"
      "  dietcode import resnet.onnx --dynamic N=1,2,4,8 -o resnet.json --json\n"
      "Maps MatMul and Gemm with a constant weight onto dense, MatMul of two activations onto\n"
      "batch_matmul and 2-D Conv onto conv2d (NCHW in the model, NHWC in dietcode), folds a\n"
      "bias Add, Relu and GELU (the Erf and tanh forms) into the epilogue, and merges identical\n"
      "ops into one whose weight counts them. Each symbolic dimension an op uses needs a\n"
      "--dynamic range. Exit 1 with one line for a model that cannot be imported.\n");
  cmd->callback([&action, &global, options] {
    action = [&global, options] { return run_import(*options, global); };
  });
}

}  // namespace dietcode::cli
