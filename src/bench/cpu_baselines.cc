// The CPU baselines of cpu_baseline.h: oneDNN (fused epilogues) and OpenBLAS (sgemm + a
// separate epilogue pass).
#include <dlfcn.h>
#include <sched.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <map>
#include <thread>

#include "bench/cpu_baseline.h"
#include "bench/onednn_loader.h"
#include "bench/openblas_loader.h"
#include "common/error.h"

namespace dietcode {

namespace {

int default_threads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

bool has_activation(Epilogue e) {
  return e == Epilogue::kRelu || e == Epilogue::kBiasRelu || e == Epilogue::kGelu ||
         e == Epilogue::kBiasGelu;
}
bool is_gelu(Epilogue e) { return e == Epilogue::kGelu || e == Epilogue::kBiasGelu; }

// "bias + relu", "gelu", "no epilogue".
std::string epilogue_words(Epilogue e) {
  switch (e) {
    case Epilogue::kNone:
      return "no epilogue";
    case Epilogue::kBias:
      return "bias";
    case Epilogue::kRelu:
      return "relu";
    case Epilogue::kBiasRelu:
      return "bias + relu";
    case Epilogue::kGelu:
      return "gelu-tanh";
    case Epilogue::kBiasGelu:
      return "bias + gelu-tanh";
  }
  return "?";
}

// What every baseline refuses, or "" when the op is one they can run.
std::string common_refusal(const OpSpec& op) {
  if (op.dtype != DType::kFloat32)
    return std::string("runs fp32 only, and this op is ") + to_string(op.dtype);
  if (op.kind == OpKind::kBatchMatmul && epilogue_has_bias(op.epilogue))
    return "a batch_matmul has no bias";
  return "";
}

void check_operands(const std::string& who, const OpSpec& op, const GemmShape& shape,
                    const Conv2dShape* conv, const CpuGemmOperands& operands) {
  const std::string refusal = common_refusal(op);
  if (!refusal.empty()) throw std::invalid_argument(who + ": " + refusal);
  if (!operands.a || !operands.b || !operands.y)
    throw std::invalid_argument(who + ": prepare needs the a, b and y operands");
  if (epilogue_has_bias(op.epilogue) && !operands.bias)
    throw std::invalid_argument(who + ": the epilogue has a bias, and no bias operand was given");
  if (op.kind == OpKind::kConv2d && !conv)
    throw std::invalid_argument(who + ": a conv2d instance needs its Conv2dShape");
  if (shape.batch < 1 || shape.M < 1 || shape.N < 1 || shape.K < 1)
    throw std::invalid_argument(who + ": empty GEMM shape");
}

// ---- oneDNN -------------------------------------------------------------------------------------

class OnednnBaseline : public CpuBaseline {
 public:
  explicit OnednnBaseline(int threads) : api_(onednn_api()), threads_(threads) {
    set_threads();
    check_onednn(api_.dnnl_engine_create(&engine_, dnnl::cpu, 0), "dnnl_engine_create(cpu)");
    check_onednn(api_.dnnl_stream_create(&stream_, engine_, dnnl::stream_in_order),
                 "dnnl_stream_create");
  }

  ~OnednnBaseline() override {
    release_memories();
    for (auto& [key, p] : cache_) {
      if (p.reorder) api_.dnnl_primitive_destroy(p.reorder);
      if (p.primitive) api_.dnnl_primitive_destroy(p.primitive);
      if (p.pd) api_.dnnl_primitive_desc_destroy(p.pd);
    }
    if (stream_) api_.dnnl_stream_destroy(stream_);
    if (engine_) api_.dnnl_engine_destroy(engine_);
  }

  std::string name() const override { return "onednn"; }
  std::string label() const override {
    return api_.label() + (api_.omp_set_num_threads ? "" : " (thread count not settable)");
  }
  int threads() const override { return threads_; }

  bool supports(const OpSpec& op, std::string* what) const override {
    const std::string refusal = common_refusal(op);
    if (!refusal.empty()) {
      *what = "onednn " + refusal;
      return false;
    }
    const std::string fused =
        op.epilogue == Epilogue::kNone
            ? std::string("no epilogue")
            : "fused " + epilogue_words(op.epilogue) + " (" +
                  std::string(epilogue_has_bias(op.epilogue) ? "bias operand" : "") +
                  (epilogue_has_bias(op.epilogue) && has_activation(op.epilogue) ? ", " : "") +
                  (has_activation(op.epilogue)
                       ? (is_gelu(op.epilogue) ? "eltwise_gelu_tanh post-op" : "eltwise_relu post-op")
                       : "") +
                  ")";
    switch (op.kind) {
      case OpKind::kDense:
        *what = label() + " matmul (weights as a transposed strided view), " + fused;
        return true;
      case OpKind::kBatchMatmul:
        *what = label() + " 3-D matmul (transposes as strides), " + fused;
        return true;
      case OpKind::kConv2d:
        *what = label() + " convolution forward (NHWC, OHWI weights), " + fused;
        return true;
    }
    return false;
  }

  void prepare(const OpSpec& op, const GemmShape& shape, const Conv2dShape* conv,
               const CpuGemmOperands& operands) override {
    check_operands("onednn", op, shape, conv, operands);
    set_threads();  // jit implementations size their work split by the thread count
    release_memories();
    const std::string key = cache_key(op, shape, conv);
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      Prepared p = op.kind == OpKind::kConv2d ? make_conv(op, *conv) : make_matmul(op, shape);
      it = cache_.emplace(key, p).first;
    }
    current_ = &it->second;
    const bool bias = epilogue_has_bias(op.epilogue);

    add_memory(dnnl::arg_src, &current_->src, const_cast<float*>(operands.a));
    add_memory(dnnl::arg_dst, &current_->dst, operands.y);
    if (bias) add_memory(dnnl::arg_bias, &current_->bias, const_cast<float*>(operands.bias));
    if (!current_->reorder) {
      add_memory(dnnl::arg_weights, &current_->weights, const_cast<float*>(operands.b));
    } else {
      // The implementation wants its own weights layout: reorder once, here, outside the timing.
      const size_t bytes = api_.dnnl_memory_desc_get_size(&current_->weights);
      reordered_weights_.assign(bytes / sizeof(float) + 16, 0.0f);
      dnnl::memory_t from = nullptr, to = nullptr;
      check_onednn(api_.dnnl_memory_create(&from, &current_->plain_weights, engine_,
                                           const_cast<float*>(operands.b)),
                   "dnnl_memory_create(weights)");
      memories_.push_back(from);
      add_memory(dnnl::arg_weights, &current_->weights, reordered_weights_.data());
      to = args_.back().memory;
      const dnnl::ExecArg reorder_args[] = {{dnnl::arg_from, from}, {dnnl::arg_to, to}};
      check_onednn(api_.dnnl_primitive_execute(current_->reorder, stream_, 2, reorder_args),
                   "weights reorder");
      check_onednn(api_.dnnl_stream_wait(stream_), "dnnl_stream_wait");
    }
  }

  std::string instance_detail() const override {
    if (!current_) return "";
    return current_->impl + (current_->reorder ? " (weights reordered outside the timing)" : "");
  }

  void run() override {
    if (!current_) throw std::logic_error("onednn: run() before prepare()");
    set_threads();
    check_onednn(api_.dnnl_primitive_execute(current_->primitive, stream_, int(args_.size()),
                                             args_.data()),
                 "dnnl_primitive_execute");
    check_onednn(api_.dnnl_stream_wait(stream_), "dnnl_stream_wait");
  }

 private:
  struct Prepared {
    dnnl::primitive_desc_t pd = nullptr;
    dnnl::primitive_t primitive = nullptr;
    dnnl::primitive_t reorder = nullptr;  // plain weights -> weights, when they differ
    dnnl::MemoryDesc src{}, weights{}, plain_weights{}, bias{}, dst{};
    std::string impl;
  };

  void set_threads() {
    if (api_.omp_set_num_threads) api_.omp_set_num_threads(threads_);
  }

  void add_memory(int arg, const dnnl::MemoryDesc* md, void* data) {
    dnnl::memory_t m = nullptr;
    check_onednn(api_.dnnl_memory_create(&m, md, engine_, data), "dnnl_memory_create");
    memories_.push_back(m);
    args_.push_back({arg, m});
  }

  void release_memories() {
    for (dnnl::memory_t m : memories_) api_.dnnl_memory_destroy(m);
    memories_.clear();
    args_.clear();
    current_ = nullptr;
  }

  static std::string cache_key(const OpSpec& op, const GemmShape& s, const Conv2dShape* c) {
    std::string key = std::string(to_string(op.kind)) + "/" + to_string(op.epilogue) + "/";
    if (op.kind == OpKind::kConv2d) {
      for (int64_t v : {c->n, c->h, c->w, c->c, c->k, c->r, c->s, c->p, c->q,
                        int64_t(c->stride_h), int64_t(c->stride_w), int64_t(c->pad_h),
                        int64_t(c->pad_w), int64_t(c->dilation_h), int64_t(c->dilation_w)})
        key += std::to_string(v) + ",";
    } else {
      for (int64_t v : {s.batch, s.M, s.N, s.K}) key += std::to_string(v) + ",";
      key += op.kind == OpKind::kBatchMatmul
                 ? std::string(op.transpose_a ? "T" : "N") + (op.transpose_b ? "T" : "N")
                 : "";
    }
    return key;
  }

  void strided(dnnl::MemoryDesc* md, std::vector<int64_t> dims, std::vector<int64_t> strides) {
    check_onednn(api_.dnnl_memory_desc_init_by_strides(md, int(dims.size()), dims.data(),
                                                       dnnl::f32, strides.data()),
                 "dnnl_memory_desc_init_by_strides");
  }
  void tagged(dnnl::MemoryDesc* md, std::vector<int64_t> dims, int tag) {
    check_onednn(
        api_.dnnl_memory_desc_init_by_tag(md, int(dims.size()), dims.data(), dnnl::f32, tag),
        "dnnl_memory_desc_init_by_tag");
  }

  // Attributes: fpmath strict and the activation as a post-op. The caller destroys it.
  dnnl::primitive_attr_t make_attr(Epilogue e) {
    dnnl::primitive_attr_t attr = nullptr;
    check_onednn(api_.dnnl_primitive_attr_create(&attr), "dnnl_primitive_attr_create");
    check_onednn(api_.dnnl_primitive_attr_set_fpmath_mode(attr, dnnl::fpmath_strict),
                 "dnnl_primitive_attr_set_fpmath_mode");
    if (has_activation(e)) {
      dnnl::post_ops_t po = nullptr;
      check_onednn(api_.dnnl_post_ops_create(&po), "dnnl_post_ops_create");
      const int alg = is_gelu(e) ? dnnl::eltwise_gelu_tanh : dnnl::eltwise_relu;
      const dnnl::status_t s = api_.dnnl_post_ops_append_eltwise(po, 1.0f, alg, 0.0f, 0.0f);
      if (s == dnnl::success) api_.dnnl_primitive_attr_set_post_ops(attr, po);
      api_.dnnl_post_ops_destroy(po);
      check_onednn(s, "dnnl_post_ops_append_eltwise");
    }
    return attr;
  }

  // Creates the primitive descriptor; unimplemented -> CpuBaselineUnavailable.
  dnnl::primitive_desc_t create_pd(const dnnl::OpDesc& desc, Epilogue e, const std::string& what,
                                   bool throw_unimplemented = true) {
    dnnl::primitive_attr_t attr = make_attr(e);
    dnnl::primitive_desc_t pd = nullptr;
    const dnnl::status_t s = api_.dnnl_primitive_desc_create(&pd, &desc, attr, engine_, nullptr);
    api_.dnnl_primitive_attr_destroy(attr);
    if (s == dnnl::unimplemented) {
      if (!throw_unimplemented) return nullptr;
      throw CpuBaselineUnavailable(api_.label() + " has no " + what +
                                   " implementation for this instance");
    }
    check_onednn(s, "dnnl_primitive_desc_create(" + what + ")");
    return pd;
  }

  void finish(Prepared* p) {
    check_onednn(api_.dnnl_primitive_create(&p->primitive, p->pd), "dnnl_primitive_create");
    const char* impl = nullptr;
    if (api_.dnnl_primitive_desc_query(p->pd, dnnl::query_impl_info_str, 0, &impl) ==
            dnnl::success &&
        impl)
      p->impl = impl;
  }

  Prepared make_matmul(const OpSpec& op, const GemmShape& s) {
    Prepared p;
    const int64_t B = s.batch, M = s.M, N = s.N, K = s.K;
    const bool bias = epilogue_has_bias(op.epilogue);
    if (op.kind == OpKind::kDense) {
      strided(&p.src, {M, K}, {K, 1});
      strided(&p.weights, {K, N}, {1, K});  // W [N][K] seen as its transpose
      strided(&p.dst, {M, N}, {N, 1});
      if (bias) strided(&p.bias, {1, N}, {N, 1});
    } else {
      strided(&p.src, {B, M, K}, op.transpose_a ? std::vector<int64_t>{M * K, 1, M}
                                                : std::vector<int64_t>{M * K, K, 1});
      strided(&p.weights, {B, K, N}, op.transpose_b ? std::vector<int64_t>{K * N, 1, K}
                                                    : std::vector<int64_t>{K * N, N, 1});
      strided(&p.dst, {B, M, N}, {M * N, N, 1});
    }
    dnnl::OpDesc desc{};
    check_onednn(
        api_.dnnl_matmul_desc_init(&desc, &p.src, &p.weights, bias ? &p.bias : nullptr, &p.dst),
        "dnnl_matmul_desc_init");
    p.pd = create_pd(desc, op.epilogue, "matmul");
    finish(&p);
    return p;
  }

  Prepared make_conv(const OpSpec& op, const Conv2dShape& c) {
    Prepared p;
    const bool bias = epilogue_has_bias(op.epilogue);
    tagged(&p.src, {c.n, c.c, c.h, c.w}, dnnl::tag_acdb);            // NHWC
    tagged(&p.plain_weights, {c.k, c.c, c.r, c.s}, dnnl::tag_acdb);  // OHWI = KRSC
    tagged(&p.dst, {c.n, c.k, c.p, c.q}, dnnl::tag_acdb);            // NPQK
    if (bias) strided(&p.bias, {c.k}, {1});
    const int64_t strides[2] = {c.stride_h, c.stride_w};
    const int64_t dilates[2] = {c.dilation_h - 1, c.dilation_w - 1};  // oneDNN counts gaps
    const int64_t pad_l[2] = {c.pad_h, c.pad_w};
    const int64_t pad_r[2] = {
        (c.p - 1) * c.stride_h + (c.r - 1) * c.dilation_h + 1 - c.h - c.pad_h,
        (c.q - 1) * c.stride_w + (c.s - 1) * c.dilation_w + 1 - c.w - c.pad_w};
    auto describe = [&](const dnnl::MemoryDesc& weights, dnnl::OpDesc* desc) {
      check_onednn(api_.dnnl_dilated_convolution_forward_desc_init(
                       desc, dnnl::forward_inference, dnnl::convolution_direct, &p.src, &weights,
                       bias ? &p.bias : nullptr, &p.dst, strides, dilates, pad_l, pad_r),
                   "dnnl_dilated_convolution_forward_desc_init");
    };
    // First with the pack's own weights layout, so nothing is reordered; when oneDNN has only
    // its reference code for that (or nothing), let it choose the weights layout and reorder
    // the weights in prepare().
    dnnl::OpDesc desc{};
    describe(p.plain_weights, &desc);
    p.pd = create_pd(desc, op.epilogue, "convolution", false);
    if (p.pd) {
      const char* impl = nullptr;
      api_.dnnl_primitive_desc_query(p.pd, dnnl::query_impl_info_str, 0, &impl);
      if (impl && std::string(impl).rfind("ref", 0) == 0) {
        api_.dnnl_primitive_desc_destroy(p.pd);
        p.pd = nullptr;
      }
    }
    if (p.pd) {
      p.weights = p.plain_weights;
    } else {
      dnnl::MemoryDesc any{};
      tagged(&any, {c.k, c.c, c.r, c.s}, dnnl::tag_any);
      dnnl::OpDesc any_desc{};
      describe(any, &any_desc);
      p.pd = create_pd(any_desc, op.epilogue, "convolution");
      const dnnl::MemoryDesc* chosen = api_.dnnl_primitive_desc_query_md(p.pd, dnnl::query_weights_md, 0);
      if (!chosen) throw EnvironmentError("oneDNN: no weights memory descriptor for convolution");
      p.weights = *chosen;
      if (!api_.dnnl_memory_desc_equal(&p.weights, &p.plain_weights)) {
        dnnl::primitive_desc_t rpd = nullptr;
        check_onednn(api_.dnnl_reorder_primitive_desc_create(&rpd, &p.plain_weights, engine_,
                                                             &p.weights, engine_, nullptr),
                     "dnnl_reorder_primitive_desc_create");
        const dnnl::status_t s = api_.dnnl_primitive_create(&p.reorder, rpd);
        api_.dnnl_primitive_desc_destroy(rpd);
        check_onednn(s, "dnnl_primitive_create(reorder)");
      }
    }
    finish(&p);
    return p;
  }

  const OnednnApi& api_;
  int threads_;
  dnnl::engine_t engine_ = nullptr;
  dnnl::stream_t stream_ = nullptr;
  std::map<std::string, Prepared> cache_;  // per shape; node-based, so pointers stay valid
  Prepared* current_ = nullptr;
  std::vector<dnnl::memory_t> memories_;
  std::vector<dnnl::ExecArg> args_;
  std::vector<float> reordered_weights_;
};

// ---- OpenBLAS -----------------------------------------------------------------------------------

// libgomp's entry points, from the OpenMP OpenBLAS's handle (the same libgomp it runs on), to
// run im2col, the epilogue and the batch loop on OpenBLAS's own OpenMP team; all null when the
// library was not built with OpenMP, and the work then runs on the calling thread.
struct Gomp {
  void (*parallel)(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags) = nullptr;
  int (*thread_num)() = nullptr;
  int (*num_threads)() = nullptr;

  static Gomp find(const std::string& library) {
    Gomp g;
    void* h = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h) return g;
    g.parallel = reinterpret_cast<decltype(g.parallel)>(dlsym(h, "GOMP_parallel"));
    g.thread_num = reinterpret_cast<decltype(g.thread_num)>(dlsym(h, "omp_get_thread_num"));
    g.num_threads = reinterpret_cast<decltype(g.num_threads)>(dlsym(h, "omp_get_num_threads"));
    dlclose(h);  // RTLD_NOLOAD took a reference; the library stays loaded by openblas_api()
    if (!g.parallel || !g.thread_num || !g.num_threads) g = Gomp{};
    return g;
  }

  // body(begin, end) over [0, n) split in contiguous chunks over `threads` threads.
  template <typename Body>
  void parallel_for(int threads, int64_t n, const Body& body) const {
    if (!parallel || threads <= 1 || n <= 1) {
      body(int64_t(0), n);
      return;
    }
    struct Context {
      const Gomp* gomp;
      const Body* body;
      int64_t n;
    } context{this, &body, n};
    parallel(
        [](void* data) {
          const Context& c = *static_cast<const Context*>(data);
          const int64_t t = c.gomp->thread_num(), nt = c.gomp->num_threads();
          const int64_t begin = c.n * t / nt, end = c.n * (t + 1) / nt;
          if (begin < end) (*c.body)(begin, end);
        },
        &context, unsigned(std::min<int64_t>(threads, n)), 0);
  }
};

// The epilogue pass's math on 8 floats at a time through GCC's vector extensions, so that it
// is vectorised whatever the optimisation level (GCC 12's -O2 cost model leaves these loops
// scalar, and libm's expf/tanhf are scalar calls), plus the same code on one float for the
// tails.
// The helpers are always inlined into the clones of epilogue_rows, so they take on each clone's
// ISA and never pass a 32-byte vector by value across a call (hence no -Wpsabi concern).
// GCC reports -Wpsabi for them at the end of the file, so it is off for the rest of it.
#pragma GCC diagnostic ignored "-Wpsabi"
#define DIETCODE_INLINE inline __attribute__((always_inline))
using V8f = float __attribute__((vector_size(32)));
using V8i = int32_t __attribute__((vector_size(32)));

DIETCODE_INLINE int32_t to_int(float x) { return int32_t(x); }
DIETCODE_INLINE V8i to_int(V8f x) { return __builtin_convertvector(x, V8i); }
DIETCODE_INLINE float bits_to_float(int32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}
DIETCODE_INLINE V8f bits_to_float(V8i bits) { return reinterpret_cast<V8f>(bits); }
DIETCODE_INLINE float max0(float x) { return x > 0.0f ? x : 0.0f; }
DIETCODE_INLINE V8f max0(V8f x) { return x > 0.0f ? x : V8f{}; }

// exp(x): 2^n p(r) with r = x - n ln2 in [-ln2/2, ln2/2] and a degree-6 Taylor polynomial,
// relative error ~2e-7; x clamped to [-87, 88] (no denormals, no infinity).
template <typename F>
DIETCODE_INLINE F exp_for_epilogue(F x) {
  const F lo = F{} + -87.0f, hi = F{} + 88.0f;
  x = x < lo ? lo : x;
  x = x > hi ? hi : x;
  constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f,
                  kLn2Lo = -2.12194440e-4f, kRound = 12582912.0f;  // 1.5 x 2^23
  const F n = (x * kLog2e + kRound) - kRound;                      // round to nearest
  const F r = (x - n * kLn2Hi) - n * kLn2Lo;
  F p = F{} + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p * bits_to_float((to_int(n) + 127) << 23);
}

// 0.5 x (1 + tanh(u)) with tanh(u) = 1 - 2 / (exp(2u) + 1), u = sqrt(2/pi) (x + 0.044715 x^3):
// the reference's GELU, to ~1e-7 relative.
template <typename F>
DIETCODE_INLINE F gelu_tanh_for_epilogue(F x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  const F u = kSqrt2OverPi * (x + 0.044715f * x * x * x);
  return 0.5f * x * (2.0f - 2.0f / (exp_for_epilogue(2.0f * u) + 1.0f));
}

// The separate epilogue pass on rows [begin, end) of y [rows][n]: bias, then the activation,
// in one sweep over each row. Cloned for AVX-512 and AVX2 machines (ifunc dispatch), since
// dietcode itself is built for the baseline ISA.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void
epilogue_rows(float* y, const float* bias, int64_t begin, int64_t end, int64_t n, bool add_bias,
              int activation /* 0 none, 1 relu, 2 gelu */) {
  for (int64_t r = begin; r < end; ++r) {
    float* row = y + r * n;
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
      V8f v;
      std::memcpy(&v, row + j, sizeof(v));
      if (add_bias) {
        V8f b;
        std::memcpy(&b, bias + j, sizeof(b));
        v += b;
      }
      if (activation == 1) v = max0(v);
      if (activation == 2) v = gelu_tanh_for_epilogue(v);
      std::memcpy(row + j, &v, sizeof(v));
    }
    for (; j < n; ++j) {
      float v = row[j] + (add_bias ? bias[j] : 0.0f);
      if (activation == 1) v = max0(v);
      if (activation == 2) v = gelu_tanh_for_epilogue(v);
      row[j] = v;
    }
  }
}
#undef DIETCODE_INLINE

class OpenblasBaseline : public CpuBaseline {
 public:
  explicit OpenblasBaseline(int threads)
      : api_(openblas_api()), gomp_(Gomp::find(api_.path)), threads_(threads) {
    api_.openblas_set_num_threads(threads_);
  }

  std::string name() const override { return "openblas"; }
  std::string label() const override { return api_.label() + ", sgemm + separate epilogue"; }
  int threads() const override { return threads_; }

  bool supports(const OpSpec& op, std::string* what) const override {
    const std::string refusal = common_refusal(op);
    if (!refusal.empty()) {
      *what = "openblas " + refusal;
      return false;
    }
    const std::string epilogue = op.epilogue == Epilogue::kNone
                                     ? std::string("no epilogue")
                                     : "then " + epilogue_words(op.epilogue) +
                                           " in a separate pass (nothing fused)";
    switch (op.kind) {
      case OpKind::kDense:
        *what = api_.label() + " cblas_sgemm (NoTrans x Trans), " + epilogue;
        return true;
      case OpKind::kBatchMatmul:
        *what = api_.label() + " cblas_sgemm per batch entry (transposes as Trans flags), " +
                epilogue;
        return true;
      case OpKind::kConv2d:
        *what = api_.label() + " im2col (timed) + cblas_sgemm, " + epilogue;
        return true;
    }
    return false;
  }

  void prepare(const OpSpec& op, const GemmShape& shape, const Conv2dShape* conv,
               const CpuGemmOperands& operands) override {
    check_operands("openblas", op, shape, conv, operands);
    for (int64_t v : {shape.M, shape.N, shape.K})
      if (v > INT_MAX)
        throw CpuBaselineUnavailable("OpenBLAS takes 32-bit sizes, and this GEMM has a side of " +
                                     std::to_string(v));
    op_ = op;
    shape_ = shape;
    operands_ = operands;
    has_conv_ = op.kind == OpKind::kConv2d;
    if (has_conv_) {
      conv_ = *conv;
      shape_ = conv_.gemm();
      direct_ = conv_.r == 1 && conv_.s == 1 && conv_.stride_h == 1 && conv_.stride_w == 1 &&
                conv_.pad_h == 0 && conv_.pad_w == 0;
      if (!direct_) columns_.assign(size_t(shape_.M * shape_.K), 0.0f);  // sized outside the timing
    }
    api_.openblas_set_num_threads(threads_);
    prepared_ = true;
  }

  std::string instance_detail() const override {
    if (!prepared_) return "";
    if (has_conv_) return direct_ ? "1x1 filter: sgemm on the input directly" : "im2col + sgemm";
    if (op_.kind == OpKind::kBatchMatmul)
      return batch_in_parallel() ? "batch split over the threads, 1-thread sgemm each"
                                 : "one multi-threaded sgemm per batch entry";
    return "";
  }

  void run() override {
    if (!prepared_) throw std::logic_error("openblas: run() before prepare()");
    // The OpenMP build follows the caller's nthreads ICV, which oneDNN may have changed.
    api_.openblas_set_num_threads(threads_);
    const int M = int(shape_.M), N = int(shape_.N), K = int(shape_.K);
    switch (op_.kind) {
      case OpKind::kDense:
        api_.cblas_sgemm(cblas::RowMajor, cblas::NoTrans, cblas::Trans, M, N, K, 1.0f,
                         operands_.a, K, operands_.b, K, 0.0f, operands_.y, N);
        break;
      case OpKind::kBatchMatmul: {
        auto gemms = [&](int64_t begin, int64_t end) {
          for (int64_t b = begin; b < end; ++b)
            api_.cblas_sgemm(cblas::RowMajor, op_.transpose_a ? cblas::Trans : cblas::NoTrans,
                             op_.transpose_b ? cblas::Trans : cblas::NoTrans, M, N, K, 1.0f,
                             operands_.a + b * shape_.M * shape_.K, op_.transpose_a ? M : K,
                             operands_.b + b * shape_.K * shape_.N, op_.transpose_b ? K : N,
                             0.0f, operands_.y + b * shape_.M * shape_.N, N);
        };
        // Inside an OpenMP parallel region OpenBLAS runs each call on one thread.
        if (batch_in_parallel())
          gomp_.parallel_for(threads_, shape_.batch, gemms);
        else
          gemms(0, shape_.batch);
        break;
      }
      case OpKind::kConv2d: {
        const float* columns = operands_.a;
        if (!direct_) {
          gomp_.parallel_for(threads_, shape_.M,
                             [&](int64_t begin, int64_t end) { im2col(begin, end); });
          columns = columns_.data();
        }
        api_.cblas_sgemm(cblas::RowMajor, cblas::NoTrans, cblas::Trans, M, N, K, 1.0f, columns,
                         K, operands_.b, K, 0.0f, operands_.y, N);
        break;
      }
    }
    if (op_.epilogue != Epilogue::kNone) {
      const int64_t rows = shape_.batch * shape_.M;
      gomp_.parallel_for(threads_, rows, [&](int64_t begin, int64_t end) {
        epilogue_rows(operands_.y, operands_.bias, begin, end, shape_.N,
                      epilogue_has_bias(op_.epilogue),
                      is_gelu(op_.epilogue) ? 2 : (has_activation(op_.epilogue) ? 1 : 0));
      });
    }
  }

 private:
  bool batch_in_parallel() const {
    return op_.kind == OpKind::kBatchMatmul && gomp_.parallel && threads_ > 1 &&
           shape_.batch >= threads_;
  }

  // Rows [begin, end) of the column matrix [N*P*Q][R*S*C]: row (n, p, q), column (r, s, c).
  void im2col(int64_t begin, int64_t end) {
    const Conv2dShape& c = conv_;
    const float* x = operands_.a;
    for (int64_t row = begin; row < end; ++row) {
      const int64_t q = row % c.q, p = (row / c.q) % c.p, n = row / (c.q * c.p);
      float* out = columns_.data() + row * shape_.K;
      for (int64_t r = 0; r < c.r; ++r) {
        const int64_t ih = p * c.stride_h - c.pad_h + r * c.dilation_h;
        for (int64_t s = 0; s < c.s; ++s, out += c.c) {
          const int64_t iw = q * c.stride_w - c.pad_w + s * c.dilation_w;
          if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) {
            std::fill(out, out + c.c, 0.0f);
          } else {
            const float* in = x + ((n * c.h + ih) * c.w + iw) * c.c;
            std::copy(in, in + c.c, out);
          }
        }
      }
    }
  }

  const OpenblasApi& api_;
  Gomp gomp_;
  int threads_;
  bool prepared_ = false;
  OpSpec op_;
  GemmShape shape_;
  Conv2dShape conv_;
  bool has_conv_ = false, direct_ = false;
  CpuGemmOperands operands_;
  std::vector<float> columns_;
};

}  // namespace

const std::vector<std::string>& cpu_baseline_names() {
  static const std::vector<std::string> names = {"onednn", "openblas"};
  return names;
}

std::unique_ptr<CpuBaseline> make_cpu_baseline(const std::string& name, int threads) {
  if (threads <= 0) threads = default_threads();
  if (name == "onednn") return std::make_unique<OnednnBaseline>(threads);
  if (name == "openblas") return std::make_unique<OpenblasBaseline>(threads);
  throw std::invalid_argument("no CPU baseline named \"" + name + "\" (onednn, openblas)");
}

}  // namespace dietcode
