// The conv2d baseline: cuDNN 9's legacy convolution API (libcudnn_cnn), NHWC input, KRSC
// filters, cross-correlation with the op's pad/stride/dilation, fp32 compute.
//
// Algorithm: cudnnFindConvolutionForwardAlgorithmEx, once per shape in prepare_conv (outside
// the timing), on the instance's own buffers; the fastest that succeeded, fits the workspace
// and respects the math policy is used. Find runs and times every algorithm, which is what a
// tuned framework does (PyTorch with cudnn.benchmark, TensorFlow's autotuning), so the pack is
// held against cuDNN at its best for each shape. cudnnGetConvolutionForwardAlgorithm_v7 only
// ranks algorithms by heuristics and can pick a slower one: a weaker baseline.
//
// Epilogues: conv_mapping.h says which calls carry them; every call is on bench's stream and
// inside the timed region, as the pack's fused epilogue is inside the pack's.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "bench/baseline.h"
#include "bench/baseline_common.h"
#include "bench/bench_kernels.h"
#include "bench/conv_mapping.h"
#include "bench/cudnn_loader.h"
#include "common/error.h"
#include "cuda/device_buffer.h"

namespace dietcode {

namespace {

// The workspace Find may give an algorithm. FFT and Winograd variants can ask for more on big
// problems; those are then skipped, as a framework with a workspace limit would skip them.
constexpr size_t kCudnnWorkspaceBytes = size_t(256) << 20;

const CudnnApi& loaded_cudnn() {
  std::string why;
  const CudnnApi* api = cudnn_api_or_null(&why);
  if (!api) throw EnvironmentError(why);
  return *api;
}

class CudnnBaseline : public Baseline {
 public:
  explicit CudnnBaseline(const BaselineOptions& options) : api_(loaded_cudnn()), options_(options) {
    check_cudnn(api_, api_.cudnnCreate(&handle_), "cudnnCreate");
    check_cudnn(api_, api_.cudnnSetStream(handle_, options.stream), "cudnnSetStream");
    check_cudnn(api_, api_.cudnnCreateTensorDescriptor(&x_), "cudnnCreateTensorDescriptor");
    check_cudnn(api_, api_.cudnnCreateTensorDescriptor(&y_), "cudnnCreateTensorDescriptor");
    check_cudnn(api_, api_.cudnnCreateTensorDescriptor(&bias_), "cudnnCreateTensorDescriptor");
    check_cudnn(api_, api_.cudnnCreateFilterDescriptor(&w_), "cudnnCreateFilterDescriptor");
    check_cudnn(api_, api_.cudnnCreateConvolutionDescriptor(&conv_),
                "cudnnCreateConvolutionDescriptor");
    check_cudnn(api_, api_.cudnnCreateActivationDescriptor(&relu_),
                "cudnnCreateActivationDescriptor");
    // The pack's relu (v > 0 ? v : 0) maps NaN to 0, and so does CUDNN_NOT_PROPAGATE_NAN.
    check_cudnn(api_,
                api_.cudnnSetActivationDescriptor(relu_, cudnn::kActivationRelu,
                                                  cudnn::kNotPropagateNan, 0.0),
                "cudnnSetActivationDescriptor");
    workspace_ = DeviceBuffer(kCudnnWorkspaceBytes);
  }

  ~CudnnBaseline() override {
    if (relu_) api_.cudnnDestroyActivationDescriptor(relu_);
    if (conv_) api_.cudnnDestroyConvolutionDescriptor(conv_);
    if (w_) api_.cudnnDestroyFilterDescriptor(w_);
    for (cudnn::TensorDescriptor d : {x_, y_, bias_})
      if (d) api_.cudnnDestroyTensorDescriptor(d);
    if (handle_) api_.cudnnDestroy(handle_);
  }

  std::string name() const override { return "cudnn"; }
  std::string label() const override { return "cudnn " + cudnn_version_text(api_.version); }

  bool supports(const OpSpec& op, std::string* what) const override {
    if (op.kind != OpKind::kConv2d) {
      *what = "none: cuDNN runs the conv2d ops only";
      return false;
    }
    *what = fmt::format(
        "{} ({}): fastest algorithm of cudnnFindConvolutionForwardAlgorithmEx per shape "
        "(workspace up to {} MiB), NHWC/KRSC, {}, {}",
        label(), api_.path, kCudnnWorkspaceBytes >> 20, cudnn_math_text(op.dtype, options_.tf32),
        conv_epilogue_plan(op.epilogue).text());
    return true;
  }

  void prepare(const OpSpec& op, const GemmShape&, const GemmOperands&) override {
    throw BaselineUnavailable("cuDNN runs conv2d only, not " + std::string(to_string(op.kind)));
  }

  // A cuDNN failure here (no algorithm, a sub-library that does not load) costs this instance
  // its baseline time, with the library's words in the report's notes; bench goes on.
  void prepare_conv(const OpSpec& op, const Conv2dShape& shape,
                    const GemmOperands& operands) override {
    try {
      prepare_instance(op, shape, operands);
    } catch (const EnvironmentError& e) {
      throw BaselineUnavailable(e.what());
    }
  }

  std::string instance_detail() const override {
    std::string detail = cudnn_algo_name(algo_);
    if (plan_.text() != conv_epilogue_plan(op_->epilogue).text())
      detail += " (cuDNN refused the preferred epilogue; ran " + plan_.text() + ")";
    return detail;
  }

  void run() override {
    std::string call;
    const cudnn::Status status = enqueue(&call);
    check_cudnn(api_, status, call + " for op " + op_->name);
  }

 private:
  void prepare_instance(const OpSpec& op, const Conv2dShape& shape, const GemmOperands& operands) {
    op_ = &op;
    shape_ = shape;
    operands_ = operands;
    const CudnnConvCall call = cudnn_conv_call(shape, op.dtype, options_.tf32);
    describe(call);
    choose_algorithm(call);
    // The first epilogue plan cuDNN runs for this problem (conv_mapping.h), tried once here,
    // outside the timing; the check then runs it again on NaN-filled outputs.
    std::string refused;
    for (const ConvEpiloguePlan& plan : conv_epilogue_plans(op.epilogue)) {
      plan_ = plan;
      std::string failed_call;
      const cudnn::Status status = enqueue(&failed_call);
      if (status == cudnn::kStatusSuccess) return;
      if (status != cudnn::kStatusNotSupported && status != cudnn::kStatusBadParam)
        check_cudnn(api_, status, failed_call + " for op " + op.name);
      const char* text = api_.cudnnGetErrorString(status);
      refused += (refused.empty() ? "" : "; ") + failed_call + ": " + (text ? text : "refused");
    }
    throw BaselineUnavailable("cuDNN refused this conv2d: " + refused);
  }

  // Enqueues the prepared instance; the first status that is not success, with the call's name
  // in *call.
  cudnn::Status enqueue(std::string* call) {
    const float one = 1.0f, zero = 0.0f;  // fp32 compute: float scaling factors for every dtype
    cudnn::Status status = cudnn::kStatusSuccess;
    if (plan_.fused_bias_relu) {
      // y = relu(1 * conv(x, w) + 0 * z + bias), with z = y (its contents do not matter at 0).
      *call = "cudnnConvolutionBiasActivationForward";
      return api_.cudnnConvolutionBiasActivationForward(
          handle_, &one, x_, ptr(operands_.a), w_, ptr(operands_.b), conv_, algo_, ws(),
          workspace_bytes_, &zero, y_, ptr(operands_.y), bias_, ptr(operands_.bias), relu_, y_,
          ptr(operands_.y));
    }
    *call = "cudnnConvolutionForward";
    status = api_.cudnnConvolutionForward(handle_, &one, x_, ptr(operands_.a), w_, ptr(operands_.b),
                                          conv_, algo_, ws(), workspace_bytes_, &zero, y_,
                                          ptr(operands_.y));
    if (status != cudnn::kStatusSuccess) return status;
    if (plan_.add_bias) {
      *call = "cudnnAddTensor";
      status = api_.cudnnAddTensor(handle_, &one, bias_, ptr(operands_.bias), &one, y_,
                                   ptr(operands_.y));
      if (status != cudnn::kStatusSuccess) return status;
    }
    if (plan_.relu) {
      *call = "cudnnActivationForward";
      status = api_.cudnnActivationForward(handle_, relu_, &one, y_, ptr(operands_.y), &zero, y_,
                                           ptr(operands_.y));
      if (status != cudnn::kStatusSuccess) return status;
    }
    if (plan_.bench_kernel)
      options_.kernels->epilogue(options_.stream, op_->dtype, op_->epilogue, operands_.y,
                                 operands_.bias, shape_.n * shape_.p * shape_.q, shape_.k);
    return status;
  }

  static void* ptr(CUdeviceptr p) { return reinterpret_cast<void*>(p); }
  void* ws() const { return ptr(workspace_.ptr()); }

  void describe(const CudnnConvCall& c) {
    const std::string where = "cuDNN descriptors for op " + op_->name;
    check_cudnn(api_,
                api_.cudnnSetTensor4dDescriptor(x_, cudnn::kTensorNhwc, c.data_type, c.x_nchw[0],
                                                c.x_nchw[1], c.x_nchw[2], c.x_nchw[3]),
                where + " (input)");
    check_cudnn(api_,
                api_.cudnnSetFilter4dDescriptor(w_, c.data_type, cudnn::kTensorNhwc, c.w_kcrs[0],
                                                c.w_kcrs[1], c.w_kcrs[2], c.w_kcrs[3]),
                where + " (filter)");
    check_cudnn(api_,
                api_.cudnnSetConvolution2dDescriptor(conv_, c.pad[0], c.pad[1], c.stride[0],
                                                     c.stride[1], c.dilation[0], c.dilation[1],
                                                     cudnn::kCrossCorrelation, c.compute_type),
                where + " (convolution)");
    check_cudnn(api_, api_.cudnnSetConvolutionMathType(conv_, c.math_type), where + " (math)");
    check_cudnn(api_,
                api_.cudnnSetTensor4dDescriptor(y_, cudnn::kTensorNhwc, c.data_type, c.y_nchw[0],
                                                c.y_nchw[1], c.y_nchw[2], c.y_nchw[3]),
                where + " (output)");
    check_cudnn(
        api_,
        api_.cudnnSetTensor4dDescriptor(bias_, cudnn::kTensorNhwc, c.data_type, c.bias_nchw[0],
                                        c.bias_nchw[1], c.bias_nchw[2], c.bias_nchw[3]),
        where + " (bias)");
    // cuDNN's own output extents must be the pack's P and Q, or the two compute different
    // convolutions and the check would only report a mismatch.
    int out[4] = {0, 0, 0, 0};
    check_cudnn(api_,
                api_.cudnnGetConvolution2dForwardOutputDim(conv_, x_, w_, &out[0], &out[1], &out[2],
                                                           &out[3]),
                where + " (output extents)");
    if (!std::equal(out, out + 4, c.y_nchw))
      throw BaselineUnavailable(
          fmt::format("cuDNN computes a {}x{}x{}x{} output, the pack {}x{}x{}x{}", out[0], out[2],
                      out[3], out[1], c.y_nchw[0], c.y_nchw[2], c.y_nchw[3], c.y_nchw[1]));
  }

  void choose_algorithm(const CudnnConvCall& call) {
    int count = 0;
    check_cudnn(api_, api_.cudnnGetConvolutionForwardAlgorithmMaxCount(handle_, &count),
                "cudnnGetConvolutionForwardAlgorithmMaxCount");
    std::vector<cudnn::FwdAlgoPerf> results(size_t(std::max(count, 1)));
    int returned = 0;
    check_cudnn(
        api_,
        api_.cudnnFindConvolutionForwardAlgorithmEx(
            handle_, x_, ptr(operands_.a), w_, ptr(operands_.b), conv_, y_, ptr(operands_.y),
            int(results.size()), &returned, results.data(), ws(), workspace_.bytes()),
        "cudnnFindConvolutionForwardAlgorithmEx for op " + op_->name);
    // Results come sorted by time, failures last.
    for (int i = 0; i < returned; ++i) {
      const cudnn::FwdAlgoPerf& r = results[size_t(i)];
      if (r.status != cudnn::kStatusSuccess || r.memory > workspace_.bytes() ||
          !call.allows(r.math_type))
        continue;
      algo_ = r.algo;
      workspace_bytes_ = r.memory;
      // The math type the algorithm was timed with, except that the fp32 FMA policy stays:
      // CUDNN_DEFAULT_MATH would let the same algorithm use TF32 on Ampere and newer.
      if (call.math_type != cudnn::kFmaMath)
        check_cudnn(api_, api_.cudnnSetConvolutionMathType(conv_, r.math_type),
                    "cudnnSetConvolutionMathType");
      return;
    }
    throw BaselineUnavailable(fmt::format(
        "cuDNN found no algorithm for this conv2d ({} tried, {} MiB workspace{})", returned,
        workspace_.bytes() >> 20, call.math_type == cudnn::kFmaMath ? ", fp32 FMA only" : ""));
  }

  const CudnnApi& api_;
  BaselineOptions options_;
  DeviceBuffer workspace_;
  cudnn::Handle handle_ = nullptr;
  cudnn::TensorDescriptor x_ = nullptr, y_ = nullptr, bias_ = nullptr;
  cudnn::FilterDescriptor w_ = nullptr;
  cudnn::ConvolutionDescriptor conv_ = nullptr;
  cudnn::ActivationDescriptor relu_ = nullptr;
  const OpSpec* op_ = nullptr;
  Conv2dShape shape_;
  GemmOperands operands_;
  ConvEpiloguePlan plan_;
  int algo_ = 0;
  size_t workspace_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Baseline> make_cudnn_baseline(const BaselineOptions& options) {
  return std::make_unique<CudnnBaseline>(options);
}

}  // namespace dietcode
