// The models the importer's tests read, built with OnnxBuilder in the forms exporters write
// them. The example model (examples/onnx/tiny_bert.onnx) is tiny_bert() below, saved by
// examples/onnx/make_tiny_bert.cc.
#pragma once

#include <cmath>
#include <string>

#include "import/onnx_builder.h"

namespace dietcode::onnx_test {

enum class LinearForm { kMatMulAdd, kGemm };  // torch Linear on 3-D input / on a 2-D view
enum class GeluForm { kErf, kTanh };

struct BertConfig {
  int64_t hidden = 64, heads = 4, ffn = 256, layers = 2;
  GeluForm gelu = GeluForm::kErf;
  std::string batch = "batch_size", seq = "sequence_length";
};

// y = x W + b as torch.onnx.export writes nn.Linear for a [batch, seq, in] input: MatMul with
// the weight stored [in, out], then Add of the bias.
inline std::string linear(OnnxBuilder& b, const std::string& x, int64_t in, int64_t out,
                          const std::string& prefix) {
  const std::string w = b.weight(prefix + ".weight", {in, out});
  const std::string bias = b.weight(prefix + ".bias", {out});
  const std::string mm = b.node("MatMul", {x, w}, {}, "/" + prefix + "/MatMul");
  return b.node("Add", {bias, mm}, {}, "/" + prefix + "/Add");
}

// LayerNorm over the last axis, decomposed as opset-14 exports write it.
inline std::string layer_norm(OnnxBuilder& b, const std::string& x, int64_t hidden,
                              const std::string& prefix) {
  const std::string mean = b.node("ReduceMean", {x}, {{"axes", std::vector<int64_t>{-1}}}, "/" + prefix + "/ReduceMean");
  const std::string d = b.node("Sub", {x, mean}, {}, "/" + prefix + "/Sub");
  const std::string sq = b.node("Pow", {d, b.scalar(2.0f)}, {}, "/" + prefix + "/Pow");
  const std::string var = b.node("ReduceMean", {sq}, {{"axes", std::vector<int64_t>{-1}}}, "/" + prefix + "/ReduceMean_1");
  const std::string eps = b.node("Add", {var, b.scalar(1e-12f)}, {}, "/" + prefix + "/Add");
  const std::string sd = b.node("Sqrt", {eps}, {}, "/" + prefix + "/Sqrt");
  const std::string n = b.node("Div", {d, sd}, {}, "/" + prefix + "/Div");
  const std::string g = b.node("Mul", {n, b.weight(prefix + ".weight", {hidden})}, {}, "/" + prefix + "/Mul");
  return b.node("Add", {g, b.weight(prefix + ".bias", {hidden})}, {}, "/" + prefix + "/Add_1");
}

// One BERT encoder layer as HuggingFace's BertLayer exports with dynamic batch and sequence.
inline std::string bert_layer(OnnxBuilder& b, const std::string& x, const BertConfig& c, int i) {
  const std::string p = "encoder/layer." + std::to_string(i);
  const int64_t dh = c.hidden / c.heads;
  auto heads_view = [&](const std::string& t) {  // [B,T,H] -> [B,T,heads,dh]
    return b.dynamic_reshape(t, x, {0, 1, c.heads, dh}, {true, true, false, false});
  };
  const std::string q = linear(b, x, c.hidden, c.hidden, p + "/attention/self/query");
  const std::string k = linear(b, x, c.hidden, c.hidden, p + "/attention/self/key");
  const std::string v = linear(b, x, c.hidden, c.hidden, p + "/attention/self/value");
  const std::string qt = b.node("Transpose", {heads_view(q)}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  const std::string kt = b.node("Transpose", {heads_view(k)}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
  const std::string vt = b.node("Transpose", {heads_view(v)}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  const std::string scores = b.node("MatMul", {qt, kt}, {}, "/" + p + "/attention/self/MatMul");
  const std::string scaled = b.node("Div", {scores, b.scalar(std::sqrt(float(dh)))});
  const std::string probs = b.node("Softmax", {scaled}, {{"axis", int64_t(-1)}});
  const std::string ctx = b.node("MatMul", {probs, vt}, {}, "/" + p + "/attention/self/MatMul_1");
  const std::string ctx_t = b.node("Transpose", {ctx}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  const std::string merged = b.dynamic_reshape(ctx_t, x, {0, 1, c.hidden}, {true, true, false});
  const std::string attn = linear(b, merged, c.hidden, c.hidden, p + "/attention/output/dense");
  const std::string res1 = b.node("Add", {attn, x});
  const std::string ln1 = layer_norm(b, res1, c.hidden, p + "/attention/output/LayerNorm");
  const std::string h = linear(b, ln1, c.hidden, c.ffn, p + "/intermediate/dense");
  const std::string act = c.gelu == GeluForm::kErf ? b.gelu_erf(h, "/" + p + "/intermediate/intermediate_act_fn")
                                                   : b.gelu_tanh(h, "/" + p + "/intermediate/intermediate_act_fn");
  const std::string o = linear(b, act, c.ffn, c.hidden, p + "/output/dense");
  const std::string res2 = b.node("Add", {o, ln1});
  return layer_norm(b, res2, c.hidden, p + "/output/LayerNorm");
}

// A BERT encoder: input embeddings [batch, seq, hidden] through `layers` layers.
inline OnnxBuilder tiny_bert(const BertConfig& c = {}) {
  OnnxBuilder b;
  std::string x = b.input("hidden_states", {c.batch, c.seq, c.hidden});
  for (int i = 0; i < c.layers; ++i) x = bert_layer(b, x, c, i);
  b.output(x);
  return b;
}

// GPT-2's MLP as HuggingFace's Conv1D exports it: the activations viewed as [-1, n_embd]
// rows, Gemm with the weight stored [in, out] (transB = 0) and the bias as C, GELU in the
// tanh form ("gelu_new"), and the view back.
inline OnnxBuilder gpt2_mlp(int64_t embd = 64) {
  OnnxBuilder b;
  const std::string x = b.input("x", {"batch", "seq", embd});
  const std::string rows = b.node("Reshape", {x, b.ints({-1, embd})}, {}, "/h.0/mlp/c_fc/Reshape");
  const std::string fc = b.node("Gemm", {rows, b.weight("h.0.mlp.c_fc.weight", {embd, 4 * embd}),
                                         b.weight("h.0.mlp.c_fc.bias", {4 * embd})},
                                {}, "/h.0/mlp/c_fc/Gemm");
  const std::string act = b.gelu_tanh(fc, "/h.0/mlp/act");
  const std::string proj = b.node("Gemm", {act, b.weight("h.0.mlp.c_proj.weight", {4 * embd, embd}),
                                           b.weight("h.0.mlp.c_proj.bias", {embd})},
                                  {}, "/h.0/mlp/c_proj/Gemm");
  const std::string shape = b.node("Shape", {x});
  const std::string y = b.node("Reshape", {proj, shape}, {}, "/h.0/mlp/Reshape");
  b.output(y);
  return b;
}

// A ResNet-style block on NCHW input with a dynamic batch N: conv 3x3 + bias + relu, conv 3x3
// stride 2 + bias, then pooling and a classifier Gemm (transB = 1, as torch exports Linear on
// 2-D input).
inline OnnxBuilder conv_block() {
  OnnxBuilder b;
  const std::string x = b.input("images", {"N", 16, 32, 32});
  const std::string c1 = b.node("Conv", {x, b.weight("conv1.weight", {32, 16, 3, 3}), b.weight("conv1.bias", {32})},
                                {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}},
                                "/conv1/Conv");
  const std::string r1 = b.node("Relu", {c1}, {}, "/relu1/Relu");
  const std::string c2 = b.node("Conv", {r1, b.weight("conv2.weight", {64, 32, 3, 3}), b.weight("conv2.bias", {64})},
                                {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                                 {"strides", std::vector<int64_t>{2, 2}}},
                                "/conv2/Conv");
  const std::string pool = b.node("GlobalAveragePool", {c2});
  const std::string flat = b.node("Flatten", {pool}, {{"axis", int64_t(1)}});
  const std::string fc = b.node("Gemm", {flat, b.weight("fc.weight", {10, 64}), b.weight("fc.bias", {10})},
                                {{"transB", int64_t(1)}}, "/fc/Gemm");
  b.output(fc);
  return b;
}

}  // namespace dietcode::onnx_test
