// `dietcode inspect --space` on 16-bit workloads: the tensor-core templates appear for every
// bfloat16 op, dense_wgmma only on compute capability 9.0, and neither on a GPU without bf16
// tensor cores.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "e2e/cli_util.h"

namespace dietcode::test {
namespace {

// (op, template) -> number of valid candidates, for Llama-7B's bf16 MLP on one GPU.
std::map<std::pair<std::string, std::string>, int> counts_on(const std::string& gpu) {
  CommandResult r = run_cli({"inspect", source_dir() + "/configs/workloads/llama7b_mlp.json",
                             "--space", "--gpu", gpu, "--max-candidates", "200", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.summary();
  std::map<std::pair<std::string, std::string>, int> out;
  for (const auto& report : nlohmann::json::parse(r.out))
    out[{report["op"], report["template"]}] = report["count"].get<int>();
  return out;
}

TEST(CliInspectTensorCores, LlamaMlpOnH100HasBothTemplates) {
  const auto counts = counts_on("h100");
  ASSERT_EQ(counts.size(), 6u);
  for (const std::string op : {"gate", "up", "down"}) {
    EXPECT_EQ(counts.at({op, "dense_tc"}), 200) << op;  // capped: many more exist
    EXPECT_EQ(counts.at({op, "dense_wgmma"}), 200) << op;
  }
}

TEST(CliInspectTensorCores, WgmmaOnlyOnHopperAndNothingWithoutBf16TensorCores) {
  const auto a100 = counts_on("a100");
  EXPECT_EQ(a100.at({"down", "dense_tc"}), 200);
  EXPECT_EQ(a100.at({"down", "dense_wgmma"}), 0);
  for (const auto& [key, count] : counts_on("t4")) EXPECT_EQ(count, 0) << key.second;
}

}  // namespace
}  // namespace dietcode::test
