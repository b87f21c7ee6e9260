// dietcode import: models made here (model_zoo.h) in the forms exporters write, through the
// importer's stages and through the CLI; bad files end in one line and exit 1, leaving no file.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "import/graph.h"
#include "import/imported_op.h"
#include "import/model_zoo.h"
#include "import/onnx_model.h"
#include "import/workload_builder.h"
#include "workload/describe.h"
#include "workload/workload.h"

namespace dietcode::onnx_import {
namespace {

namespace fs = std::filesystem;
using onnx_test::OnnxBuilder;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "onnx-import-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  fs::path operator/(const std::string& name) const { return path_ / name; }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

ImportReport import_model(const OnnxBuilder& b, const std::vector<std::string>& dynamic,
                          WeightPassing weights = WeightPassing::kAsStored) {
  TempDir dir;
  const std::string path = (dir / "model.onnx").string();
  b.save(path);
  LoadedModel loaded = load_onnx_model(path);
  Graph graph(loaded.model.graph());
  propagate_shapes(graph);
  BuildOptions options;
  options.name = "imported";
  options.weight_passing = weights;
  for (const std::string& d : dynamic) options.dynamic.push_back(parse_dynamic(d));
  return build_workload(match_operators(graph), options, path);
}

// The workload op at `i` as JSON, and the op the report merged.
const nlohmann::ordered_json& op_json(const ImportReport& r, size_t i) { return r.workload["ops"][i]; }

std::string dim(const nlohmann::ordered_json& op, const std::string& name) {
  const auto& v = op[name];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

const MergedOp* find_op(const ImportReport& r, const std::string& kind, const std::string& n,
                        const std::string& k) {
  for (size_t i = 0; i < r.ops.size(); ++i) {
    const auto& o = op_json(r, i);
    if (o["op"] == kind && dim(o, "N") == n && dim(o, "K") == k) return &r.ops[i];
  }
  return nullptr;
}

const nlohmann::ordered_json& json_of(const ImportReport& r, const MergedOp* op) {
  return op_json(r, size_t(op - r.ops.data()));
}

TEST(OnnxImport, BertEncoderWithErfGeluBecomesFiveOpsWithSymbolicRows) {
  onnx_test::BertConfig c;  // hidden 64, 4 heads, ffn 256, 2 layers, Erf GELU
  ImportReport r = import_model(onnx_test::tiny_bert(c),
                                {"batch_size=1:8", "sequence_length=1:128"});
  ASSERT_EQ(r.ops.size(), 5u) << r.workload.dump(2);

  // query, key, value and the attention output: one op, four per layer.
  const MergedOp* qkvo = find_op(r, "dense", "64", "64");
  ASSERT_TRUE(qkvo);
  EXPECT_EQ(qkvo->name, "encoder_layer_0_attention_self_query");
  EXPECT_EQ(qkvo->nodes.size(), 8u);
  EXPECT_EQ(dim(json_of(r, qkvo), "M"), "batch_size*sequence_length");
  EXPECT_EQ(json_of(r, qkvo)["epilogue"], "bias");
  EXPECT_EQ(json_of(r, qkvo)["weight"], 8);
  // MatMul's weight initializer is [K,N]: taken as stored.
  EXPECT_EQ(json_of(r, qkvo)["weight_layout"], "KN");
  EXPECT_NE(json_of(r, qkvo)["note"].get<std::string>().find("as stored ([K,N], weight_layout KN)"),
            std::string::npos)
      << json_of(r, qkvo)["note"];

  const MergedOp* fc1 = find_op(r, "dense", "256", "64");
  ASSERT_TRUE(fc1);
  EXPECT_EQ(json_of(r, fc1)["epilogue"], "bias_gelu");
  EXPECT_EQ(fc1->op.folded, (std::vector<std::string>{"Add (bias)", "GELU (Erf)"}));
  EXPECT_EQ(fc1->nodes.size(), 2u);

  const MergedOp* fc2 = find_op(r, "dense", "64", "256");
  ASSERT_TRUE(fc2);
  EXPECT_EQ(json_of(r, fc2)["epilogue"], "bias");

  // Attention scores [B*heads, T, T] and context [B*heads, T, 16].
  const MergedOp* qk = find_op(r, "batch_matmul", "sequence_length", "16");
  ASSERT_TRUE(qk);
  EXPECT_EQ(dim(json_of(r, qk), "B"), "4*batch_size");
  EXPECT_EQ(dim(json_of(r, qk), "M"), "sequence_length");
  EXPECT_EQ(qk->name, "encoder_layer_0_attention_self");
  const MergedOp* av = find_op(r, "batch_matmul", "16", "sequence_length");
  ASSERT_TRUE(av);
  EXPECT_EQ(av->name, "encoder_layer_0_attention_self_2");
  EXPECT_FALSE(json_of(r, av).contains("epilogue"));

  EXPECT_DOUBLE_EQ(r.covered_flops, r.total_flops);
  EXPECT_TRUE(r.not_covered.empty());
  // The workload validates as it is.
  Workload w = parse_workload(r.workload.dump(2), "imported.json");
  EXPECT_EQ(w.vars.size(), 2u);
  EXPECT_EQ(w.find_var("sequence_length")->max(), 128);
  // LayerNorm, Softmax, the residual Adds and the reshapes are left to the framework.
  EXPECT_EQ(r.other_op_types.at("Softmax"), 2);
}

TEST(OnnxImport, WeightLayoutNKAsksForTheTransposeOfKNWeights) {
  onnx_test::BertConfig c;
  c.layers = 1;
  ImportReport r = import_model(onnx_test::tiny_bert(c), {"batch_size=1:8", "sequence_length=1:128"},
                                WeightPassing::kTransposeToNK);
  const MergedOp* qkvo = find_op(r, "dense", "64", "64");
  ASSERT_TRUE(qkvo);
  EXPECT_FALSE(json_of(r, qkvo).contains("weight_layout"));  // NK, the default
  const std::string note = json_of(r, qkvo)["note"].get<std::string>();
  EXPECT_EQ(note.find("W is the transpose of initializer '"), 0u) << note;
  EXPECT_NE(note.find("pass it as [N,K], transposed once at load"), std::string::npos) << note;
  Workload w = parse_workload(r.workload.dump(2), "imported.json");
  for (const OpSpec& op : w.ops)
    if (op.kind == OpKind::kDense) EXPECT_TRUE(op.b_k_contiguous()) << op.name;
}

TEST(OnnxImport, TanhGeluFoldsLikeTheErfForm) {
  onnx_test::BertConfig c;
  c.gelu = onnx_test::GeluForm::kTanh;
  c.layers = 1;
  ImportReport r = import_model(onnx_test::tiny_bert(c), {"batch_size=1:4", "sequence_length=8:64:8"});
  const MergedOp* fc1 = find_op(r, "dense", "256", "64");
  ASSERT_TRUE(fc1);
  EXPECT_EQ(json_of(r, fc1)["epilogue"], "bias_gelu");
  EXPECT_EQ(fc1->op.folded.back(), "GELU (tanh)");
  EXPECT_EQ(r.workload["shape_vars"]["sequence_length"]["step"], 8);
  EXPECT_EQ(r.other_op_types.count("Tanh"), 0u);
}

TEST(OnnxImport, Gpt2MlpReshapedToRowsGetsBatchTimesSeqFromTheMinusOne) {
  ImportReport r = import_model(onnx_test::gpt2_mlp(64), {"batch=1:4", "seq=1:64"});
  ASSERT_EQ(r.ops.size(), 2u) << r.workload.dump(2);
  const auto& fc = op_json(r, 0);
  EXPECT_EQ(r.ops[0].name, "h_0_mlp_c_fc");
  EXPECT_EQ(dim(fc, "M"), "batch*seq");
  EXPECT_EQ(dim(fc, "N"), "256");
  EXPECT_EQ(fc["epilogue"], "bias_gelu");
  // Gemm with transB = 0 stores the weight [K,N], and the workload takes it so.
  EXPECT_EQ(fc["weight_layout"], "KN");
  EXPECT_NE(fc["note"].get<std::string>().find("as stored ([K,N]"), std::string::npos);
  EXPECT_EQ(op_json(r, 1)["epilogue"], "bias");
}

TEST(OnnxImport, ConvBlockIsNhwcConv2dWithItsGeometryAndSaysSo) {
  ImportReport r = import_model(onnx_test::conv_block(), {"N=1,2,4,8"});
  ASSERT_EQ(r.ops.size(), 3u) << r.workload.dump(2);
  const auto& c1 = op_json(r, 0);
  EXPECT_EQ(c1["op"], "conv2d");
  EXPECT_EQ(c1["layout"], "NHWC");
  EXPECT_EQ(dim(c1, "N"), "N");
  EXPECT_EQ(dim(c1, "C"), "16");
  EXPECT_EQ(dim(c1, "H"), "32");
  EXPECT_EQ(dim(c1, "K"), "32");
  EXPECT_EQ(c1["pad"], 1);
  EXPECT_EQ(c1["epilogue"], "bias_relu");
  EXPECT_NE(c1["note"].get<std::string>().find("NCHW"), std::string::npos);
  const auto& c2 = op_json(r, 1);
  EXPECT_EQ(c2["stride"], 2);
  EXPECT_EQ(c2["epilogue"], "bias");
  const auto& fc = op_json(r, 2);
  EXPECT_EQ(fc["op"], "dense");
  EXPECT_EQ(dim(fc, "M"), "N");
  EXPECT_EQ(fc["epilogue"], "bias");
  EXPECT_NE(fc["note"].get<std::string>().find("as stored ([N,K])"), std::string::npos);
  EXPECT_FALSE(fc.contains("weight_layout"));
  EXPECT_EQ(r.workload["shape_vars"]["N"]["values"], nlohmann::json::array({1, 2, 4, 8}));
  parse_workload(r.workload.dump(), "conv.json");
}

TEST(OnnxImport, ATransposeOfTheLastTwoAxesBecomesTransposeB) {
  OnnxBuilder b;
  const std::string q = b.input("q", {"B", 8, "T", 32});
  const std::string k = b.input("k", {"B", 8, "T", 32});
  const std::string kt = b.node("Transpose", {k}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
  const std::string s = b.node("MatMul", {q, kt}, {}, "/attn/MatMul");
  const std::string p = b.node("Relu", {s});
  b.output(p);
  ImportReport r = import_model(b, {"B=1:2", "T=1:16"});
  ASSERT_EQ(r.ops.size(), 1u);
  const auto& o = op_json(r, 0);
  EXPECT_EQ(o["transpose_b"], true);
  EXPECT_EQ(dim(o, "B"), "8*B");
  EXPECT_EQ(dim(o, "N"), "T");
  EXPECT_EQ(dim(o, "K"), "32");
  EXPECT_EQ(o["epilogue"], "relu");
}

TEST(OnnxImport, AnIntermediateReadElsewhereIsNotFolded) {
  OnnxBuilder b;
  const std::string x = b.input("x", {"T", 32});
  const std::string mm = b.node("MatMul", {x, b.weight("w", {32, 16})});
  const std::string r = b.node("Relu", {mm});
  b.output(r);
  b.output(mm);  // the pre-activation is an output too: the Relu must stay
  ImportReport rep = import_model(b, {"T=1:8"});
  EXPECT_FALSE(op_json(rep, 0).contains("epilogue"));
  EXPECT_EQ(rep.other_op_types.at("Relu"), 1);
}

TEST(OnnxImport, UnmappableGemmsAreListedWithTheirReasonAndCoverageCountsThem) {
  OnnxBuilder b;
  const std::string x = b.input("x", {"T", 32});
  b.output(b.node("MatMul", {x, b.weight("w", {32, 16})}, {}, "/ok/MatMul"));
  const std::string g = b.node("Conv", {b.input("img", {1, 4, 8, 8, 8}), b.weight("w3", {4, 4, 3, 3, 3})},
                               {{"kernel_shape", std::vector<int64_t>{3, 3, 3}}}, "/conv3d/Conv");
  b.output(g);
  ImportReport r = import_model(b, {"T=1:8"});
  ASSERT_EQ(r.not_covered.size(), 1u);
  EXPECT_EQ(r.not_covered[0].reason, "a 3-D convolution (only 2-D maps)");
  EXPECT_LT(r.covered_flops, r.total_flops);
}

TEST(OnnxImport, DynamicRangesAreParsedStrictly) {
  DynamicRange r = parse_dynamic("seq=1:128:8");
  EXPECT_EQ(r.min, 1);
  EXPECT_EQ(r.max, 128);
  EXPECT_EQ(r.step, 8);
  EXPECT_EQ(parse_dynamic("N=8,1,4").values, (std::vector<int64_t>{1, 4, 8}));
  EXPECT_THROW(parse_dynamic("seq"), UserError);
  EXPECT_THROW(parse_dynamic("seq=0:4"), UserError);
  EXPECT_THROW(parse_dynamic("seq=8:4"), UserError);
  EXPECT_THROW(parse_dynamic("seq=1:x"), UserError);
}

// ---- the CLI ------------------------------------------------------------------------------

struct CliRun {
  int code = -1;
  std::string out, err;
};

CliRun run_cli(const TempDir& dir, const std::string& args) {
  const std::string out = (dir / "stdout").string(), err = (dir / "stderr").string();
  const std::string cmd = std::string("cd '") + dir.path().string() + "' && '" + DIETCODE_CLI_PATH +
                          "' " + args + " >'" + out + "' 2>'" + err + "'";
  CliRun r;
  const int status = std::system(cmd.c_str());
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::stringstream o, e;
  o << std::ifstream(out).rdbuf();
  e << std::ifstream(err).rdbuf();
  r.out = o.str(), r.err = e.str();
  return r;
}

TEST(OnnxImportCli, ImportsValidatesAndSummarises) {
  TempDir dir;
  onnx_test::tiny_bert().save((dir / "bert.onnx").string());
  CliRun r = run_cli(dir, "import bert.onnx --dynamic batch_size=1:8 --dynamic sequence_length=1:128 "
                          "--weights 'sequence_length=\"uniform\"' -o bert.json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("coverage: 100.0%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-> 5 workload op(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dense M=batch_size*sequence_length N=64 K=64 weight_layout=KN bias x8"),
            std::string::npos)
      << r.out;
  CliRun v = run_cli(dir, "validate bert.json");
  EXPECT_EQ(v.code, 0) << v.err;
  CliRun j = run_cli(dir, "import bert.onnx --dynamic batch_size=1:2 --dynamic sequence_length=1:8 --json -o b2.json");
  ASSERT_EQ(j.code, 0) << j.err;
  nlohmann::json summary = nlohmann::json::parse(j.out);
  EXPECT_DOUBLE_EQ(summary["coverage"].get<double>(), 1.0);
  EXPECT_EQ(summary["ops"].size(), 5u);
  EXPECT_EQ(summary["output"], "b2.json");
  // The model's MatMul weights are [K,N]: taken as stored by default, transposed with NK.
  std::stringstream stored, nk;
  stored << std::ifstream(dir / "b2.json").rdbuf();
  EXPECT_NE(stored.str().find("\"weight_layout\": \"KN\""), std::string::npos);
  CliRun t = run_cli(dir, "import bert.onnx --dynamic batch_size=1:2 --dynamic sequence_length=1:8 "
                          "--weight-layout NK -o nk.json -q");
  ASSERT_EQ(t.code, 0) << t.err;
  nk << std::ifstream(dir / "nk.json").rdbuf();
  EXPECT_EQ(nk.str().find("weight_layout"), std::string::npos);
  EXPECT_NE(nk.str().find("transposed once at load"), std::string::npos);
}

// examples/onnx/NAME.onnx imported into DIR/NAME.json with the README's ranges: five ops that
// cover every matrix-product FLOP.
void import_shipped_encoder(const TempDir& dir, const std::string& name) {
  const std::string shipped = std::string(DIETCODE_SOURCE_DIR) + "/examples/onnx/" + name + ".onnx";
  CliRun r = run_cli(dir, "import '" + shipped +
                              "' --dynamic batch_size=1,4 --dynamic sequence_length=16:128:16 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json summary = nlohmann::json::parse(r.out);
  EXPECT_EQ(summary["ops"].size(), 5u) << r.out;
  EXPECT_DOUBLE_EQ(summary["coverage"].get<double>(), 1.0);
  EXPECT_TRUE(fs::exists(dir / (name + ".json")));  // the default output: NAME.json
}

TEST(OnnxImportCli, TheShippedExampleModelImportsAsTheGeneratorMakesIt) {
  TempDir dir;
  ASSERT_NO_FATAL_FAILURE(import_shipped_encoder(dir, "tiny_bert"));
  const std::string shipped = std::string(DIETCODE_SOURCE_DIR) + "/examples/onnx/tiny_bert.onnx";
  // The file is what tests/import/make_tiny_bert.cc writes (hidden 64, 2 heads, FFN 256).
  onnx_test::BertConfig c;
  c.hidden = 64, c.heads = 2, c.ffn = 256, c.layers = 2;
  std::stringstream bytes;
  bytes << std::ifstream(shipped, std::ios::binary).rdbuf();
  EXPECT_TRUE(bytes.str() == onnx_test::tiny_bert(c).bytes())
      << "examples/onnx/tiny_bert.onnx differs from the generator's output; regenerate it with "
         "build/tests/import_make_tiny_bert examples/onnx/tiny_bert.onnx";
}

// examples/onnx/torch_encoder.onnx was exported by torch.onnx.export itself (torch 2.5.1,
// examples/onnx/export_torch_encoder.py): the graph a user's export gives, not our builder's.
TEST(OnnxImportCli, TheModelPyTorchExportedImportsLikeTheGeneratedOne) {
  TempDir dir;
  ASSERT_NO_FATAL_FAILURE(import_shipped_encoder(dir, "torch_encoder"));
  std::stringstream text;
  text << std::ifstream(dir / "torch_encoder.json").rdbuf();
  const Workload w = parse_workload(text.str(), "torch_encoder.json");
  int dense = 0, bmm = 0;
  for (const OpSpec& op : w.ops) {
    if (op.kind == OpKind::kDense) {
      ++dense;
      EXPECT_EQ(op.weight_layout, WeightLayout::kKN) << op.name;  // nn.Linear exports W^T
      EXPECT_EQ(describe_dims(op).rfind("M=batch_size*sequence_length ", 0), 0u) << op.name;
    } else if (op.kind == OpKind::kBatchMatmul) {
      ++bmm;
      EXPECT_EQ(describe_dims(op).rfind("B=2*batch_size ", 0), 0u) << op.name;
    }
  }
  EXPECT_EQ(dense, 3);
  EXPECT_EQ(bmm, 2);
  EXPECT_EQ(w.find_op("layers_0_intermediate")->epilogue, Epilogue::kBiasGelu);
  EXPECT_DOUBLE_EQ(w.find_op("layers_0_attention_query")->weight, 8);
}

struct BadCase {
  const char* name;
  std::function<void(const fs::path&)> make;  // writes bad.onnx
  const char* args;                           // after "import bad.onnx"
  const char* message;                        // part of the one-line error
};

TEST(OnnxImportCli, BadInputIsOneLineExitOneAndNoFile) {
  const BadCase cases[] = {
      {"not onnx", [](const fs::path& p) { std::ofstream(p) << "{\"name\": \"a json file\"}\n"; },
       "", "is not an ONNX model"},
      {"truncated",
       [](const fs::path& p) {
         std::string bytes = onnx_test::tiny_bert().bytes();
         std::ofstream(p, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
       },
       "", "truncated"},
      {"opset too new", [](const fs::path& p) {
         OnnxBuilder b(99);
         b.output(b.node("Relu", {b.input("x", {4})}));
         b.save(p.string());
       }, "", "opset 99 is newer"},
      {"external data missing", [](const fs::path& p) {
         OnnxBuilder b;
         auto* t = b.graph().add_initializer();
         t->set_name("w");
         t->set_data_type(onnx::TensorProto::FLOAT);
         t->add_dims(4), t->add_dims(4);
         t->set_data_location(onnx::TensorProto::EXTERNAL);
         auto* e = t->add_external_data();
         e->set_key("location"), e->set_value("weights.bin");
         b.output(b.node("MatMul", {b.input("x", {"T", 4}), "w"}));
         b.save(p.string());
       }, "--dynamic T=1:4", "external weight file 'weights.bin'"},
      {"no operator", [](const fs::path& p) {
         OnnxBuilder b;
         b.output(b.node("Relu", {b.input("x", {"T", 4})}));
         b.save(p.string());
       }, "", "no operator dietcode compiles"},
      {"no range", [](const fs::path& p) { onnx_test::gpt2_mlp().save(p.string()); },
       "--dynamic batch=1:2", "symbolic dimension 'seq' has no range; add --dynamic seq=MIN:MAX"},
      {"unknown range", [](const fs::path& p) { onnx_test::gpt2_mlp().save(p.string()); },
       "--dynamic batch=1:2 --dynamic seq=1:8 --dynamic sequence=1:8", "'sequence'"},
      {"missing file", [](const fs::path&) {}, "", "no such file"},
  };
  for (const BadCase& c : cases) {
    TempDir dir;
    c.make(dir / "bad.onnx");
    CliRun r = run_cli(dir, std::string("import bad.onnx -o out.json ") + c.args);
    EXPECT_EQ(r.code, 1) << c.name << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.name << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.name << ": " << r.err;
    EXPECT_FALSE(fs::exists(dir / "out.json")) << c.name;
  }
}

}  // namespace
}  // namespace dietcode::onnx_import
