// Reading an ONNX model file for `dietcode import`: the protobuf parsed with Debian's ONNX C++
// library (libonnx-dev), the checks that turn a bad file into one line (not ONNX, truncated,
// an opset this library cannot read, external weight files missing), and ONNX's own shape
// inference run over it.
#pragma once

#include <string>

#include "import/onnx_proto.h"

namespace dietcode::onnx_import {

struct LoadedModel {
  onnx::ModelProto model;
  std::string path;
  int64_t opset = 0;             // the default domain's opset the model imports
  bool shapes_inferred = false;  // ONNX shape inference ran without error
  std::string inference_error;   // what it said when it did not
};

// Throws UserError "MODEL: what is wrong" for a file that cannot be imported.
LoadedModel load_onnx_model(const std::string& path);

}  // namespace dietcode::onnx_import
