#include "import/onnx_model.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace dietcode::onnx_import {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw UserError(path + ": " + what);
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) fail(path, "no such file");
  if (fs::is_directory(path, ec)) fail(path, "is a directory, not an ONNX model file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot be opened for reading");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in.good() && !in.eof()) fail(path, "could not be read to the end");
  return bytes.str();
}

// The highest opset of the default domain this library has schemas for.
int64_t newest_known_opset() {
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = ranges.find("");
  return it == ranges.end() ? 0 : it->second.second;
}

// Initializers stored outside the model (data_location EXTERNAL): the files must be there,
// relative to the model's folder, even though import reads only their shapes.
void check_external_data(const onnx::GraphProto& graph, const std::string& path) {
  const fs::path folder = fs::path(path).parent_path();
  for (const onnx::TensorProto& t : graph.initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    std::string location;
    for (const auto& entry : t.external_data())
      if (entry.key() == "location") location = entry.value();
    if (location.empty())
      fail(path, "initializer '" + t.name() + "' is stored externally but names no file");
    std::error_code ec;
    if (!fs::exists(folder / location, ec))
      fail(path, "external weight file '" + location + "' (initializer '" + t.name() +
                     "') is missing; it must sit beside the model");
  }
}

}  // namespace

LoadedModel load_onnx_model(const std::string& path) {
  LoadedModel loaded;
  loaded.path = path;
  const std::string bytes = read_file(path);
  if (bytes.empty()) fail(path, "is empty, not an ONNX model");
  if (!loaded.model.ParseFromString(bytes))
    fail(path, "is not an ONNX model, or it is truncated (the protobuf does not parse)");
  if (!loaded.model.has_graph() || loaded.model.ir_version() <= 0)
    fail(path, "is not an ONNX model (no graph or no IR version; a protobuf of another kind?)");
  if (loaded.model.graph().node_size() == 0) fail(path, "the model's graph has no nodes");

  for (const auto& opset : loaded.model.opset_import())
    if (opset.domain().empty() || opset.domain() == "ai.onnx") loaded.opset = opset.version();
  if (loaded.opset == 0) fail(path, "the model imports no opset of the default ONNX domain");
  const int64_t newest = newest_known_opset();
  if (loaded.opset > newest)
    fail(path, "opset " + std::to_string(loaded.opset) + " is newer than this ONNX library (" +
                   std::to_string(newest) + ") can read; export with opset_version=" +
                   std::to_string(newest) + " or lower");
  check_external_data(loaded.model.graph(), path);

  // ONNX's inference fills graph.value_info; where it fails (an op it does not know, a
  // contradiction) import goes on with its own propagation and says so.
  try {
    onnx::shape_inference::InferShapes(loaded.model);
    loaded.shapes_inferred = true;
  } catch (const std::exception& e) {
    loaded.inference_error = e.what();
  }
  return loaded;
}

}  // namespace dietcode::onnx_import
