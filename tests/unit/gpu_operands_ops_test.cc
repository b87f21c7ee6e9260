// What the GPU measurer needs to run batch_matmul and conv2d candidates without a GPU: operand
// sizes from the op's layout and geometry, the shape fields of the kernel arguments, the conv
// geometry through the worker protocol, and the measurer's request carrying it per instance.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "measure/gpu_measurer.h"
#include "measure/gpu_operands.h"
#include "measure/gpu_protocol.h"

namespace dietcode {
namespace {

TEST(GpuOperandsOps, BatchMatmulSizesAndStrides) {
  const GemmShape s{12, 37, 64, 37};
  const OperandSizes z = operand_sizes(OpKind::kBatchMatmul, s);
  EXPECT_EQ(z.a, 12 * 37 * 37);
  EXPECT_EQ(z.b, 12 * 37 * 64);
  EXPECT_EQ(z.c, 12 * 37 * 64);
  DietcodeArgs args;
  std::memset(&args, 0, sizeof(args));
  set_shape_args(OpKind::kBatchMatmul, s, nullptr, &args);
  EXPECT_EQ(args.batch, 12);
  EXPECT_EQ(args.m, 37);
  EXPECT_EQ(args.n, 64);
  EXPECT_EQ(args.k, 37);
  EXPECT_EQ(args.stride_a, 37 * 37);
  EXPECT_EQ(args.stride_b, 37 * 64);
  EXPECT_EQ(args.stride_c, 37 * 64);
  set_shape_args(OpKind::kDense, {1, 5, 7, 3}, nullptr, &args);
  EXPECT_EQ(args.stride_b, 0);  // every batch element shares W
}

TEST(GpuOperandsOps, ConvSizesAndGeometry) {
  const Conv2dShape g = make_conv2d_shape(3, 13, 11, 3, 10, 7, 7, 2, 3);
  const GemmShape s = g.gemm();
  EXPECT_EQ(s.M, 3 * 7 * 6);
  EXPECT_EQ(s.K, 147);
  const OperandSizes z = operand_sizes(OpKind::kConv2d, s, &g);
  EXPECT_EQ(z.a, 3 * 13 * 11 * 3);  // the input, not M x K
  EXPECT_EQ(z.b, 10 * 147);
  EXPECT_EQ(z.bias, 10);
  EXPECT_EQ(z.c, 3 * 7 * 6 * 10);
  EXPECT_THROW(operand_sizes(OpKind::kConv2d, s), std::invalid_argument);

  DietcodeArgs args;
  std::memset(&args, 0, sizeof(args));
  set_shape_args(OpKind::kConv2d, s, &g, &args);
  EXPECT_EQ(args.m, s.M);
  EXPECT_EQ(args.n, 10);
  EXPECT_EQ(args.k, 147);
  EXPECT_EQ(args.conv_n, 3);
  EXPECT_EQ(args.conv_h, 13);
  EXPECT_EQ(args.conv_w, 11);
  EXPECT_EQ(args.conv_c, 3);
  EXPECT_EQ(args.conv_k, 10);
  EXPECT_EQ(args.conv_r, 7);
  EXPECT_EQ(args.conv_s, 7);
  EXPECT_EQ(args.conv_p, 7);
  EXPECT_EQ(args.conv_q, 6);
  EXPECT_EQ(args.stride_h, 2);
  EXPECT_EQ(args.pad_w, 3);
  EXPECT_EQ(args.dilation_h, 1);
  EXPECT_EQ(args.stride_a, 0);
  EXPECT_THROW(set_shape_args(OpKind::kConv2d, s, nullptr, &args), std::invalid_argument);
}

TEST(GpuOperandsOps, ConvGeometryTravelsThroughTheProtocol) {
  WorkerCandidate c;
  c.kernel.id = "k";
  c.kernel.plan.entry = "dietcode_conv2d_f32";
  c.op.name = "conv";
  c.op.kind = OpKind::kConv2d;
  Conv2dShape g = make_conv2d_shape(2, 9, 8, 5, 7, 3, 3, 2, 1, 2);
  g.stride_w = 1;  // every field distinct from its neighbour's default
  c.conv = {g, make_conv2d_shape(1, 4, 4, 1, 1, 1, 1)};
  c.shapes = {g.gemm(), c.conv[1].gemm()};
  const WorkerCandidate back = candidate_from_json(to_json(c));
  ASSERT_EQ(back.conv.size(), 2u);
  EXPECT_TRUE(back.conv[0] == g);
  EXPECT_TRUE(back.conv[1] == c.conv[1]);
  auto j = to_json(c);
  j["conv"].erase(1);
  try {
    candidate_from_json(j);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "conv geometries do not match the shapes");
  }
  WorkerCandidate dense;
  dense.shapes = {{1, 2, 3, 4}};
  EXPECT_FALSE(to_json(dense).contains("conv"));
  EXPECT_TRUE(candidate_from_json(to_json(dense)).conv.empty());
}

// A stand-in worker (a forked process) writes down the geometry each "time" request carries.
std::string g_seen;

nlohmann::json recording_worker(const nlohmann::json& request) {
  if (request.at("action") == "identify") {
    GpuSpec spec;
    spec.name = "Fake GPU";
    return {{"name", spec.name}, {"arch", "sm_90"}, {"spec", gpu_spec_to_json(spec)}};
  }
  nlohmann::json results = nlohmann::json::array();
  std::ofstream out(g_seen, std::ios::app);
  for (const auto& cj : request.at("candidates")) {
    const WorkerCandidate c = candidate_from_json(cj);
    WorkerResult r;
    for (size_t i = 0; i < c.shapes.size(); ++i) {
      const Conv2dShape& g = c.conv.at(i);
      out << g.n << "x" << g.h << "x" << g.w << "x" << g.c << " p" << g.p << " M" << c.shapes[i].M
          << "\n";
      r.latency_us.push_back(1.0);
    }
    results.push_back(to_json(r));
  }
  return {{"results", results}, {"context_lost", false}};
}

TEST(GpuOperandsOps, TheMeasurerSendsEachInstancesConvGeometry) {
  g_seen = (std::filesystem::temp_directory_path() /
            ("dietcode_conv_geometry_" + std::to_string(getpid())))
               .string();
  std::filesystem::remove(g_seen);
  OpSpec op;
  op.name = "conv";
  op.kind = OpKind::kConv2d;
  op.dims = {{"N", Expr::parse("N")},  {"H", Expr::parse("H")},   {"W", Expr::constant(8)},
             {"C", Expr::constant(4)}, {"K", Expr::constant(16)}, {"R", Expr::constant(3)},
             {"S", Expr::constant(3)}};
  op.pad[0] = op.pad[1] = 1;
  op.vars = {"N", "H"};
  MeasureInput in;
  in.op = &op;
  in.mk = {"conv2d_f32", {}};
  in.kernel.plan.entry = "dietcode_conv2d_f32";
  in.kernel.plan.tile_m = in.kernel.plan.tile_n = 64;
  in.compiled.ok = true;
  in.compiled.binaries = {{"sm_90", "CUBIN", {}}};
  for (const std::vector<int64_t>& v : {std::vector<int64_t>{2, 5}, {3, 9}}) {
    Instance inst;
    inst.values = v;
    inst.gemm = gemm_shape(op, v);
    in.instances.push_back(inst);
  }
  GpuMeasurerOptions options;
  options.measure.check_results = false;
  GpuMeasurer measurer(std::make_unique<WorkerProcess>(recording_worker), options);
  const auto results = measurer.measure({in});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, MeasureStatus::kOk) << results[0].error;
  std::ifstream seen(g_seen);
  std::stringstream text;
  text << seen.rdbuf();
  EXPECT_EQ(text.str(), "2x5x8x4 p5 M80\n3x9x8x4 p9 M216\n");
  std::filesystem::remove(g_seen);
}

}  // namespace
}  // namespace dietcode
