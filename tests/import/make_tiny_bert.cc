// make_tiny_bert OUT.onnx: writes the example model examples/onnx/tiny_bert.onnx — a 2-layer
// BERT encoder (hidden 64, 2 heads, FFN 256, random weights from a fixed seed) in the graph
// form torch.onnx.export gives HuggingFace's BertModel encoder with dynamic batch_size and
// sequence_length axes at opset 14: Linear as MatMul + Add with [in, out] weights, reshapes
// whose targets are computed with Shape/Gather/Concat, GELU spelled out with Erf, LayerNorm
// decomposed. It is the graph that matters to `dietcode import`, not the weights.
#include <cstdio>

#include "import/model_zoo.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_tiny_bert OUT.onnx\n");
    return 1;
  }
  dietcode::onnx_test::BertConfig c;
  c.hidden = 64;
  c.heads = 2;
  c.ffn = 256;
  c.layers = 2;
  dietcode::onnx_test::tiny_bert(c).save(argv[1]);
  std::printf("wrote %s\n", argv[1]);
  return 0;
}
