// The shipped bfloat16 BERT attention workload (configs/workloads/bert_base_attention_bf16.json)
// end to end: `dietcode tune --simulate h100` (a TEST DOUBLE of a GPU; NVRTC compiles for real)
// measures tensor-core kernels for its two batch_matmuls (Q.K^T on both templates, probs.V on
// dense_tc), and `dietcode build` makes a pack of them for sm_80 and sm_90a. A batch_matmul layout
// no template reads is skipped by tune, and shown by inspect, with its layout named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "e2e/cli_util.h"

namespace dietcode {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::CommandOptions;
using test::CommandResult;
using ::testing::HasSubstr;

const std::string kWorkload =
    test::source_dir() + "/configs/workloads/bert_base_attention_bf16.json";

CommandOptions in(const test::TempDir& dir) {
  CommandOptions options;
  options.cwd = dir.path();
  // Kernels compiled by one run are hits for the next: the runs share one cache.
  options.env = {{"DIETCODE_CACHE_DIR", test::shared_tune_cache_dir()}};
  options.timeout_s = 600;
  return options;
}

TEST(CliTuneAttentionBf16, TunesTensorCoreKernelsAndBuildsAPack) {
  test::TempDir dir;
  // --runoff 0: every pair timed once, so the records below count kernels x instances.
  CommandResult tune = test::run_cli({"tune", kWorkload, "--simulate", "h100", "--trials", "8",
                                      "--seed", "3", "--runoff", "0", "--json", "-o",
                                      "attention.jsonl"},
                                     in(dir));
  ASSERT_EQ(tune.exit_code, 0) << tune.summary();
  const json summary = json::parse(tune.out);
  EXPECT_EQ(summary["workload"], "bert_attention_bf16");
  EXPECT_EQ(summary["device"]["simulated"], true);
  ASSERT_EQ(summary["ops"].size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(summary["ops"][i]["op"], i == 0 ? "qk" : "av");
    EXPECT_EQ(summary["ops"][i]["assignment"].size(), 128u);  // T = 1..128
    EXPECT_GT(summary["ops"][i]["tflops"].get<double>(), 0);
  }

  // Q.K^T may take either tensor-core template; probs.V (B stored [K,N]) dense_tc alone.
  std::istringstream log(test::read_file_or_empty(fs::path(dir.path()) / "attention.jsonl"));
  std::map<std::string, std::set<std::string>> templates;
  std::map<std::string, int> measurements, tc_ok, tc_records, wgmma_ok, wgmma_records;
  for (std::string line; std::getline(log, line);) {
    const json j = json::parse(line);
    if (j["kind"] != "measurement") continue;
    ++measurements[j["op"]];
    const std::string tmpl = j["mk"]["template"];
    templates[j["op"]].insert(tmpl);
    const bool ok = j["status"] == "ok";
    if (tmpl == "dense_tc") {
      ++tc_records[j["op"]];
      tc_ok[j["op"]] += ok;
    }
    if (tmpl == "dense_wgmma") {
      ++wgmma_records[j["op"]];
      wgmma_ok[j["op"]] += ok;
      EXPECT_GT(j.value("registers", 0), 0) << "ptxas's count of the sm_90a binary";
    }
  }
  // wgmma kernels are built for sm_90a and measured from that CUBIN (this search picks some).
  EXPECT_GT(wgmma_records["qk"], 0);
  EXPECT_EQ(wgmma_ok["qk"], wgmma_records["qk"]);
  EXPECT_EQ(measurements["qk"], 8 * 128);
  EXPECT_EQ(measurements["av"], 8 * 128);
  for (const std::string op : {"qk", "av"}) {
    EXPECT_GT(tc_records[op], 0) << op;
    EXPECT_EQ(tc_ok[op], tc_records[op]) << op;  // every dense_tc kernel ran on every shape
  }
  for (const std::string& t : templates["qk"])
    EXPECT_TRUE(t == "dense_tc" || t == "dense_wgmma") << t;
  EXPECT_EQ(templates["av"], std::set<std::string>{"dense_tc"});

  CommandResult build = test::run_cli(
      {"build", kWorkload, "--log", "attention.jsonl", "-o", "libbert_attention_bf16.so", "--arch",
       "sm_80,sm_90a", "--allow-simulated", "--json"},
      in(dir));
  ASSERT_EQ(build.exit_code, 0) << build.summary();
  const json report = json::parse(build.out);
  ASSERT_EQ(report["ops"].size(), 2u);
  EXPECT_EQ(report["ops"][0]["op"], "qk");
  EXPECT_EQ(report["ops"][1]["op"], "av");
  EXPECT_TRUE(fs::exists(fs::path(dir.path()) / "libbert_attention_bf16.so"));
}

TEST(CliTuneAttentionBf16, ALayoutNoTemplateReadsIsSkippedWithItsLayoutNamed) {
  test::TempDir dir;
  const std::string workload = dir.write("attention.json", R"({"name": "attn",
      "shape_vars": {"T": {"min": 1, "max": 8}},
      "ops": [{"name": "qk", "op": "batch_matmul", "dtype": "bfloat16", "B": 4, "M": "T",
               "N": "T", "K": 64, "transpose_b": true},
              {"name": "tq", "op": "batch_matmul", "dtype": "float16", "B": 4, "M": "T",
               "N": 64, "K": "T", "transpose_a": true}]})");
  CommandResult r = test::run_cli(
      {"tune", workload, "--simulate", "h100", "--trials", "2", "--seed", "1"}, in(dir));
  ASSERT_EQ(r.exit_code, 0) << r.summary();
  EXPECT_THAT(r.out + r.err, HasSubstr("tq: skipped: no cuda template computes float16 batch_matmul "
                                       "with A stored [K,M] (transpose_a) and B stored [K,N] yet"));
  CommandResult inspect =
      test::run_cli({"inspect", workload, "--space", "--gpu", "h100", "--max-candidates", "1"});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.summary();
  EXPECT_THAT(inspect.out, HasSubstr("\ntq: no template can compute this op (float16 batch_matmul "
                                     "with A stored [K,M] (transpose_a) and B stored [K,N])\n"));
  CommandResult none = test::run_cli(
      {"tune", workload, "--simulate", "h100", "--ops", "tq", "--trials", "2"}, in(dir));
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_EQ(none.err, "dietcode tune: nothing to tune in " + workload +
                          ": no template computes its ops yet\n");
}

}  // namespace
}  // namespace dietcode
