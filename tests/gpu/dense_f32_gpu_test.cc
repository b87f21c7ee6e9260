// dense_f32 micro-kernels on a real GPU against the CPU reference: sampled micro-kernels
// (every pipeline mode and vector width, small and large tiles, split-K, non-power-of-two
// thread tiles, static and dynamic N/K) on BERT's layers and an odd 1000 x 771 layer, for
// M = 1..17, 31, 33, 63, 127..129, 255, 1000, 2047, 2048 and every epilogue. Also: split-K
// results are bitwise reproducible, and the reference kernel agrees with the CPU.
// Skipped when the CUDA driver cannot be loaded or initialised (src/cuda/driver.h).
#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gpu/gemm_gpu_util.h"
#include "measure/cpu_reference.h"
#include "nvrtc/simt_tile_params.h"

namespace dietcode {
namespace {

using testing::CompiledKernel;
using testing::GpuBuffer;
using testing::simt_tile;
using testing::test_gpu;

OpSpec dense_op(int64_t n, int64_t k, bool static_dims, Epilogue epilogue) {
  OpSpec op;
  op.name = "dense";
  op.kind = OpKind::kDense;
  op.dtype = DType::kFloat32;
  op.epilogue = epilogue;
  op.dims = {{"M", Expr::parse("M")},
             {"N", static_dims ? Expr::constant(n) : Expr::parse("N")},
             {"K", static_dims ? Expr::constant(k) : Expr::parse("K")}};
  op.vars = {"M"};
  return op;
}

std::map<std::string, int> preloaded(std::map<std::string, int> params) {
  params["PRELOAD"] = 1;
  return params;
}

// The sampled micro-kernels.
const std::vector<std::pair<std::string, std::map<std::string, int>>>& samples() {
  static const std::vector<std::pair<std::string, std::map<std::string, int>>> s = {
      {"defaults 128x128 stages2 vec4", {}},
      {"128x128 bk16 cp.async3", simt_tile(4, 2, 4, 8, 8, 16, 1, 3, 1)},
      {"64x32 bk8 single-buffer vec2", simt_tile(2, 2, 4, 8, 2, 8, 2, 1, 1)},
      {"16x64 bk16 vec4 splitk4", simt_tile(1, 2, 4, 4, 4, 16, 4, 2, 4)},
      {"4x32 bk8 vec2 single splitk2", simt_tile(1, 1, 2, 2, 2, 8, 2, 1, 2)},
      {"12x96 tm6 tn3 cp.async4 splitk3", simt_tile(1, 2, 2, 6, 3, 16, 1, 4, 3)},
      {"256x128 512thr cp.async3", simt_tile(4, 4, 8, 8, 8, 16, 1, 3, 1)},
      {"16x32 bk32 cp.async3 splitk16", simt_tile(1, 1, 4, 4, 4, 32, 1, 3, 16)},
      {"128x128 16x8/thread vec4 preload", preloaded(simt_tile(2, 2, 4, 16, 8, 8, 4, 2))},
      {"64x256 16x8/thread cp.async3 preload", preloaded(simt_tile(1, 4, 4, 16, 8, 8, 1, 3))},
      {"16x64 bk16 cp.async4 preload splitk4", preloaded(simt_tile(1, 2, 4, 4, 4, 16, 1, 4, 4))},
  };
  return s;
}

struct Layer {
  int64_t n, k;
};
const Layer kLayers[] = {{768, 768}, {2304, 768}, {3072, 768}, {768, 3072}, {1000, 771}};
const int64_t kMs[] = {1,  2,  3,  4,  5,  6,  7,   8,   9,   10,  11,   12,   13,  14,
                       15, 16, 17, 31, 33, 63, 127, 128, 129, 255, 1000, 2047, 2048};
constexpr int64_t kMaxM = 2048;

// One layer's inputs on host and device, and its reference for kMaxM rows.
struct LayerData {
  Layer layer;
  std::vector<float> x, w, bias;
  DenseAccumulation acc;
  std::map<Epilogue, std::vector<float>> want;
  GpuBuffer dx, dw, dbias;
  std::string upload_error;  // empty when the operands are on the device
};

class DenseF32Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test_gpu().error.empty()) GTEST_SKIP() << "no GPU: " << test_gpu().error;
  }

 public:
  // Layer data and references are built once per process and shared by the tests.
  static LayerData& data(const Layer& layer) {
    static std::map<std::pair<int64_t, int64_t>, std::unique_ptr<LayerData>> cache;
    auto& slot = cache[{layer.n, layer.k}];
    if (!slot) {
      slot = std::make_unique<LayerData>();
      LayerData& d = *slot;
      d.layer = layer;
      std::mt19937 rng(unsigned(layer.n * 31 + layer.k));
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      d.x.resize(size_t(kMaxM * layer.k));
      d.w.resize(size_t(layer.n * layer.k));
      d.bias.resize(size_t(layer.n));
      for (auto& v : d.x) v = dist(rng);
      for (auto& v : d.w) v = dist(rng);
      for (auto& v : d.bias) v = dist(rng);
      d.acc = dense_accumulate(d.x.data(), d.w.data(), kMaxM, layer.n, layer.k);
      d.upload_error = d.dx.upload(d.x);
      if (d.upload_error.empty()) d.upload_error = d.dw.upload(d.w);
      if (d.upload_error.empty()) d.upload_error = d.dbias.upload(d.bias);
    }
    return *slot;
  }

  static const std::vector<float>& want(LayerData& d, Epilogue e) {
    auto it = d.want.find(e);
    if (it == d.want.end())
      it = d.want.emplace(e, dense_apply_epilogue(d.acc, d.bias.data(), e, kMaxM)).first;
    return it->second;
  }
};

// The generated kernels of a test with the layer and epilogue each one is checked on.
struct Jobs {
  std::vector<CompiledKernel> kernels;
  std::vector<Layer> layers;
  std::vector<Epilogue> epilogues;

  void add(const std::string& sample, const std::map<std::string, int>& params, Layer layer,
           Epilogue epilogue, bool static_dims) {
    kernels.push_back({sample + (static_dims ? " static " : " dynamic ") + std::to_string(layer.n) +
                           "x" + std::to_string(layer.k) + " epilogue " +
                           std::to_string(int(epilogue)),
                       generate_kernel(dense_op(layer.n, layer.k, static_dims, epilogue),
                                       MicroKernel{"dense_f32", params}),
                       {}});
    layers.push_back(layer);
    epilogues.push_back(epilogue);
  }
};

// Launches a compiled kernel (and its split-K reduction) for M rows of a layer into y; returns
// "" or what went wrong.
std::string launch(const CompiledKernel& k, const LayerData& d, int64_t M, const GpuBuffer& y) {
  return testing::launch_dense(k, d.dx, d.dw, d.dbias, y, M, d.layer.n, d.layer.k);
}

// Every M of the list for one kernel; stops at the first wrong M to keep the report short.
void check_kernel(const CompiledKernel& k, const Layer& layer, Epilogue epilogue) {
  SCOPED_TRACE(k.label);
  ASSERT_TRUE(k.build.ok) << k.build.log;
  LayerData& d = DenseF32Gpu::data(layer);
  ASSERT_EQ(d.upload_error, "");
  const auto& want = DenseF32Gpu::want(d, epilogue);
  const bool with_bias = epilogue == Epilogue::kBias || epilogue == Epilogue::kBiasRelu ||
                         epilogue == Epilogue::kBiasGelu;
  static GpuBuffer y;
  std::vector<float> got;
  for (const int64_t M : kMs) {
    const size_t count = size_t(M * d.layer.n);
    ASSERT_EQ(y.fill_nan(count), "");  // NaN: unwritten outputs fail
    ASSERT_EQ(launch(k, d, M, y), "") << "M=" << M;
    ASSERT_EQ(y.download(got, count), "");
    const auto cmp = compare_dense(got.data(), want, d.acc, with_bias ? d.bias.data() : nullptr, M);
    ASSERT_TRUE(cmp.ok) << "M=" << M << ": " << cmp.message;
  }
}

void check_all(const Jobs& jobs) {
  for (size_t i = 0; i < jobs.kernels.size(); ++i)
    check_kernel(jobs.kernels[i], jobs.layers[i], jobs.epilogues[i]);
}

}  // namespace

// Micro-kernel i on layer j uses epilogue (i + j) % 6, so every epilogue meets every sample
// and every layer; the defaults and the split-K sample also run with runtime N and K, and the
// defaults run every epilogue on two layers.
TEST_F(DenseF32Gpu, SampledMicroKernelsMatchTheReference) {
  Jobs jobs;
  const auto& s = samples();
  for (size_t i = 0; i < s.size(); ++i)
    for (size_t j = 0; j < std::size(kLayers); ++j) {
      const auto epilogue = static_cast<Epilogue>((i + j) % 6);
      jobs.add(s[i].first, s[i].second, kLayers[j], epilogue, true);
      if (i == 0 || i == 3) jobs.add(s[i].first, s[i].second, kLayers[j], epilogue, false);
    }
  for (const size_t j : {size_t(0), size_t(4)})
    for (int e = 0; e < 6; ++e)
      if (size_t(e) != j % 6)
        jobs.add(s[0].first, s[0].second, kLayers[j], static_cast<Epilogue>(e), true);
  testing::compile_all(jobs.kernels);
  check_all(jobs);
}

TEST_F(DenseF32Gpu, SplitKIsBitwiseReproducible) {
  Jobs jobs;
  jobs.add(samples()[7].first, samples()[7].second, {768, 3072}, Epilogue::kBias, true);
  testing::compile_all(jobs.kernels);
  const CompiledKernel& k = jobs.kernels[0];
  ASSERT_TRUE(k.build.ok) << k.build.log;
  LayerData& d = data({768, 3072});
  ASSERT_EQ(d.upload_error, "");
  EXPECT_EQ(
      testing::dense_runs_agree_bitwise(k, d.dx, d.dw, d.dbias, 1000, d.layer.n, d.layer.k, 4), "");
}

TEST_F(DenseF32Gpu, ReferenceKernelMatchesTheCpu) {
  for (const Epilogue e : {Epilogue::kNone, Epilogue::kBiasGelu, Epilogue::kRelu}) {
    std::vector<CompiledKernel> kernels = {
        {"reference_gemm epilogue " + std::to_string(int(e)),
         generate_reference_kernel(dense_op(1000, 771, false, e)),
         {}}};
    testing::compile_all(kernels);
    check_kernel(kernels[0], {1000, 771}, e);
  }
}

}  // namespace dietcode
