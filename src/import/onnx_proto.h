// The ONNX protobuf types (onnx::ModelProto, GraphProto, NodeProto, TensorProto), from Debian's
// libonnx-dev. Its CMake package defines ONNX_NAMESPACE (and ONNX_ML) for its users; the
// defaults here keep a compile without them working the same way.
#pragma once

#ifndef ONNX_NAMESPACE
#define ONNX_NAMESPACE onnx
#endif

#include <onnx/onnx_pb.h>
