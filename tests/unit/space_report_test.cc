// The space report for `inspect --space`: counts, JSON and the text rendering, exactly.
#include "space/space_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace dietcode {
namespace {

// 12 combinations; A + B == 5 is excluded by a constraint and A * 32 threads > 96 by the GPU.
TemplateSpace tiny() {
  TemplateSpace s;
  s.tmpl = "tiny";
  s.tunables = {{"A", {1, 2, 3, 4}, 1, ""}, {"B", {1, 2, 3}, 1, ""}};
  s.constraints = {
      {"A + B != 5",
       [](const MicroKernel& mk, const SpaceContext&) { return mk.get("A") + mk.get("B") != 5; },
       {"A", "B"}}};
  s.resources = [](const MicroKernel& mk) {
    return LaunchResources{mk.get("A") * 32, mk.get("B") * 1024};
  };
  return s;
}

class SpaceReportTest : public ::testing::Test {
 protected:
  SpaceReportTest() : space_(tiny()) {
    gpu_.max_threads_per_block = 96;
    op_.name = "proj";
    largest_.M = 2048;
    largest_.N = 768;
    largest_.K = 768;
  }
  OpSpaceReport report() { return report_op_space(space_, {gpu_, op_, largest_}); }

  TemplateSpace space_;
  GpuSpec gpu_;
  OpSpec op_;
  GemmShape largest_;
};

TEST_F(SpaceReportTest, CountsValidCandidates) {
  OpSpaceReport r = report();
  EXPECT_EQ(r.op, "proj");
  EXPECT_EQ(r.tmpl, "tiny");
  EXPECT_EQ(r.unconstrained, 12);
  // A in {1, 2, 3} (A = 4 is 128 threads), minus (2, 3) and (3, 2).
  EXPECT_EQ(r.valid.candidates.size(), 7u);
  EXPECT_TRUE(r.valid.complete);
  ASSERT_EQ(r.resources.size(), 7u);
  EXPECT_EQ(r.resources[0].threads, 32);
}

TEST_F(SpaceReportTest, Json) {
  nlohmann::json j = space_report_json(report());
  EXPECT_EQ(j["op"], "proj");
  EXPECT_EQ(j["template"], "tiny");
  EXPECT_EQ(j["count"], 7);
  EXPECT_EQ(j["complete"], true);
  EXPECT_EQ(j["unconstrained"], 12.0);
  EXPECT_EQ(j["largest"], nlohmann::json::parse(R"({"batch": 1, "M": 2048, "N": 768, "K": 768})"));
  ASSERT_EQ(j["candidates"].size(), 7u);
  EXPECT_EQ(j["candidates"][6],
            nlohmann::json::parse(R"({"A": 3, "B": 3, "threads": 96, "smem_bytes": 3072})"));
  EXPECT_TRUE(space_report_json(std::vector<OpSpaceReport>{report()}).is_array());
}

TEST_F(SpaceReportTest, Text) {
  EXPECT_EQ(render_space_report(report(), 3),
            "proj: template tiny, largest M=2048 N=768 K=768: 7 valid micro-kernels of 12 "
            "combinations\n"
            "  # A B threads smem\n"
            "  1 1 1      32 1024\n"
            "  2 1 2      32 2048\n"
            "  3 1 3      32 3072\n"
            "  ... 4 more\n"
            "  values used by valid candidates:\n"
            "    A: 1 2 3\n"
            "    B: 1 2 3\n");
}

TEST_F(SpaceReportTest, TextWhenCutShortOrEmptyOrUnsupported) {
  SearchLimits few;
  few.max_candidates = 2;
  OpSpaceReport cut = report_op_space(space_, {gpu_, op_, largest_}, few);
  std::string text = render_space_report(cut, 0);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "proj: template tiny, largest M=2048 N=768 K=768: at least 2 valid micro-kernels of 12 "
            "combinations");
  gpu_.max_threads_per_block = 16;
  EXPECT_EQ(render_space_report(report()),
            "proj: template tiny, largest M=2048 N=768 K=768: 0 valid micro-kernels of 12 "
            "combinations\n");
  OpSpaceReport none;
  none.op = "conv";
  EXPECT_EQ(render_space_report(none), "conv: no template can compute this op\n");
  EXPECT_TRUE(space_report_json(none)["template"].is_null());
  none.computation = "float16 batch_matmul with A stored [K,M] (transpose_a) and B stored [K,N]";
  EXPECT_EQ(render_space_report(none),
            "conv: no template can compute this op (float16 batch_matmul with A stored [K,M] "
            "(transpose_a) and B stored [K,N])\n");
}

}  // namespace
}  // namespace dietcode
