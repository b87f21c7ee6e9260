// What bench reads from a kernel pack: the loader of the C ABI (against stand-in packs, test
// doubles built from tests/data/bench_pack), the manifest with or without dims, the workload
// fallback, --shapes and --ops, and the instances with their weights and tensor sizes.
#include "bench/bench_pack.h"

#include <gtest/gtest.h>

#include <string>

#include "bench/pack_library.h"
#include "common/error.h"
#include "dietcode/pack_abi.h"
#include "workload/workload.h"

namespace dietcode {
namespace {

const std::string kPackDir = DIETCODE_TEST_PACK_DIR;
const std::string kDimsPack = kPackDir + "/libtest_pack_dims.so";
const std::string kNoDimsPack = kPackDir + "/libtest_pack_no_dims.so";

template <typename Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no UserError)";
}

const char kWorkload[] = R"({
  "name": "test_pack",
  "shape_vars": {"T": {"min": 1, "max": 4, "weights": [0.4, 0.3, 0.2, 0.1]}},
  "ops": [
    {"name": "qkv", "op": "dense", "dtype": "float32", "M": "16*T", "N": 64, "K": 32},
    {"name": "fc1", "op": "dense", "dtype": "float16", "M": "16*T", "N": 96, "K": 32,
     "epilogue": "bias_gelu", "weight": 2}
  ]
})";

// A manifest in the pack generator's format with one dense op, for the error cases.
std::string manifest_with(const std::string& op_fields) {
  return R"({"name": "m", "shape_vars": [{"name": "T", "min": 1, "max": 8}], "ops": [{"name": "a", )" +
         op_fields + "}]}";
}

TEST(PackLibrary, LoadsTheAbiOfAStandInPack) {
  PackLibrary pack(kDimsPack);
  EXPECT_EQ(pack.path(), kDimsPack);
  EXPECT_NE(pack.manifest().find("\"name\": \"test_pack\""), std::string::npos);
  const int64_t t = 3;
  EXPECT_EQ(pack.select("qkv", &t, 1), 0);
  EXPECT_EQ(pack.select("nope", &t, 1), -DIETCODE_ERR_UNKNOWN_OP);
  EXPECT_EQ(pack.launch("qkv", nullptr, 0, &t, 1, nullptr), DIETCODE_ERR_NO_DEVICE);
  EXPECT_EQ(pack.last_error(), "test double: this pack launches nothing");
  EXPECT_STREQ(pack_status_name(DIETCODE_ERR_ARCH_MISMATCH), "DIETCODE_ERR_ARCH_MISMATCH");
}

TEST(PackLibrary, RejectsWhatIsNotAPack) {
  EXPECT_EQ(error_of([] { PackLibrary("no_such_pack.so"); }),
            "no_such_pack.so: not a dietcode kernel pack: ./no_such_pack.so: cannot open shared "
            "object file: No such file or directory");
  const std::string not_a_pack = DIETCODE_FAKE_CUDA;  // a shared library without the ABI
  const std::string message = error_of([&] { PackLibrary{not_a_pack}; });
  EXPECT_EQ(message.rfind(not_a_pack + ": not a dietcode kernel pack: ", 0), 0u) << message;
  EXPECT_NE(message.find("undefined symbol: dietcode_abi_version"), std::string::npos) << message;
  EXPECT_EQ(error_of([] { PackLibrary(kPackDir + "/libtest_pack_abi0.so"); }),
            kPackDir +
                "/libtest_pack_abi0.so: pack ABI version 0; this dietcode reads version 1 and "
                "later: rebuild the pack with it");
}

TEST(BenchPack, ReadsTheManifestWithDims) {
  PackLibrary library(kDimsPack);
  const BenchPack pack = parse_bench_pack(library.manifest(), "libtest.so", nullptr);
  EXPECT_EQ(pack.name, "test_pack");
  EXPECT_EQ(pack.archs, std::vector<std::string>{"sm_90"});
  ASSERT_EQ(pack.vars.size(), 1u);
  EXPECT_EQ(pack.vars[0].values, (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(pack.dims_from, "the pack's manifest");
  ASSERT_EQ(pack.ops.size(), 2u);
  const BenchOp& qkv = pack.ops[0];
  EXPECT_EQ(qkv.spec.name, "qkv");
  EXPECT_EQ(qkv.spec.kind, OpKind::kDense);
  EXPECT_EQ(qkv.spec.dtype, DType::kFloat32);
  EXPECT_EQ(qkv.args, (std::vector<std::string>{"X", "W", "Y"}));
  const BenchOp& fc1 = pack.ops[1];
  EXPECT_EQ(fc1.spec.dtype, DType::kFloat16);
  EXPECT_EQ(fc1.spec.epilogue, Epilogue::kBiasGelu);
  EXPECT_EQ(fc1.spec.weight, 2);

  const std::vector<BenchInstance> instances = bench_instances(pack, qkv, {});
  ASSERT_EQ(instances.size(), 4u);
  EXPECT_EQ(instances[2].shape, "T=3");
  EXPECT_EQ(instances[2].gemm.M, 48);
  EXPECT_EQ(instances[2].gemm.N, 64);
  EXPECT_EQ(instances[2].gemm.K, 32);
  EXPECT_DOUBLE_EQ(instances[2].weight, 0.3);  // the manifest's instance weight
  // X[16, 32], W[64, 32], Y[16, 64] at T=1.
  EXPECT_EQ(argument_elements(qkv, instances[0].dims), (std::vector<int64_t>{512, 2048, 1024}));
  // fc1 lists no instance weights: its op weight over four equally likely values.
  const std::vector<BenchInstance> fc1_instances = bench_instances(pack, fc1, {});
  EXPECT_DOUBLE_EQ(fc1_instances[0].weight, 0.5);
  EXPECT_EQ(argument_elements(fc1, fc1_instances[0].dims),
            (std::vector<int64_t>{512, 3072, 96, 1536}));
}

TEST(BenchPack, WithoutDimsNeedsTheWorkload) {
  PackLibrary library(kNoDimsPack);
  EXPECT_EQ(error_of([&] { parse_bench_pack(library.manifest(), "libp.so", nullptr); }),
            "libp.so: manifest: ops[0]: has no \"dims\", so bench cannot tell its tensor sizes; "
            "pass --workload WORKLOAD.json, the workload the pack was built from");

  const Workload workload = parse_workload(kWorkload, "w.json");
  const BenchPack pack = parse_bench_pack(library.manifest(), "libp.so", &workload);
  EXPECT_EQ(pack.dims_from, "w.json");
  const std::vector<BenchInstance> instances = bench_instances(pack, pack.ops[1], {});
  EXPECT_EQ(instances[3].gemm.M, 64);
  EXPECT_EQ(instances[3].gemm.N, 96);
  // fc1 has no weights in the manifest: the workload's T distribution times the op weight 2.
  EXPECT_DOUBLE_EQ(instances[0].weight, 2 * 0.4);
  EXPECT_DOUBLE_EQ(instances[3].weight, 2 * 0.1);
}

TEST(BenchPack, TheWorkloadMustMatchThePack) {
  PackLibrary library(kNoDimsPack);
  std::string other = kWorkload;
  other.replace(other.find("\"float32\""), 9, "\"float16\"");
  const Workload wrong_dtype = parse_workload(other, "w.json");
  EXPECT_EQ(error_of([&] { parse_bench_pack(library.manifest(), "libp.so", &wrong_dtype); }),
            "libp.so: manifest: ops[0].dtype: the pack says float32 but w.json says float16; "
            "bench the pack with the workload it was built from");

  // With dims in the manifest, the workload's must be the same: they are compiled in.
  PackLibrary with_dims(kDimsPack);
  std::string wider = kWorkload;
  wider.replace(wider.find("\"N\": 64"), 7, "\"N\": 65");
  const Workload wrong_n = parse_workload(wider, "w.json");
  EXPECT_EQ(error_of([&] { parse_bench_pack(with_dims.manifest(), "libp.so", &wrong_n); }),
            "libp.so: manifest: ops[0].dims.N: the pack says 64 but w.json says 65; bench the "
            "pack with the workload it was built from");
  const Workload same = parse_workload(kWorkload, "w.json");
  EXPECT_EQ(parse_bench_pack(with_dims.manifest(), "libp.so", &same).dims_from, "w.json");

  std::string renamed = kWorkload;
  renamed.replace(renamed.find("\"fc1\""), 5, "\"fc9\"");
  const Workload missing = parse_workload(renamed, "w.json");
  EXPECT_EQ(error_of([&] { parse_bench_pack(library.manifest(), "libp.so", &missing); }),
            "w.json: has no op \"fc1\", which libp.so: manifest lists at ops[1]");
}

TEST(BenchPack, ManifestErrorsNameThePath) {
  EXPECT_EQ(error_of([] {
              parse_bench_pack("{", "p.so", nullptr);
            }).rfind("p.so: manifest is not valid JSON: ", 0),
            0u);
  EXPECT_EQ(error_of([] {
              parse_bench_pack(manifest_with(R"("op": "dense", "dtype": "float32", "vars": ["T"],
                  "args": ["X", "W", "bias", "Y"], "dims": {"M": "T", "N": 8, "K": 8})"),
                               "p.so", nullptr);
            }),
            "p.so: manifest: ops[0].args: expected [X, W, Y] for a dense op with epilogue none, "
            "got [X, W, bias, Y]");
  EXPECT_EQ(error_of([] {
              parse_bench_pack(manifest_with(R"("op": "dens", "dtype": "float32")"), "p.so",
                               nullptr);
            }),
            "p.so: manifest: ops[0].op: unknown op kind \"dens\" (did you mean \"dense\"?)");
  EXPECT_EQ(error_of([] {
              parse_bench_pack(manifest_with(R"("op": "dense", "dtype": "float32", "vars": ["B"],
                  "args": ["X", "W", "Y"])"),
                               "p.so", nullptr);
            }),
            "p.so: manifest: ops[0].vars[0]: names \"B\", which is not in shape_vars");
  EXPECT_EQ(error_of([] {
              parse_bench_pack(manifest_with(R"("op": "dense", "dtype": "float32", "vars": [],
                  "args": ["X", "W", "Y"], "dims": {"M": "16*T", "N": 8, "K": 8})"),
                               "p.so", nullptr);
            }),
            "p.so: manifest: ops[0].dims.M: uses \"T\", which is not among the op's vars []");
  EXPECT_EQ(error_of([] {
              parse_bench_pack(manifest_with(R"("op": "dense", "dtype": "float32", "vars": ["T"],
                  "args": ["X", "W", "Y"], "dims": {"M": "16*T", "N": 0, "K": 8})"),
                               "p.so", nullptr);
            }),
            "p.so: manifest: ops[0].dims.N: expected a positive integer, got 0");
}

TEST(BenchPack, ShapeOverrides) {
  EXPECT_EQ(parse_shape_override("T=1:4").values, (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(parse_shape_override("T=1:10:4").values, (std::vector<int64_t>{1, 5, 9}));
  EXPECT_EQ(parse_shape_override("T=4,1,2,2").values, (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(parse_shape_override("seq=7").var, "seq");
  EXPECT_EQ(parse_shape_override("seq=7").values, std::vector<int64_t>{7});
  EXPECT_EQ(error_of([] { parse_shape_override("T"); }),
            "--shapes \"T\": expected VAR=FIRST:LAST[:STEP] or VAR=V1,V2,... (e.g. T=1:128 or "
            "T=1,2,4)");
  EXPECT_EQ(error_of([] { parse_shape_override("T=0:3"); }),
            "--shapes \"T=0:3\": shape values must be at least 1, got 0");
  EXPECT_EQ(error_of([] { parse_shape_override("T=a"); }),
            "--shapes \"T=a\": \"a\" is not a positive integer");
  EXPECT_EQ(error_of([] { parse_shape_override("T=5:1"); }),
            "--shapes \"T=5:1\": the range ends before it starts");
  EXPECT_EQ(error_of([] { parse_shape_override("T=1:2:3:4"); }),
            "--shapes \"T=1:2:3:4\": expected FIRST:LAST or FIRST:LAST:STEP");
}

TEST(BenchPack, InstancesWithOverridesAndOpSelection) {
  PackLibrary library(kDimsPack);
  const BenchPack pack = parse_bench_pack(library.manifest(), "p.so", nullptr);
  const std::vector<BenchInstance> instances =
      bench_instances(pack, pack.ops[0], {parse_shape_override("T=2,5")});
  ASSERT_EQ(instances.size(), 2u);
  EXPECT_DOUBLE_EQ(instances[0].weight, 0.2);   // tuned: the manifest's weight
  EXPECT_DOUBLE_EQ(instances[1].weight, 0.25);  // outside the tuned range: 1 of 4 values
  EXPECT_EQ(instances[1].gemm.M, 80);
  const std::vector<BenchInstance> merged = bench_instances(
      pack, pack.ops[0], {parse_shape_override("T=3,1"), parse_shape_override("T=2:3")});
  ASSERT_EQ(merged.size(), 3u);  // repeated --shapes for one variable: the union, in order
  EXPECT_EQ(merged[0].shape, "T=1");
  EXPECT_EQ(merged[2].shape, "T=3");
  EXPECT_EQ(error_of([&] { bench_instances(pack, pack.ops[0], {parse_shape_override("S=1")}); }),
            "--shapes: the pack has no shape variable \"S\" (it has T)");

  EXPECT_EQ(select_ops(pack, {}).size(), 2u);
  const std::vector<const BenchOp*> only = select_ops(pack, {"fc1"});
  ASSERT_EQ(only.size(), 1u);
  EXPECT_EQ(only[0]->spec.name, "fc1");
  EXPECT_EQ(error_of([&] { select_ops(pack, {"qkvv"}); }),
            "--ops: the pack has no op \"qkvv\" (did you mean \"qkv\"?) (it has qkv, fc1)");
  EXPECT_EQ(error_of([&] { select_ops(pack, {"out"}); }),
            "--ops: the pack has no op \"out\" (it has qkv, fc1)");
}

}  // namespace
}  // namespace dietcode
