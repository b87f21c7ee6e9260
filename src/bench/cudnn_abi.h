// The slice of cuDNN 9's C API that bench's conv2d baseline calls, declared here rather than
// taken from <cudnn.h>: the CUDA toolkit does not ship cuDNN's headers (they come with cuDNN,
// a separate download or a pip wheel), and dietcode must build on machines that have neither.
// The declarations follow the cuDNN 9 API reference (cudnn_graph.h, cudnn_ops.h, cudnn_cnn.h);
// this legacy convolution API has kept the same signatures and enum values since cuDNN 7.
// tests/unit/cudnn_loader_test.cc holds every value and struct layout here against the real
// headers wherever they are installed.
//
// Handles and descriptors are opaque pointers; enums are ints with the library's values.
#pragma once

#include <cuda.h>

#include <cstddef>

namespace dietcode::cudnn {

using Status = int;  // cudnnStatus_t
constexpr Status kStatusSuccess = 0;
constexpr Status kStatusBadParam = 2000;
constexpr Status kStatusNotSupported = 3000;

using Handle = struct CudnnContextOpaque*;                     // cudnnHandle_t
using TensorDescriptor = struct CudnnTensorOpaque*;            // cudnnTensorDescriptor_t
using FilterDescriptor = struct CudnnFilterOpaque*;            // cudnnFilterDescriptor_t
using ConvolutionDescriptor = struct CudnnConvolutionOpaque*;  // ...ConvolutionDescriptor_t
using ActivationDescriptor = struct CudnnActivationOpaque*;    // ...ActivationDescriptor_t

// cudnnDataType_t
constexpr int kDataFloat = 0, kDataHalf = 2, kDataBFloat16 = 9;
// cudnnTensorFormat_t: NHWC puts the channels innermost; for a filter it means KRSC.
constexpr int kTensorNchw = 0, kTensorNhwc = 1;
// cudnnConvolutionMode_t: cross-correlation is what deep-learning "convolution" computes.
constexpr int kCrossCorrelation = 1;
// cudnnMathType_t
constexpr int kDefaultMath = 0, kTensorOpMath = 1, kTensorOpMathAllowConversion = 2, kFmaMath = 3;
// cudnnActivationMode_t and cudnnNanPropagation_t
constexpr int kActivationRelu = 1, kActivationIdentity = 5;
constexpr int kNotPropagateNan = 0;
// cudnnConvolutionFwdAlgo_t: IMPLICIT_GEMM = 0 ... WINOGRAD_NONFUSED = 7.
constexpr int kFwdAlgoCount = 8;

// cudnnConvolutionFwdAlgoPerf_t, as cudnnFindConvolutionForwardAlgorithmEx fills it.
struct FwdAlgoPerf {
  int algo;       // cudnnConvolutionFwdAlgo_t
  Status status;  // per algorithm: not every algorithm supports every problem
  float time;     // milliseconds, measured by Find
  size_t memory;  // workspace bytes it needs
  int determinism;
  int math_type;  // the cudnnMathType_t it ran with; set it on the descriptor to get the same
  int reserved[3];
};

// Function types, in the library's own parameter order.
using GetVersionFn = size_t (*)();
using GetErrorStringFn = const char* (*)(Status);
using CreateFn = Status (*)(Handle*);
using DestroyFn = Status (*)(Handle);
using SetStreamFn = Status (*)(Handle, CUstream);
using CreateTensorDescriptorFn = Status (*)(TensorDescriptor*);
using SetTensor4dDescriptorFn = Status (*)(TensorDescriptor, int format, int data_type, int n,
                                           int c, int h, int w);
using DestroyTensorDescriptorFn = Status (*)(TensorDescriptor);
using CreateFilterDescriptorFn = Status (*)(FilterDescriptor*);
using SetFilter4dDescriptorFn = Status (*)(FilterDescriptor, int data_type, int format, int k,
                                           int c, int h, int w);
using DestroyFilterDescriptorFn = Status (*)(FilterDescriptor);
using CreateConvolutionDescriptorFn = Status (*)(ConvolutionDescriptor*);
using SetConvolution2dDescriptorFn = Status (*)(ConvolutionDescriptor, int pad_h, int pad_w,
                                                int stride_h, int stride_w, int dilation_h,
                                                int dilation_w, int mode, int compute_type);
using SetConvolutionMathTypeFn = Status (*)(ConvolutionDescriptor, int math_type);
using GetConvolution2dForwardOutputDimFn = Status (*)(ConvolutionDescriptor, TensorDescriptor,
                                                      FilterDescriptor, int* n, int* c, int* h,
                                                      int* w);
using DestroyConvolutionDescriptorFn = Status (*)(ConvolutionDescriptor);
using GetConvolutionForwardAlgorithmMaxCountFn = Status (*)(Handle, int* count);
using FindConvolutionForwardAlgorithmExFn = Status (*)(
    Handle, TensorDescriptor x_desc, const void* x, FilterDescriptor w_desc, const void* w,
    ConvolutionDescriptor, TensorDescriptor y_desc, void* y, int requested, int* returned,
    FwdAlgoPerf* results, void* workspace, size_t workspace_bytes);
using ConvolutionForwardFn = Status (*)(Handle, const void* alpha, TensorDescriptor x_desc,
                                        const void* x, FilterDescriptor w_desc, const void* w,
                                        ConvolutionDescriptor, int algo, void* workspace,
                                        size_t workspace_bytes, const void* beta,
                                        TensorDescriptor y_desc, void* y);
using ConvolutionBiasActivationForwardFn = Status (*)(
    Handle, const void* alpha1, TensorDescriptor x_desc, const void* x, FilterDescriptor w_desc,
    const void* w, ConvolutionDescriptor, int algo, void* workspace, size_t workspace_bytes,
    const void* alpha2, TensorDescriptor z_desc, const void* z, TensorDescriptor bias_desc,
    const void* bias, ActivationDescriptor, TensorDescriptor y_desc, void* y);
using AddTensorFn = Status (*)(Handle, const void* alpha, TensorDescriptor a_desc, const void* a,
                               const void* beta, TensorDescriptor c_desc, void* c);
using CreateActivationDescriptorFn = Status (*)(ActivationDescriptor*);
using SetActivationDescriptorFn = Status (*)(ActivationDescriptor, int mode, int nan_propagation,
                                             double coef);
using DestroyActivationDescriptorFn = Status (*)(ActivationDescriptor);
using ActivationForwardFn = Status (*)(Handle, ActivationDescriptor, const void* alpha,
                                       TensorDescriptor x_desc, const void* x, const void* beta,
                                       TensorDescriptor y_desc, void* y);

}  // namespace dietcode::cudnn
