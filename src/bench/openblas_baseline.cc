// The OpenBLAS baseline of cpu_baseline.h: cblas_sgemm (one per batch entry for batch_matmul;
// after an explicit im2col for conv2d), then the epilogue as a separate pass. Everything it
// does besides sgemm runs on OpenBLAS's own OpenMP team and is timed with it.
#include <climits>

#include "bench/cpu_baseline_common.h"
#include "bench/cpu_epilogue.h"
#include "bench/cpu_im2col.h"
#include "bench/gomp_team.h"
#include "bench/openblas_loader.h"
#include "common/error.h"

namespace dietcode {

namespace {

class OpenblasBaseline : public CpuBaseline {
 public:
  explicit OpenblasBaseline(int threads)
      : api_(openblas_api()), gomp_(GompTeam::of_loaded(api_.path)), threads_(threads) {
    api_.openblas_set_num_threads(threads_);
  }

  std::string name() const override { return "openblas"; }
  std::string label() const override { return api_.label() + ", sgemm + separate epilogue"; }
  std::string instruction_set() const override {
    return api_.core.empty() ? "" : api_.core + " kernels";
  }
  int threads() const override { return threads_; }

  bool supports(const OpSpec& op, std::string* what) const override {
    const std::string refusal = cpu_baseline_refusal(op);
    if (!refusal.empty()) {
      *what = "openblas " + refusal;
      return false;
    }
    const std::string epilogue =
        op.epilogue == Epilogue::kNone
            ? std::string("no epilogue")
            : "then " + epilogue_words(op.epilogue) + " in a separate pass (nothing fused)";
    switch (op.kind) {
      case OpKind::kDense:
        *what = api_.label() +
                (op.weight_layout == WeightLayout::kKN ? " cblas_sgemm (NoTrans x NoTrans), "
                                                       : " cblas_sgemm (NoTrans x Trans), ") +
                epilogue;
        return true;
      case OpKind::kBatchMatmul:
        *what =
            api_.label() + " cblas_sgemm per batch entry (transposes as Trans flags), " + epilogue;
        return true;
      case OpKind::kConv2d:
        *what = api_.label() + " im2col (timed) + cblas_sgemm, " + epilogue;
        return true;
    }
    return false;
  }

  void prepare(const OpSpec& op, const GemmShape& shape, const Conv2dShape* conv,
               const CpuGemmOperands& operands) override {
    check_cpu_operands("openblas", op, shape, conv, operands);
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
      direct_ = conv_is_pointwise(conv_);
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
        if (op_.weight_layout == WeightLayout::kKN)
          api_.cblas_sgemm(cblas::RowMajor, cblas::NoTrans, cblas::NoTrans, M, N, K, 1.0f,
                           operands_.a, K, operands_.b, N, 0.0f, operands_.y, N);
        else
          api_.cblas_sgemm(cblas::RowMajor, cblas::NoTrans, cblas::Trans, M, N, K, 1.0f,
                           operands_.a, K, operands_.b, K, 0.0f, operands_.y, N);
        break;
      case OpKind::kBatchMatmul: {
        auto gemms = [&](int64_t begin, int64_t end) {
          for (int64_t b = begin; b < end; ++b)
            api_.cblas_sgemm(cblas::RowMajor, op_.transpose_a ? cblas::Trans : cblas::NoTrans,
                             op_.transpose_b ? cblas::Trans : cblas::NoTrans, M, N, K, 1.0f,
                             operands_.a + b * shape_.M * shape_.K, op_.transpose_a ? M : K,
                             operands_.b + b * shape_.K * shape_.N, op_.transpose_b ? K : N, 0.0f,
                             operands_.y + b * shape_.M * shape_.N, N);
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
          gomp_.parallel_for(threads_, shape_.M, [&](int64_t begin, int64_t end) {
            im2col_rows(conv_, operands_.a, columns_.data(), begin, end);
          });
          columns = columns_.data();
        }
        api_.cblas_sgemm(cblas::RowMajor, cblas::NoTrans, cblas::Trans, M, N, K, 1.0f, columns, K,
                         operands_.b, K, 0.0f, operands_.y, N);
        break;
      }
    }
    if (op_.epilogue != Epilogue::kNone) {
      const int64_t rows = shape_.batch * shape_.M;
      gomp_.parallel_for(threads_, rows, [&](int64_t begin, int64_t end) {
        cpu_epilogue_rows(operands_.y, operands_.bias, begin, end, shape_.N, op_.epilogue);
      });
    }
  }

 private:
  bool batch_in_parallel() const {
    return op_.kind == OpKind::kBatchMatmul && gomp_.parallel && threads_ > 1 &&
           shape_.batch >= threads_;
  }

  const OpenblasApi& api_;
  GompTeam gomp_;
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

std::unique_ptr<CpuBaseline> make_openblas_baseline(int threads) {
  return std::make_unique<OpenblasBaseline>(threads);
}

}  // namespace dietcode
