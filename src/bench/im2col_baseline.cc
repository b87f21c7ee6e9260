// The conv2d baseline when cuDNN is not there: bench's im2col kernel writes the explicit
// column matrix col[N*P*Q, R*S*C] (im2col_index.h), then the cuBLAS baseline runs the dense
// GEMM Y = col * Wt^T with the op's epilogue (conv_mapping.h: im2col_dense_op). Both are in
// the timed region: the im2col is the price of reaching the GEMM library without cuDNN, as a
// framework without cuDNN would pay it. A weaker baseline than cuDNN, and the report says
// which one ran.
#include <fmt/format.h>

#include "bench/baseline.h"
#include "bench/baseline_common.h"
#include "bench/bench_kernels.h"
#include "bench/conv_mapping.h"
#include "common/error.h"
#include "cuda/device_buffer.h"

namespace dietcode {

namespace {

class Im2colBaseline : public Baseline {
 public:
  explicit Im2colBaseline(const BaselineOptions& options)
      : options_(options), gemm_(make_cublas_baseline(options)) {}

  std::string name() const override { return "cublas+im2col"; }

  bool supports(const OpSpec& op, std::string* what) const override {
    if (op.kind != OpKind::kConv2d) {
      *what = "none: cublas+im2col runs the conv2d ops only";
      return false;
    }
    std::string gemm_what;
    gemm_->supports(im2col_dense_op(op), &gemm_what);
    *what = "cublas+im2col: im2col kernel (NVRTC, timed) + " + gemm_what;
    return true;
  }

  void prepare(const OpSpec& op, const GemmShape&, const GemmOperands&) override {
    throw BaselineUnavailable("cublas+im2col runs conv2d only, not " +
                              std::string(to_string(op.kind)));
  }

  void prepare_conv(const OpSpec& op, const Conv2dShape& shape,
                    const GemmOperands& operands) override {
    dense_ = im2col_dense_op(op);
    shape_ = shape;
    input_ = operands.a;
    const GemmShape gemm = shape.gemm();
    const size_t bytes = size_t(gemm.M) * size_t(gemm.K) * size_t(dtype_bytes(op.dtype));
    if (bytes > col_.bytes()) {
      col_ = DeviceBuffer();  // free the smaller one first
      try {
        col_ = DeviceBuffer(bytes);
      } catch (const std::exception& e) {
        throw BaselineUnavailable(
            fmt::format("no memory for the {} MiB im2col matrix: {}", bytes >> 20, e.what()));
      }
    }
    GemmOperands dense_operands = operands;
    dense_operands.a = col_.ptr();  // X becomes the column matrix; Wt, bias and Y stay
    gemm_->prepare(dense_, gemm, dense_operands);
  }

  void run() override {
    options_.kernels->im2col(options_.stream, dense_.dtype, input_, col_.ptr(), shape_);
    gemm_->run();
  }

 private:
  BaselineOptions options_;
  std::unique_ptr<Baseline> gemm_;
  OpSpec dense_;  // stable: the cuBLAS baseline keeps a pointer to it
  Conv2dShape shape_;
  CUdeviceptr input_ = 0;
  DeviceBuffer col_;
};

}  // namespace

std::unique_ptr<Baseline> make_im2col_baseline(const BaselineOptions& options) {
  return std::make_unique<Im2colBaseline>(options);
}

}  // namespace dietcode
