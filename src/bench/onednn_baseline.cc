// The oneDNN baseline of cpu_baseline.h: the matmul primitive for dense and batch_matmul, the
// convolution forward primitive for conv2d, each with the op's epilogue fused (bias as the
// primitive's bias, relu / gelu-tanh as an eltwise post-op). Primitives are cached per shape.
// Weights are read as they are, unless oneDNN has only reference code for them (convolution)
// or they are declared constant (constant_weights: matmul too); then oneDNN picks their layout
// and prepare() reorders them into it, outside the timing.
#include <map>

#include "bench/cpu_baseline_common.h"
#include "bench/onednn_loader.h"
#include "common/error.h"

namespace dietcode {

namespace {

class OnednnBaseline : public CpuBaseline {
 public:
  OnednnBaseline(int threads, bool constant_weights)
      : api_(onednn_api()), threads_(threads), constant_weights_(constant_weights) {
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
  std::string instruction_set() const override { return api_.effective_isa(); }

  std::string label() const override {
    return api_.label() + (api_.omp_set_num_threads ? "" : " (thread count not settable)");
  }
  int threads() const override { return threads_; }

  bool supports(const OpSpec& op, std::string* what) const override {
    const std::string refusal = cpu_baseline_refusal(op);
    if (!refusal.empty()) {
      *what = "onednn " + refusal;
      return false;
    }
    const std::string fused =
        op.epilogue == Epilogue::kNone
            ? std::string("no epilogue")
            : "fused " + epilogue_words(op.epilogue) + " (" +
                  std::string(epilogue_has_bias(op.epilogue) ? "bias operand" : "") +
                  (epilogue_has_bias(op.epilogue) && epilogue_has_activation(op.epilogue) ? ", "
                                                                                          : "") +
                  (epilogue_has_activation(op.epilogue)
                       ? (epilogue_is_gelu(op.epilogue) ? "eltwise_gelu_tanh post-op"
                                                        : "eltwise_relu post-op")
                       : "") +
                  ")";
    switch (op.kind) {
      case OpKind::kDense:
        *what = label() +
                (constant_weights_
                     ? " matmul (weights constant: in the layout it chooses, reordered once), "
                 : op.weight_layout == WeightLayout::kKN
                     ? " matmul (weights [K,N] as they are), "
                     : " matmul (weights as a transposed strided view), ") +
                fused;
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
    check_cpu_operands("onednn", op, shape, conv, operands);
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
    check_onednn(
        api_.dnnl_primitive_execute(current_->primitive, stream_, int(args_.size()), args_.data()),
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
      for (int64_t v : {c->n, c->h, c->w, c->c, c->k, c->r, c->s, c->p, c->q, int64_t(c->stride_h),
                        int64_t(c->stride_w), int64_t(c->pad_h), int64_t(c->pad_w),
                        int64_t(c->dilation_h), int64_t(c->dilation_w)})
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
    check_onednn(api_.dnnl_memory_desc_init_by_strides(md, int(dims.size()), dims.data(), dnnl::f32,
                                                       strides.data()),
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
    if (epilogue_has_activation(e)) {
      dnnl::post_ops_t po = nullptr;
      check_onednn(api_.dnnl_post_ops_create(&po), "dnnl_post_ops_create");
      const int alg = epilogue_is_gelu(e) ? dnnl::eltwise_gelu_tanh : dnnl::eltwise_relu;
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
      if (op.weight_layout == WeightLayout::kKN)
        strided(&p.weights, {K, N}, {N, 1});  // W [K][N] as it is
      else
        strided(&p.weights, {K, N}, {1, K});  // W [N][K] seen as its transpose
      strided(&p.dst, {M, N}, {N, 1});
      if (bias) strided(&p.bias, {1, N}, {N, 1});
    } else {
      strided(
          &p.src, {B, M, K},
          op.transpose_a ? std::vector<int64_t>{M * K, 1, M} : std::vector<int64_t>{M * K, K, 1});
      strided(
          &p.weights, {B, K, N},
          op.transpose_b ? std::vector<int64_t>{K * N, 1, K} : std::vector<int64_t>{K * N, N, 1});
      strided(&p.dst, {B, M, N}, {M * N, N, 1});
    }
    if (op.kind == OpKind::kDense && constant_weights_) {
      // Constant weights: oneDNN picks their layout (a blocked one for its brgemm kernels),
      // and prepare() reorders them into it once, as an inference server would at load time.
      p.plain_weights = p.weights;
      dnnl::MemoryDesc any{};
      tagged(&any, {K, N}, dnnl::tag_any);
      dnnl::OpDesc desc{};
      check_onednn(
          api_.dnnl_matmul_desc_init(&desc, &p.src, &any, bias ? &p.bias : nullptr, &p.dst),
          "dnnl_matmul_desc_init");
      p.pd = create_pd(desc, op.epilogue, "matmul");
      adopt_chosen_weights(&p, "matmul");
    } else {
      dnnl::OpDesc desc{};
      check_onednn(
          api_.dnnl_matmul_desc_init(&desc, &p.src, &p.weights, bias ? &p.bias : nullptr, &p.dst),
          "dnnl_matmul_desc_init");
      p.pd = create_pd(desc, op.epilogue, "matmul");
    }
    finish(&p);
    return p;
  }

  // p->pd was created with weights of layout "any": takes the layout it chose as p->weights and,
  // when that differs from p->plain_weights, creates the reorder that prepare() runs.
  void adopt_chosen_weights(Prepared* p, const std::string& what) {
    const dnnl::MemoryDesc* chosen =
        api_.dnnl_primitive_desc_query_md(p->pd, dnnl::query_weights_md, 0);
    if (!chosen) throw EnvironmentError("oneDNN: no weights memory descriptor for " + what);
    p->weights = *chosen;
    if (api_.dnnl_memory_desc_equal(&p->weights, &p->plain_weights)) return;
    dnnl::primitive_desc_t rpd = nullptr;
    check_onednn(api_.dnnl_reorder_primitive_desc_create(&rpd, &p->plain_weights, engine_,
                                                         &p->weights, engine_, nullptr),
                 "dnnl_reorder_primitive_desc_create");
    const dnnl::status_t s = api_.dnnl_primitive_create(&p->reorder, rpd);
    api_.dnnl_primitive_desc_destroy(rpd);
    check_onednn(s, "dnnl_primitive_create(reorder)");
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
      adopt_chosen_weights(&p, "convolution");
    }
    finish(&p);
    return p;
  }

  const OnednnApi& api_;
  int threads_;
  bool constant_weights_;
  dnnl::engine_t engine_ = nullptr;
  dnnl::stream_t stream_ = nullptr;
  std::map<std::string, Prepared> cache_;  // per shape; node-based, so pointers stay valid
  Prepared* current_ = nullptr;
  std::vector<dnnl::memory_t> memories_;
  std::vector<dnnl::ExecArg> args_;
  std::vector<float> reordered_weights_;
};

}  // namespace

std::unique_ptr<CpuBaseline> make_onednn_baseline(int threads, bool constant_weights) {
  return std::make_unique<OnednnBaseline>(threads, constant_weights);
}

}  // namespace dietcode
