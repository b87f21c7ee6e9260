// Tensor-core micro-kernels on a real GPU against the 16-bit CPU reference: sampled dense_tc
// (mma.sync) micro-kernels on any sm_80+ GPU and dense_wgmma micro-kernels on compute
// capability 9.0 (compiled for sm_90a), in float16 and bfloat16, on BERT's layers, Llama-7B's
// MLP layers (N=11008 K=4096 and N=4096 K=11008), an odd 1000 x 776 layer and a 1001 x 771
// layer (K not a multiple of 8: the scalar load path), for M = 1..17, 31, 33, 127, 128, 129,
// 1000 and every epilogue. Also: split-K results are bitwise reproducible, and the 16-bit
// reference kernel agrees with the CPU. Skipped when the CUDA driver cannot be loaded or
// initialised (src/cuda/driver.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gpu/gemm_gpu_util.h"
#include "measure/cpu_reference_half.h"

namespace dietcode {
namespace {

using testing::CompiledKernel;
using testing::GpuBuffer;
using testing::test_gpu;

bool hopper() { return test_gpu().spec.cc_major == 9 && test_gpu().spec.cc_minor == 0; }

OpSpec dense_op(int64_t n, int64_t k, bool static_dims, DType dtype, Epilogue epilogue) {
  OpSpec op;
  op.name = "dense";
  op.kind = OpKind::kDense;
  op.dtype = dtype;
  op.epilogue = epilogue;
  op.dims = {{"M", Expr::parse("M")},
             {"N", static_dims ? Expr::constant(n) : Expr::parse("N")},
             {"K", static_dims ? Expr::constant(k) : Expr::parse("K")}};
  op.vars = {"M"};
  return op;
}

struct Sample {
  std::string label;
  std::string tmpl;
  std::map<std::string, int> params;
};

std::map<std::string, int> tc(int warps_m, int warps_n, int wm, int wn, int bk, int stages,
                              int split) {
  return {{"WARPS_M", warps_m}, {"WARPS_N", warps_n}, {"WM", wm},       {"WN", wn},
          {"BK", bk},           {"STAGES", stages},   {"SPLITK", split}};
}

std::map<std::string, int> wg(int wg_m, int bn, int stages, int split, int producer = 0) {
  return {{"WG_M", wg_m}, {"BN", bn}, {"STAGES", stages}, {"SPLITK", split},
          {"PRODUCER", producer}};
}

// DIETCODE_TEST_SAMPLES=TEXT keeps only the sampled micro-kernels whose label contains TEXT, so
// a GPU host can run mma.sync, wgmma with cp.async and wgmma with TMA each under its own time
// limit ("tc ", "wgmma cp.async", "wgmma tma"); unset, every sample runs.
bool selected(const std::string& label) {
  const char* only = std::getenv("DIETCODE_TEST_SAMPLES");
  return only == nullptr || label.find(only) != std::string::npos;
}

bool uses_tma(const Sample& s) {
  auto it = s.params.find("PRODUCER");
  return it != s.params.end() && it->second == 1;
}

// The sampled micro-kernels: dense_tc everywhere, dense_wgmma on compute capability 9.0.
std::vector<Sample> samples() {
  std::vector<Sample> s = {
      {"tc defaults 128x64 bk32 3 stages", "dense_tc", {}},
      {"tc 16x8 one warp 2 stages", "dense_tc", tc(1, 1, 16, 8, 32, 2, 1)},
      {"tc 16x64 bk64 4 stages splitk4", "dense_tc", tc(1, 4, 16, 16, 64, 4, 4)},
      {"tc 64x48 odd n8 bk64 3 stages", "dense_tc", tc(2, 2, 32, 24, 64, 3, 1)},
      {"tc 256x128 bk64 4 stages", "dense_tc", tc(4, 2, 64, 64, 64, 4, 1)},
      {"tc 128x128 8 warps splitk3", "dense_tc", tc(2, 4, 64, 32, 32, 4, 3)},
      {"tc 128x32 one warp splitk16", "dense_tc", tc(1, 1, 128, 32, 32, 2, 16)},
  };
  if (hopper()) {
    s.push_back({"wgmma cp.async 128x128 4 stages", "dense_wgmma", {}});
    s.push_back({"wgmma cp.async 64x64 2 stages splitk4", "dense_wgmma", wg(1, 64, 2, 4)});
    s.push_back({"wgmma cp.async 128x256 4 stages", "dense_wgmma", wg(2, 256, 4, 1)});
    s.push_back({"wgmma cp.async 64x128 6 stages splitk2", "dense_wgmma", wg(1, 128, 6, 2)});
    // The same four with the TMA producer (samples 11..14).
    s.push_back({"wgmma tma 128x128 4 stages", "dense_wgmma", wg(2, 128, 4, 1, 1)});
    s.push_back({"wgmma tma 64x64 2 stages splitk4", "dense_wgmma", wg(1, 64, 2, 4, 1)});
    s.push_back({"wgmma tma 128x256 4 stages", "dense_wgmma", wg(2, 256, 4, 1, 1)});
    s.push_back({"wgmma tma 64x128 6 stages splitk2", "dense_wgmma", wg(1, 128, 6, 2, 1)});
    // Widths that are not powers of two, three and four consumers (samples 15..18).
    s.push_back({"wgmma cp.async 192x88 5 stages", "dense_wgmma", wg(3, 88, 5, 1)});
    s.push_back({"wgmma tma 128x168 5 stages", "dense_wgmma", wg(2, 168, 5, 1, 1)});
    s.push_back({"wgmma tma 256x112 4 stages splitk3", "dense_wgmma", wg(4, 112, 4, 3, 1)});
    s.push_back({"wgmma cp.async 256x72 3 stages splitk2", "dense_wgmma", wg(4, 72, 3, 2)});
    // The staged store, with each producer (samples 19, 20).
    auto staged = [](std::map<std::string, int> p) {
      p["EPI_SMEM"] = 1;
      return p;
    };
    s.push_back({"wgmma cp.async 192x88 staged store", "dense_wgmma", staged(wg(3, 88, 4, 1))});
    s.push_back({"wgmma tma 128x256 staged store", "dense_wgmma", staged(wg(2, 256, 3, 1, 1))});
    // Blocks walking M tiles first (sample 21).
    auto m_first = wg(1, 88, 4, 2, 1);
    m_first["M_FASTEST"] = 1;
    s.push_back({"wgmma tma 64x88 M tiles first splitk2", "dense_wgmma", m_first});
    // Blocks that walk several M tiles in turn (samples 22, 23): up to 1000 rows are 8 tiles of
    // 128 or 16 of 64, so walks of 3 and 2 leave the last block row short.
    auto walking = [](std::map<std::string, int> p, int m_tiles) {
      p["M_TILES"] = m_tiles;
      return p;
    };
    s.push_back({"wgmma tma 128x144 3 M tiles a block staged store", "dense_wgmma",
                 walking(staged(wg(2, 144, 5, 1, 1)), 3)});
    s.push_back({"wgmma cp.async 64x96 2 M tiles a block splitk2", "dense_wgmma",
                 walking(wg(1, 96, 4, 2), 2)});
  }
  return s;
}

struct Layer {
  int64_t n, k;
  int64_t max_m;  // the largest M the layer is checked at
};
const Layer kLayers[] = {{768, 768, 1000},  {2304, 768, 1000},   {3072, 768, 1000},
                         {768, 3072, 1000}, {11008, 4096, 1000}, {4096, 11008, 1000},
                         {1000, 776, 1000}, {1001, 771, 1000}};
const int64_t kMs[] = {1,  2,  3,  4,  5,  6,  7,  8,   9,   10,  11,  12,
                       13, 14, 15, 16, 17, 31, 33, 127, 128, 129, 1000};

// One layer's 16-bit inputs on host and device, and its reference accumulation.
struct LayerData {
  Layer layer;
  DType dtype;
  std::vector<uint16_t> x, w, bias;
  DenseAccumulation acc;
  std::map<Epilogue, std::vector<float>> want;
  GpuBuffer dx, dw, dbias;
  std::string upload_error;  // empty when the operands are on the device
};

class DenseTcGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test_gpu().error.empty())
      GTEST_SKIP() << "no GPU for tensor-core kernels: " << test_gpu().error;
    if (test_gpu().spec.cc_major < 8)
      GTEST_SKIP() << "no GPU for tensor-core kernels: tensor-core templates need sm_80 or newer, "
                      "GPU is "
                   << test_gpu().arch;
  }

 public:
  // Inputs and references are built once per (layer, type) and shared by the tests.
  static LayerData& data(const Layer& layer, DType dtype) {
    static std::map<std::tuple<int64_t, int64_t, int>, std::unique_ptr<LayerData>> cache;
    auto& slot = cache[{layer.n, layer.k, int(dtype)}];
    if (!slot) {
      slot = std::make_unique<LayerData>();
      LayerData& d = *slot;
      d.layer = layer;
      d.dtype = dtype;
      std::mt19937 rng(unsigned(layer.n * 31 + layer.k + int(dtype)));
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      auto random = [&](size_t count) {
        std::vector<float> v(count);
        for (auto& e : v) e = dist(rng);
        return floats_to_elements(v, dtype);
      };
      d.x = random(size_t(layer.max_m * layer.k));
      d.w = random(size_t(layer.n * layer.k));
      d.bias = random(size_t(layer.n));
      d.acc = dense_accumulate_16bit(d.x.data(), d.w.data(), layer.max_m, layer.n, layer.k, dtype);
      d.upload_error = d.dx.upload(d.x);
      if (d.upload_error.empty()) d.upload_error = d.dw.upload(d.w);
      if (d.upload_error.empty()) d.upload_error = d.dbias.upload(d.bias);
    }
    return *slot;
  }

  static const std::vector<float>& want(LayerData& d, Epilogue e) {
    auto it = d.want.find(e);
    if (it == d.want.end())
      it = d.want
               .emplace(e,
                        dense_apply_epilogue_16bit(d.acc, d.bias.data(), e, d.layer.max_m, d.dtype))
               .first;
    return it->second;
  }
};

// The generated kernels of a test with the layer, type and epilogue each one is checked on.
struct Jobs {
  std::vector<CompiledKernel> kernels;
  std::vector<Layer> layers;
  std::vector<DType> dtypes;
  std::vector<Epilogue> epilogues;

  void add(const Sample& sample, Layer layer, DType dtype, Epilogue epilogue, bool static_dims) {
    kernels.push_back({sample.label + (static_dims ? " static " : " dynamic ") + to_string(dtype) +
                           " " + std::to_string(layer.n) + "x" + std::to_string(layer.k) +
                           " epilogue " + to_string(epilogue),
                       generate_kernel(dense_op(layer.n, layer.k, static_dims, dtype, epilogue),
                                       MicroKernel{sample.tmpl, sample.params}),
                       {}});
    layers.push_back(layer);
    dtypes.push_back(dtype);
    epilogues.push_back(epilogue);
  }

  // Drops the kernels whose shared memory exceeds the GPU's opt-in limit.
  void keep_those_that_fit() {
    Jobs fit;
    for (size_t i = 0; i < kernels.size(); ++i) {
      if (kernels[i].kernel.plan.dynamic_smem_bytes > test_gpu().spec.smem_per_block_optin)
        continue;
      fit.kernels.push_back(std::move(kernels[i]));
      fit.layers.push_back(layers[i]);
      fit.dtypes.push_back(dtypes[i]);
      fit.epilogues.push_back(epilogues[i]);
    }
    *this = std::move(fit);
  }
};

// Launches a compiled kernel (and its split-K reduction) for M rows of a layer into y; returns
// "" or what went wrong.
std::string launch(const CompiledKernel& k, const LayerData& d, int64_t M, const GpuBuffer& y) {
  return testing::launch_dense(k, d.dx, d.dw, d.dbias, y, M, d.layer.n, d.layer.k);
}

// Every M of the list for one kernel; stops at the first wrong M to keep the report short.
void check_kernel(const CompiledKernel& k, const Layer& layer, DType dtype, Epilogue epilogue) {
  SCOPED_TRACE(k.label);
  // A progress line: if a kernel hangs until the case's time limit, the log names it.
  std::fprintf(stderr, "checking %s\n", k.label.c_str());
  ASSERT_TRUE(k.build.ok) << k.build.log;
  LayerData& d = DenseTcGpu::data(layer, dtype);
  ASSERT_EQ(d.upload_error, "");
  const auto& want = DenseTcGpu::want(d, epilogue);
  const uint16_t* bias = epilogue_has_bias(epilogue) ? d.bias.data() : nullptr;
  static GpuBuffer y;
  std::vector<uint16_t> got;
  for (const int64_t M : kMs) {
    if (M > layer.max_m) continue;
    const size_t count = size_t(M * d.layer.n);
    ASSERT_EQ(y.fill_bytes(0xFF, (count + 128) * 2), "");  // NaN: unwritten outputs fail
    ASSERT_EQ(launch(k, d, M, y), "") << "M=" << M;
    ASSERT_EQ(y.download(got, count + 128), "");
    for (size_t i = count; i < count + 128; ++i)
      ASSERT_EQ(got[i], 0xFFFF) << "M=" << M << ": Y written past its end at " << i;
    const auto cmp = compare_dense_16bit(got.data(), want, d.acc, bias, M, dtype);
    ASSERT_TRUE(cmp.ok) << "M=" << M << ": " << cmp.message;
  }
}

void check_all(const Jobs& jobs) {
  for (size_t i = 0; i < jobs.kernels.size(); ++i)
    check_kernel(jobs.kernels[i], jobs.layers[i], jobs.dtypes[i], jobs.epilogues[i]);
}

}  // namespace

// Sample i on layer j uses epilogue (i + j) % 6 and type (i + j) % 2, so every epilogue and
// type meets every sample and every layer; samples 0, 2 and 7 also run with runtime N and K.
// TMA samples need a static K that is a multiple of 8: they skip the K = 771 layer.
TEST_F(DenseTcGpu, SampledMicroKernelsMatchTheReference) {
  Jobs jobs;
  const auto s = samples();
  for (size_t i = 0; i < s.size(); ++i)
    for (size_t j = 0; j < std::size(kLayers); ++j) {
      const auto epilogue = static_cast<Epilogue>((i + j) % 6);
      const DType dtype = (i + j) % 2 ? DType::kFloat16 : DType::kBFloat16;
      if (!selected(s[i].label)) continue;
      if (uses_tma(s[i]) && kLayers[j].k % 8 != 0) continue;
      jobs.add(s[i], kLayers[j], dtype, epilogue, true);
      if (i == 0 || i == 2 || i == 7) jobs.add(s[i], kLayers[j], dtype, epilogue, false);
    }
  jobs.keep_those_that_fit();
  testing::compile_all(jobs.kernels);
  check_all(jobs);
}

TEST_F(DenseTcGpu, SplitKIsBitwiseReproducible) {
  Jobs jobs;
  jobs.add(samples()[5], {768, 3072, 1000}, DType::kBFloat16, Epilogue::kBias, true);
  if (hopper()) {
    jobs.add(samples()[8], {768, 3072, 1000}, DType::kFloat16, Epilogue::kGelu, true);
    jobs.add(samples()[12], {768, 3072, 1000}, DType::kBFloat16, Epilogue::kBiasGelu, true);
  }
  testing::compile_all(jobs.kernels);
  for (size_t i = 0; i < jobs.kernels.size(); ++i) {
    const CompiledKernel& k = jobs.kernels[i];
    SCOPED_TRACE(k.label);
    ASSERT_TRUE(k.build.ok) << k.build.log;
    LayerData& d = data(jobs.layers[i], jobs.dtypes[i]);
    ASSERT_EQ(d.upload_error, "");
    EXPECT_EQ(
        testing::dense_runs_agree_bitwise(k, d.dx, d.dw, d.dbias, 1000, d.layer.n, d.layer.k, 2),
        "");
  }
}

TEST_F(DenseTcGpu, ReferenceKernelMatchesTheCpu) {
  for (const DType dtype : {DType::kFloat16, DType::kBFloat16})
    for (const Epilogue e : {Epilogue::kNone, Epilogue::kBiasGelu}) {
      std::vector<CompiledKernel> kernels = {
          {std::string("reference_gemm ") + to_string(dtype) + " " + to_string(e),
           generate_reference_kernel(dense_op(1001, 771, false, dtype, e)),
           {}}};
      testing::compile_all(kernels);
      check_kernel(kernels[0], {1001, 771, 1000}, dtype, e);
    }
}

}  // namespace dietcode
