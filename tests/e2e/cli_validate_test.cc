// `dietcode validate` end to end: the binary, real files, exit codes and the exact line a
// user sees on stderr.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "e2e/cli_util.h"

namespace dietcode::test {
namespace {

namespace fs = std::filesystem;

std::string config(const std::string& name) { return source_dir() + "/configs/workloads/" + name; }

struct BadFile {
  const char* label;
  std::string content;
  std::string message;  // after "PATH: "
};

class ValidateBadFile : public testing::TestWithParam<BadFile> {};

TEST_P(ValidateBadFile, ExitsOneWithOneExactLine) {
  TempDir dir;
  std::string path = dir.write("workload.json", GetParam().content);
  CommandResult r = run_cli({"validate", path});
  ASSERT_TRUE(r.exited()) << r.summary();
  EXPECT_EQ(r.exit_code, 1) << r.summary();
  EXPECT_EQ(r.err, path + ": " + GetParam().message + "\n");
  EXPECT_EQ(r.out, "");
}

void PrintTo(const BadFile& f, std::ostream* os) { *os << f.label; }

INSTANTIATE_TEST_SUITE_P(
    Cli, ValidateBadFile,
    testing::Values(
        BadFile{"SpecExample",
                R"({"name": "w", "shape_vars": {"T": {"min": 1, "max": 128}}, "ops": [
                  {"name": "a", "op": "dense", "M": "16*T", "N": 768, "K": 768},
                  {"name": "b", "op": "dense", "M": "16*T", "N": 768, "K": 768},
                  {"name": "c", "op": "dense", "M": "16*T", "N": 768, "K": -768}]})",
                "ops[2].K: expected a positive integer or an expression of shape variables, "
                "got -768"},
        BadFile{"Empty", "", "empty file (expected a JSON object)"},
        BadFile{"NotJson", "name: bert\n",
                "not valid JSON: parse error at line 1, column 2: syntax error while parsing "
                "value - invalid literal; last read: 'na'"},
        BadFile{"BinaryJunk", std::string("\x89PNG\r\n\x1a\n\0\0", 10),
                "not valid JSON: parse error at line 1, column 1: syntax error while parsing "
                "value - invalid literal; last read: '\\x89'"},
        BadFile{"DeeplyNested", std::string(100000, '['), "JSON nested more than 64 levels deep"},
        BadFile{"UnknownKey",
                R"({"name": "w", "ops": [{"name": "a", "op": "dense", "M": 1, "N": 1, "K": 1,
                    "epilog": "bias"}]})",
                "ops[0]: unknown key \"epilog\" (did you mean \"epilogue\"?)"},
        BadFile{"HugeNumber",
                R"({"name": "w", "ops": [{"name": "a", "op": "dense", "M": 1e30, "N": 1,
                    "K": 1}]})",
                "ops[0].M: expected a positive integer or an expression of shape variables, got "
                "1e+30"},
        BadFile{"UndeclaredVariable",
                R"({"name": "w", "shape_vars": {"T": {"min": 1, "max": 4}},
                    "ops": [{"name": "a", "op": "dense", "M": "B*T", "N": 1, "K": 1}]})",
                "ops[0].M: unknown shape variable \"B\" (declared: T)"},
        BadFile{"ConvOutputEmpty",
                R"({"name": "w", "ops": [{"name": "c", "op": "conv2d", "layout": "NHWC",
                    "N": 1, "H": 2, "W": 8, "C": 1, "K": 1, "R": 3, "S": 3}]})",
                "ops[0]: output height is empty: the filter (R=3, dilation 1) is larger than "
                "the padded input (H=2, pad 0)"}),
    [](const testing::TestParamInfo<BadFile>& info) { return std::string(info.param.label); });

TEST(CliValidate, MissingFile) {
  TempDir dir;
  CommandResult r = run_cli({"validate", dir.file("w.json")});
  EXPECT_EQ(r.exit_code, 1) << r.summary();
  EXPECT_EQ(r.err, dir.file("w.json") + ": cannot read: No such file or directory\n");
}

TEST(CliValidate, MissingArgumentIsAUsageError) {
  CommandResult r = run_cli({"validate"});
  EXPECT_EQ(r.exit_code, 1) << r.summary();
  EXPECT_NE(r.err.find("WORKLOAD is required"), std::string::npos) << r.err;
}

TEST(CliValidate, BertBaseDenseJson) {
  CommandResult r = run_cli({"validate", config("bert_base_dense.json"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_EQ(r.err, "");
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["name"], "bert_dense");
  EXPECT_EQ(j["shape_vars"]["T"]["min"], 1);
  EXPECT_EQ(j["shape_vars"]["T"]["max"], 128);
  ASSERT_EQ(j["ops"].size(), 4u);
  std::vector<std::string> names;
  for (const auto& op : j["ops"]) {
    names.push_back(op["name"]);
    EXPECT_EQ(op["op"], "dense");
    EXPECT_EQ(op["dtype"], "float32");
    EXPECT_EQ(op["instances"], 128);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"qkv", "proj", "fc1", "fc2"}));
  // qkv: sum over T of 2 * 16T * 2304 * 768 = 2 * 16 * 2304 * 768 * (128 * 129 / 2)
  EXPECT_DOUBLE_EQ(j["ops"][0]["gflops"].get<double>(), 2.0 * 16 * 2304 * 768 * 8256 / 1e9);
  EXPECT_EQ(j["ops"][2]["epilogue"], "bias_gelu");
  EXPECT_EQ(j["ops"][0]["dims"]["M"], "16*T");
  EXPECT_EQ(j["ops"][0]["dims"]["N"], 2304);
  EXPECT_EQ(j["instances"], 512);
}

TEST(CliValidate, HumanSummary) {
  CommandResult r = run_cli({"validate", config("bert_base_dense.json")});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  const std::string& out = r.out;
  auto has_line = [&](const std::string& line) {
    return out.find("\n" + line + "\n") != std::string::npos;
  };
  EXPECT_EQ(out.substr(0, out.find('\n')),
            "workload bert_dense (" + config("bert_base_dense.json") + "): valid");
  EXPECT_TRUE(has_line("  T          1..128    128  uniform")) << out;
  EXPECT_TRUE(has_line(
      "  op    kind   dtype    dims                 epilogue   weight  instances    GFLOP"))
      << out;
  EXPECT_TRUE(has_line(
      "  qkv   dense  float32  M=16*T N=2304 K=768  none            1        128   467.48"))
      << out;
  EXPECT_TRUE(has_line(
      "  fc1   dense  float32  M=16*T N=3072 K=768  bias_gelu       1        128  623.307"))
      << out;
  EXPECT_TRUE(has_line("  total: 4 ops, 512 instances, 1869.92 GFLOP")) << out;
}

TEST(CliValidate, QuietPrintsNothingAndVerboseListsInstances) {
  CommandResult quiet = run_cli({"validate", "-q", config("bert_base_dense.json")});
  EXPECT_EQ(quiet.exit_code, 0);
  EXPECT_EQ(quiet.out, "");
  CommandResult verbose = run_cli({"validate", "-v", config("bert_base_dense.json")});
  EXPECT_EQ(verbose.exit_code, 0);
  EXPECT_NE(verbose.out.find("\n    T=37  gemm 592x2304x768  2.095 GFLOP\n"), std::string::npos)
      << verbose.out;
}

TEST(CliValidate, HelpShowsAnExample) {
  CommandResult r = run_cli({"validate", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("dietcode validate configs/workloads/bert_base_dense.json"),
            std::string::npos)
      << r.out;
}

TEST(CliValidate, EveryShippedWorkloadValidates) {
  std::set<std::string> names;
  int files = 0;
  for (const auto& entry : fs::directory_iterator(source_dir() + "/configs/workloads")) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    CommandResult r = run_cli({"validate", "--json", entry.path().string()});
    ASSERT_EQ(r.exit_code, 0) << entry.path() << "\n" << r.summary();
    EXPECT_EQ(r.err, "") << entry.path();
    auto j = nlohmann::json::parse(r.out);
    // Pack names must not collide: lib<name>.so of two models would overwrite each other.
    EXPECT_TRUE(names.insert(j["name"].get<std::string>()).second) << j["name"];
    EXPECT_GT(j["instances"].get<int>(), 0);
  }
  EXPECT_GE(files, 6);
  EXPECT_TRUE(names.count("bert_dense"));
}

// Random byte edits of valid workloads must end in a verdict (exit 0) or one clean error
// line (exit 1): never a signal, a hang, a stack trace or a multi-line message.
TEST(CliValidate, MutatedWorkloadsNeverCrash) {
  const std::vector<std::string> seeds = {
      read_file(config("bert_base_dense.json")),
      read_file(test_data_dir() + "/workloads/mixed.json"),
      read_file(config("resnet50_nhwc.json")),
  };
  const std::string interesting = "0123456789-+*eE.\"{}[],:TNB \n\\\x00\xff";
  std::mt19937 rng(20240601);
  TempDir dir;
  std::string path = dir.file("mutant.json");
  int accepted = 0, rejected = 0;
  for (int i = 0; i < 300; ++i) {
    std::string text = seeds[i % seeds.size()];
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      size_t at = rng() % text.size();
      switch (rng() % 5) {
        case 0:  // random byte
          text[at] = static_cast<char>(rng() & 0xff);
          break;
        case 1:  // a byte that means something to JSON or to expressions
          text[at] = interesting[rng() % interesting.size()];
          break;
        case 2:  // delete
          text.erase(at, 1 + rng() % 4);
          break;
        case 3:  // insert
          text.insert(at, 1, interesting[rng() % interesting.size()]);
          break;
        case 4:  // duplicate a chunk (repeated keys, longer numbers)
          text.insert(at, text.substr(at, 1 + rng() % 16));
          break;
      }
    }
    write_file(path, text);
    CommandResult r = run_cli({"validate", "--json", path}, {.timeout_s = 60});
    ASSERT_TRUE(r.exited()) << "mutant " << i << ": " << r.summary() << "\n" << text;
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1)
        << "mutant " << i << ": " << r.summary() << "\n"
        << text;
    if (r.exit_code == 0) {
      ++accepted;
      EXPECT_NO_THROW(nlohmann::json::parse(r.out)) << text;
    } else {
      ++rejected;
      EXPECT_EQ(r.err.rfind(path + ": ", 0), 0u) << r.err;
      EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
    }
  }
  RecordProperty("accepted", accepted);
  RecordProperty("rejected", rejected);
  // Both outcomes occur, so the test exercises the parser rather than only its first check.
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
}

// Byte edits mostly break the JSON syntax; these edits keep it valid and go after the
// meaning instead: a value swapped for an awkward one, a key dropped or renamed.
TEST(CliValidate, StructurallyMutatedWorkloadsNeverCrash) {
  using ordered_json = nlohmann::ordered_json;
  const std::vector<ordered_json> seeds = {
      ordered_json::parse(read_file(config("bert_base_dense.json"))),
      ordered_json::parse(read_file(test_data_dir() + "/workloads/mixed.json")),
      ordered_json::parse(read_file(config("bert_base_attention.json"))),
  };
  const std::vector<ordered_json> awkward = ordered_json::parse(R"([
      0, -1, 1, 2, 3, 65537, 1e30, 1.5, 9223372036854775807, 18446744073709551615,
      "T", "16*T", "T-200", "T*T*T", "B*T", "-T", "T*T", "", "NHWC", "dense", "conv2d",
      "batch_matmul", "uniform", "bias_relu", "float16", true, null, [], {}, [1, 2], [0, 0],
      [1, 2, 3], {"min": 1, "max": 100000000}, {"values": [3, 1, 3]}, "99999999999999999999*T",
      {"2": 1}, [0.5, 0.5]])");
  const std::vector<std::string> keys = {"name",    "op",     "M",   "N",       "K",
                                         "B",       "T",      "min", "max",     "values",
                                         "weights", "stride", "pad", "epilogue"};
  std::mt19937 rng(7);
  TempDir dir;
  std::string path = dir.file("mutant.json");
  int accepted = 0, rejected = 0;
  for (int i = 0; i < 200; ++i) {
    ordered_json doc = seeds[i % seeds.size()];
    // Every node's pointer, the root excluded.
    std::vector<ordered_json::json_pointer> nodes;
    std::vector<std::pair<ordered_json::json_pointer, const ordered_json*>> stack = {
        {ordered_json::json_pointer(), &doc}};
    while (!stack.empty()) {
      auto [ptr, node] = stack.back();
      stack.pop_back();
      if (!ptr.empty()) nodes.push_back(ptr);
      if (node->is_object())
        for (const auto& item : node->items()) stack.push_back({ptr / item.key(), &item.value()});
      if (node->is_array())
        for (size_t k = 0; k < node->size(); ++k) stack.push_back({ptr / k, &(*node)[k]});
    }
    for (int e = 0; e < 1 + static_cast<int>(rng() % 2); ++e) {
      auto ptr = nodes[rng() % nodes.size()];
      if (!doc.contains(ptr)) continue;
      ordered_json& parent = doc[ptr.parent_pointer()];
      switch (rng() % 3) {
        case 0:
          doc[ptr] = awkward[rng() % awkward.size()];
          break;
        case 1:  // drop it
          if (parent.is_object())
            parent.erase(ptr.back());
          else
            parent.erase(static_cast<size_t>(std::stoul(ptr.back())));
          break;
        case 2:  // rename it (objects) or duplicate it (arrays)
          if (parent.is_object()) {
            ordered_json value = doc[ptr];
            parent.erase(ptr.back());
            parent[keys[rng() % keys.size()]] = value;
          } else {
            parent.push_back(doc[ptr]);
          }
          break;
      }
    }
    std::string text = doc.dump(1);
    write_file(path, text);
    CommandResult r = run_cli({"validate", "--json", path}, {.timeout_s = 60});
    ASSERT_TRUE(r.exited()) << "mutant " << i << ": " << r.summary() << "\n" << text;
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1)
        << "mutant " << i << ": " << r.summary() << "\n"
        << text;
    if (r.exit_code == 0) {
      ++accepted;
    } else {
      ++rejected;
      EXPECT_EQ(r.err.rfind(path + ": ", 0), 0u) << r.err;
      EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
    }
  }
  RecordProperty("accepted", accepted);
  RecordProperty("rejected", rejected);
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace dietcode::test
