// The cost model's held-out checks (search/model_quality.h) and what it learns from:
// - one op's model learning from the workload's other ops (OpCostModel::learn_peer): the peer's
//   rows stay its own (key, shapes, epilogue), an op of another element type teaches nothing,
//   the held-out check never learns a held-out kernel from a peer, and on data where a kernel's
//   throughput is its own, the peers' kernels make the ranking of new kernels better;
// - held-out shapes: every kernel ranked on instances the model never saw measured.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "codegen/generated_kernel.h"
#include "search/instance_table.h"
#include "search/kernel_book.h"
#include "search/model_quality.h"
#include "search/op_cost_model.h"
#include "space/machine_spec.h"
#include "workload/workload.h"

namespace dietcode {
namespace {

constexpr const char* kWorkload = R"({
  "name": "peers",
  "shape_vars": { "T": { "values": [1, 4, 8, 16, 32] } },
  "ops": [
    { "name": "qkv", "op": "dense", "dtype": "float32", "M": "16*T", "N": 2304, "K": 768 },
    { "name": "fc1", "op": "dense", "dtype": "float32", "M": "16*T", "N": 3072, "K": 768,
      "epilogue": "bias_gelu" },
    { "name": "half", "op": "dense", "dtype": "float16", "M": "16*T", "N": 768, "K": 768 }
  ]
})";

MachineSpec cpu() {
  CpuSpec c;
  c.name = "test CPU";
  c.isa_level = "x86-64-v4";
  c.threads = 2;
  c.gflops_per_thread_256 = 100;
  c.gflops_per_thread_512 = 100;
  return MachineSpec::of_cpu(c);
}

MicroKernel x86_kernel(int mr, int nr, int kc) {
  return MicroKernel{"x86_avx512_f32",
                     {{"MR", mr}, {"NR", nr}, {"KC", kc}, {"MC", 96}, {"NC", 1024}}};
}

// A kernel's "true" throughput: a function of its tile alone, as f_MK is meant to be (larger
// register tiles slower, KC = 256 best).
double true_gflops(int mr, int nr, int kc) {
  return 200.0 - 9.0 * mr - 0.6 * nr + (kc == 256 ? 25.0 : 0.0);  // 36..216
}

// Fills the book with every kernel of the list, measured on every instance of the table at
// FLOPs / true throughput (and a GELU epilogue 8% slower).
void measure(const std::vector<MicroKernel>& kernels, const InstanceTable& table,
             KernelBook& book) {
  const bool gelu = table.op().epilogue == Epilogue::kBiasGelu;
  for (const MicroKernel& mk : kernels) {
    KernelEntry& e = book.add(mk, LaunchPlan{});
    const double gflops =
        true_gflops(mk.get_or("MR", 1), mk.get_or("NR", 1), mk.get_or("KC", 1)) * (gelu ? 0.92 : 1);
    for (size_t i = 0; i < table.size(); ++i)
      book.add_latency(e, i, table[i].flops / (gflops * 1e3));
  }
}

std::vector<MicroKernel> kernels(int first, int count) {
  const int mrs[] = {2, 4, 6, 8, 10, 12, 14};
  const int nrs[] = {16, 32, 48, 64};
  const int kcs[] = {128, 256, 384};
  std::vector<MicroKernel> out;
  for (int n = first; n < first + count; ++n)
    out.push_back(x86_kernel(mrs[n % 7], nrs[(n / 7) % 4], kcs[(n / 28) % 3]));
  return out;
}

class CostModelPeers : public ::testing::Test {
 protected:
  CostModelPeers()
      : workload_(parse_workload(kWorkload, "peers.json")),
        qkv_(workload_, workload_.ops[0]),
        fc1_(workload_, workload_.ops[1]),
        half_(workload_, workload_.ops[2]) {}
  Workload workload_;
  InstanceTable qkv_, fc1_, half_;
};

TEST_F(CostModelPeers, PeerRowsAreTheirOwnAndAnotherElementTypeTeachesNothing) {
  KernelBook fc1_book(fc1_), half_book(half_), qkv_book(qkv_);
  measure(kernels(0, 1), fc1_, fc1_book);
  measure(kernels(0, 1), half_, half_book);
  measure(kernels(0, 1), qkv_, qkv_book);

  OpCostModel model(qkv_, cpu());
  EXPECT_TRUE(model.learns_from(fc1_));
  EXPECT_FALSE(model.learns_from(half_));
  EXPECT_TRUE(model.learn_peer(fc1_book[0], fc1_));
  EXPECT_EQ(model.model().measurements(), fc1_.size());
  EXPECT_FALSE(model.learn_peer(half_book[0], half_));
  EXPECT_EQ(model.model().measurements(), fc1_.size());
  // The same micro-kernel measured by the op itself is another row group: fc1's GELU makes
  // its times fc1's, not qkv's.
  model.learn(qkv_book[0]);
  EXPECT_EQ(model.model().distinct_kernels(), 2u);
}

TEST_F(CostModelPeers, HeldOutKernelsAreNotLearnedFromPeersAndPeersImproveTheRanking) {
  // qkv measured 12 kernels, too few to learn from (min_kernels_to_learn); fc1 measured the
  // same 12 and 48 more.
  KernelBook qkv_book(qkv_), fc1_book(fc1_);
  measure(kernels(0, 12), qkv_, qkv_book);
  measure(kernels(0, 60), fc1_, fc1_book);

  const CostModelParams params;
  const CostModelQuality alone =
      evaluate_held_out(qkv_book, qkv_, cpu(), params, 0.2, 7, 0.05);
  const CostModelQuality pooled =
      evaluate_held_out(qkv_book, qkv_, cpu(), params, 0.2, 7, 0.05, {{&fc1_book, &fc1_}});
  ASSERT_TRUE(alone.evaluated);
  ASSERT_TRUE(pooled.evaluated);
  EXPECT_EQ(alone.peer_kernels, 0u);
  // Five folds, every kernel held out once.
  EXPECT_EQ(pooled.folds, 5u);
  EXPECT_EQ(alone.held_out_kernels, 12u);
  EXPECT_EQ(pooled.held_out_kernels, 12u);
  // Each fold learned every fc1 kernel but the ones it held out of qkv: a held-out kernel is one
  // no op measured. fc1 measured all 12 of qkv's, so each was withheld once, and a fold learned
  // 60 - 12 / 5 of fc1's on average.
  EXPECT_EQ(alone.peer_kernels_withheld, 0u);
  EXPECT_EQ(pooled.peer_kernels_withheld, 12u);
  EXPECT_EQ(pooled.peer_kernels, 58u);
  // Alone, the model is still the roofline prior, which believes in larger register tiles;
  // here they are slower. With fc1's kernels it learns what the tile does.
  EXPECT_LT(alone.summary.mean_spearman, 0.5);
  EXPECT_GT(pooled.summary.mean_spearman, 0.9);
}

TEST_F(CostModelPeers, HeldOutShapesRankEveryKernelOnInstancesNotLearned) {
  KernelBook qkv_book(qkv_);
  measure(kernels(0, 30), qkv_, qkv_book);
  const CostModelQuality q = evaluate_held_out(qkv_book, qkv_, cpu(), CostModelParams{}, 0.2, 3, 0.05);
  ASSERT_TRUE(q.shapes_evaluated);
  // Five instances in five folds: each held out once, and ranked over every kernel.
  EXPECT_EQ(q.held_out_instances, 5u);
  ASSERT_EQ(q.shapes.per_instance.size(), 5u);
  for (const InstanceQuality& i : q.shapes.per_instance)
    EXPECT_EQ(size_t(i.candidates), qkv_book.usable().size()) << i.instance;
  EXPECT_GT(qkv_book.usable().size(), 25u);
  // The throughputs are the kernels' own on every shape: learned on four shapes, the fifth
  // ranks as measured, whichever it is (T=1 and T=32 included, the ends of the range).
  EXPECT_GT(q.shapes.mean_spearman, 0.95);

  // One instance: nothing to hold out.
  const Workload one = parse_workload(R"({
    "name": "one", "shape_vars": { "T": { "values": [8] } },
    "ops": [ { "name": "qkv", "op": "dense", "dtype": "float32", "M": "16*T", "N": 2304,
               "K": 768 } ] })",
                                      "one.json");
  const InstanceTable single(one, one.ops[0]);
  KernelBook single_book(single);
  measure(kernels(0, 30), single, single_book);
  const CostModelQuality q1 =
      evaluate_held_out(single_book, single, cpu(), CostModelParams{}, 0.2, 3, 0.05);
  EXPECT_TRUE(q1.evaluated);
  EXPECT_FALSE(q1.shapes_evaluated);
}

}  // namespace
}  // namespace dietcode

namespace dietcode {
namespace {

// The log's quality line carries the knobs the search's model fitted, the target's own:
// a CPU's packing cost, a GPU's partial-wave gamma, and the launch overhead on both.
TEST(QualityRecord, CarriesTheFittedKnobsOfItsTarget) {
  CostModelQuality quality;
  quality.evaluated = true;
  AnalyticParams fitted;
  fitted.launch_overhead_us = 61;
  fitted.pack_ns_per_element = 0.18;
  fitted.underfilled_sm_gamma = 0.3;
  const DeviceIdentity cpu{"AMD EPYC", "x86-64-v4", false};
  const nlohmann::json on_cpu = quality_record("w", "qkv", cpu, quality, 0.05, fitted, Target::kCpu);
  EXPECT_EQ(on_cpu["analytic"]["launch_overhead_us"], 61.0);
  EXPECT_EQ(on_cpu["analytic"]["pack_ns_per_element"], 0.18);
  EXPECT_FALSE(on_cpu["analytic"].contains("underfilled_sm_gamma"));
  const DeviceIdentity gpu{"NVIDIA H200", "sm_90", false};
  const nlohmann::json on_gpu = quality_record("w", "qkv", gpu, quality, 0.05, fitted, Target::kCuda);
  EXPECT_EQ(on_gpu["analytic"]["underfilled_sm_gamma"], 0.3);
  EXPECT_FALSE(on_gpu["analytic"].contains("pack_ns_per_element"));
}

}  // namespace
}  // namespace dietcode
