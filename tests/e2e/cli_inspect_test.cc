// `dietcode inspect WORKLOAD.json` end to end: the instance table, its JSON form, --shape
// filters and their errors, and the dispatch on the kind of file.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "e2e/cli_util.h"

namespace dietcode::test {
namespace {

std::string config(const std::string& name) { return source_dir() + "/configs/workloads/" + name; }
std::string mixed() { return test_data_dir() + "/workloads/mixed.json"; }

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(CliInspect, BertTableListsEveryInstance) {
  CommandResult r = run_cli({"inspect", config("bert_base_dense.json")});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_NE(r.out.find("\nqkv: dense float32 M=16*T N=2304 K=768, epilogue none, 128 of 128 "
                       "instances\n"
                       "    T  |     M     N    K    GFLOP    weight   priority\n"
                       "    1  |    16  2304  768  0.05662  0.007812  4.424e+05\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n  128  |  2048  768  3072   9.664  0.007812   7.55e+07\n"),
            std::string::npos)
      << r.out;
  // Four ops x 128 rows, each row starting with its T value and the bar.
  EXPECT_EQ(count(r.out, "  |  "), 4u * 129u);
}

TEST(CliInspect, JsonHasGeometryGemmAndPriority) {
  CommandResult r = run_cli({"inspect", config("resnet50_nhwc.json"), "--json", "--shape", "N=8"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["name"], "resnet50_nhwc");
  ASSERT_EQ(j["ops"].size(), 20u);
  const auto& conv1 = j["ops"][0];
  EXPECT_EQ(conv1["name"], "conv1");
  EXPECT_EQ(conv1["op"], "conv2d");
  ASSERT_EQ(conv1["instances"].size(), 1u);
  const auto& inst = conv1["instances"][0];
  EXPECT_EQ(inst["shape"]["N"], 8);
  EXPECT_EQ(inst["dims"]["P"], 112);
  EXPECT_EQ(inst["dims"]["Q"], 112);
  EXPECT_EQ(inst["gemm"]["M"], 8 * 112 * 112);
  EXPECT_EQ(inst["gemm"]["N"], 64);
  EXPECT_EQ(inst["gemm"]["K"], 7 * 7 * 3);
  double flops = 2.0 * 8 * 112 * 112 * 64 * 147;
  EXPECT_DOUBLE_EQ(inst["flops"].get<double>(), flops);
  EXPECT_DOUBLE_EQ(inst["weight"].get<double>(), 1.0 / 64);
  EXPECT_DOUBLE_EQ(inst["priority"].get<double>(), flops / 64);
}

TEST(CliInspect, ShapeFiltersOnlyTheOpsThatUseTheVariable) {
  CommandResult r = run_cli({"inspect", mixed(), "--json", "--shape", "T=16"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  auto j = nlohmann::json::parse(r.out);
  for (const auto& op : j["ops"]) {
    ASSERT_EQ(op["instances"].size(), 3u) << op["name"];  // one per value of batch
    for (const auto& inst : op["instances"]) EXPECT_EQ(inst["shape"]["T"], 16);
  }
  CommandResult both = run_cli({"inspect", mixed(), "--shape", "T=16", "--shape", "batch=4"});
  ASSERT_EQ(both.exit_code, 0) << both.summary();
  // batch=4 weighs 1/3, T=16 1/4, the op 2: 2/12; FLOPs 2*64*256*128.
  EXPECT_NE(both.out.find("\n      4  16  |  64  256  128  0.004194  0.1667  6.991e+05\n"),
            std::string::npos)
      << both.out;
  EXPECT_EQ(count(both.out, "1 of 12 instances"), 3u) << both.out;
}

TEST(CliInspect, ConvTableShowsNhwcGeometryAndImplicitGemm) {
  CommandResult r = run_cli({"inspect", mixed(), "--shape", "T=8", "--shape", "batch=2"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_NE(r.out.find("  batch  T  |  N   H   W  C   K  R  S  P   Q  M=NPQ  N=K  K=RSC"),
            std::string::npos)
      << r.out;
  // H = T+2 = 10, stride 2, pad 0: P = (10 - 3)/2 + 1 = 4; W = 16, pad 1: Q = 16.
  EXPECT_NE(r.out.find("      2  8  |  2  10  16  8  16  3  3  4  16    128   16     72"),
            std::string::npos)
      << r.out;
}

struct BadInspect {
  const char* label;
  std::vector<std::string> args;
  std::string message;
};

void PrintTo(const BadInspect& c, std::ostream* os) { *os << c.label; }

class InspectBadInput : public testing::TestWithParam<BadInspect> {};

TEST_P(InspectBadInput, ExitsOneWithOneExactLine) {
  std::vector<std::string> args = {"inspect"};
  for (const auto& a : GetParam().args) args.push_back(a == "MIXED" ? mixed() : a);
  CommandResult r = run_cli(args);
  ASSERT_TRUE(r.exited()) << r.summary();
  EXPECT_EQ(r.exit_code, 1) << r.summary();
  std::string expected = GetParam().message;
  size_t at = expected.find("MIXED");
  if (at != std::string::npos) expected.replace(at, 5, mixed());
  EXPECT_EQ(r.err, expected + "\n");
  EXPECT_EQ(r.out, "");
}

INSTANTIATE_TEST_SUITE_P(
    Cli, InspectBadInput,
    testing::Values(
        BadInspect{
            "NotAWorkload", {"bert_dense.txt"},
            "bert_dense.txt: not a workload (.json), a tuning log (.jsonl, .jsonl.gz) or a "
            "kernel pack (.so)"},
        BadInspect{"MissingWorkload",
                   {"/nonexistent.json"},
                   "/nonexistent.json: cannot read: No such file or directory"},
        BadInspect{"ShapeWithoutValue",
                   {"MIXED", "--shape", "T"},
                   "inspect --shape: expected VAR=VALUE with a positive integer value, got \"T\""},
        BadInspect{"ShapeNotANumber",
                   {"MIXED", "--shape", "T=ten"},
                   "inspect --shape: expected VAR=VALUE with a positive integer value, got "
                   "\"T=ten\""},
        BadInspect{"ShapeUnknownVariable",
                   {"MIXED", "--shape", "S=4"},
                   "inspect --shape: \"S\" is not a shape variable of MIXED (declared: batch and "
                   "T)"},
        BadInspect{"ShapeValueOutOfRange",
                   {"MIXED", "--shape", "T=12"},
                   "inspect --shape: 12 is not a value of T (8..32 step 8)"},
        BadInspect{"SpaceWithoutGpu",
                   {"MIXED", "--space"},
                   "inspect --space: --gpu ID is required (one of: a100, h100, h200, l4, "
                   "rtx4090, t4)"},
        BadInspect{"SpaceUnknownGpu",
                   {"MIXED", "--space", "--gpu", "v100"},
                   "unknown GPU \"v100\": known GPUs are a100, h100, h200, l4, rtx4090, t4, or give "
                   "the path of a GPU config file"},
        BadInspect{"ShapeGivenTwice",
                   {"MIXED", "--shape", "T=8", "--shape", "T=16"},
                   "inspect --shape: T is given twice"}),
    [](const testing::TestParamInfo<BadInspect>& info) { return std::string(info.param.label); });

TEST(CliInspect, InvalidWorkloadGivesTheParserMessage) {
  TempDir dir;
  std::string path = dir.write("w.json", R"({"name": "w", "ops": []})");
  CommandResult r = run_cli({"inspect", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, path + ": ops: expected at least one op\n");
}

TEST(CliInspect, HelpShowsExamples) {
  CommandResult r = run_cli({"inspect", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("dietcode inspect configs/workloads/bert_base_dense.json"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("--shape"), std::string::npos);
}

}  // namespace
}  // namespace dietcode::test

namespace dietcode::test {
namespace {

// The BERT fp32 space on H100 holds far more than hundreds of valid micro-kernels, among them
// tiles small enough for M=16 and split-K for the narrow N=768 layers.
TEST(CliInspectSpace, BertOnH100HasSmallTilesAndSplitK) {
  CommandResult r = run_cli({"inspect", config("bert_base_dense.json"), "--space", "--gpu",
                             "h100", "--max-candidates", "20000", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  auto reports = nlohmann::json::parse(r.out);
  ASSERT_EQ(reports.size(), 4u);
  for (const auto& report : reports) {
    EXPECT_EQ(report["template"], "dense_f32");
    EXPECT_GE(report["count"].get<int>(), 20000) << report["op"];
    EXPECT_FALSE(report["complete"].get<bool>());
    bool small_tile = false, split_k = false;
    for (const auto& c : report["candidates"]) {
      int bm = c["WARPS_M"].get<int>() * c["THREADS_M"].get<int>() * c["TM"].get<int>();
      small_tile = small_tile || bm <= 16;
      split_k = split_k || c["SPLITK"].get<int>() > 1;
    }
    EXPECT_TRUE(small_tile) << report["op"];
    EXPECT_TRUE(split_k) << report["op"];
  }
}

TEST(CliInspectSpace, TextViewCountsAndListsCandidates) {
  CommandResult r = run_cli({"inspect", config("bert_base_dense.json"), "--space", "--gpu",
                             "h100", "--max-candidates", "500", "--rows", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_EQ(r.out.rfind("micro-kernel space of bert_dense on NVIDIA H100", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("fc2: template dense_f32, largest M=2048 N=768 K=3072: at least 500 valid"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace dietcode::test

namespace dietcode::test {
namespace {

std::string record(const std::string& op, int bm, int t, double us) {
  return R"({"workload": "w", "op": ")" + op +
         R"(", "mk": {"template": "dense_f32", "params": {"BM": )" + std::to_string(bm) +
         R"(}}, "shape": {"T": )" + std::to_string(t) +
         R"(}, "gemm": {"batch": 1, "M": 16, "N": 8, "K": 8}, "status": "ok", "latency_us": )" +
         std::to_string(us) +
         R"(, "device": "NVIDIA H100", "arch": "sm_90", "simulated": false, "tool_version": "0.1.0", "timestamp": "2026-01-01T00:00:00.000Z"})"
         "\n";
}

TEST(CliInspectLog, BestKernelPerInstanceAndDamagedLinesSkipped) {
  TempDir dir;
  std::string log = dir.write("w.jsonl", record("qkv", 32, 1, 5.0) + record("qkv", 64, 1, 4.0) +
                                             record("qkv", 32, 2, 6.0) + "{\"torn\n");
  CommandResult r = run_cli({"inspect", log, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_EQ(r.err, log + ":4: skipped: invalid JSON (truncated or corrupt line)\n");
  auto ops = nlohmann::json::parse(r.out);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0]["op"], "qkv");
  EXPECT_EQ(ops[0]["records"], 3);
  EXPECT_EQ(ops[0]["kernels_used"], 2);
  ASSERT_EQ(ops[0]["instances"].size(), 2u);
  EXPECT_EQ(ops[0]["instances"][0]["shape"]["T"], 1);
  EXPECT_EQ(ops[0]["instances"][0]["latency_us"], 4.0);
  EXPECT_EQ(ops[0]["instances"][0]["mk"]["params"]["BM"], 64);

  CommandResult one = run_cli({"inspect", log, "--shape", "T=2"});
  ASSERT_EQ(one.exit_code, 0) << one.summary();
  EXPECT_NE(one.out.find("  T=2          6  dense_f32:BM=32\n"), std::string::npos) << one.out;
  EXPECT_EQ(one.out.find("T=1 "), std::string::npos) << one.out;
}

TEST(CliInspectLog, ByKernelComparesEveryKernelWithEachInstancesFastest) {
  TempDir dir;
  // BM=64 is 2x faster on T=1 and as fast on T=2; BM=32 was timed on T=1 only; a runoff record
  // (only finalists are timed) and a failed one are left out.
  std::string runoff = record("qkv", 16, 1, 0.5);
  runoff.insert(runoff.rfind('}'), R"(, "runoff": 1)");
  std::string failed = record("qkv", 16, 2, 0.5);
  failed.replace(failed.find(R"("status": "ok")"), 14, R"("status": "wrong_result")");
  std::string log =
      dir.write("ab.jsonl", record("qkv", 64, 1, 4.0) + record("qkv", 128, 1, 8.0) +
                                record("qkv", 64, 2, 3.0) + record("qkv", 128, 2, 3.0) +
                                record("qkv", 128, 2, 9.0) + record("qkv", 32, 1, 5.0) + runoff +
                                failed);
  CommandResult r = run_cli({"inspect", log, "--by-kernel", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  auto ops = nlohmann::json::parse(r.out);
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0]["instances"], 2);
  const auto& k = ops[0]["kernels"];
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k[0]["kernel"], "dense_f32:BM=64");
  EXPECT_DOUBLE_EQ(k[0]["geomean_vs_best"].get<double>(), 1.0);
  EXPECT_EQ(k[0]["best_on"], 2);
  EXPECT_EQ(k[1]["kernel"], "dense_f32:BM=32");  // 1.25x on its one instance
  EXPECT_DOUBLE_EQ(k[1]["geomean_vs_best"].get<double>(), 1.25);
  EXPECT_EQ(k[1]["instances"], 1);
  EXPECT_EQ(k[2]["kernel"], "dense_f32:BM=128");  // 2x and 1x (its best record on T=2)
  EXPECT_NEAR(k[2]["geomean_vs_best"].get<double>(), std::sqrt(2.0), 1e-9);
  EXPECT_EQ(k[2]["best_on"], 1);
  EXPECT_DOUBLE_EQ(k[2]["mean_latency_us"].get<double>(), 5.5);

  CommandResult text = run_cli({"inspect", log, "--by-kernel", "--shape", "T=2"});
  ASSERT_EQ(text.exit_code, 0) << text.summary();
  EXPECT_NE(text.out.find("qkv: 2 kernels on 1 instances"), std::string::npos) << text.out;

  CommandResult wrong = run_cli({"inspect", config("bert_base_dense.json"), "--by-kernel"});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_EQ(wrong.err, "inspect --by-kernel: only for a tuning log (.jsonl, .jsonl.gz), got " +
                           config("bert_base_dense.json") + "\n");
}

TEST(CliInspectLog, MissingLogIsExitOne) {
  CommandResult r = run_cli({"inspect", "/nonexistent.jsonl"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "/nonexistent.jsonl: no such tuning log\n");
}

}  // namespace
}  // namespace dietcode::test
