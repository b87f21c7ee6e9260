/* A stand-in libcudnn.so.9: a TEST DOUBLE, never a measurement.
 *
 * It exports the cuDNN functions bench's loader resolves (src/bench/cudnn_loader.cc), each
 * failing with CUDNN_STATUS_NOT_SUPPORTED, so the loader's refusals are tested without cuDNN.
 * Build variants:
 *   FAKE_CUDNN_VERSION=N    cudnnGetVersion() returns N (default 91900, i.e. 9.19.0)
 *   FAKE_CUDNN_NO_FUSED=1   cudnnConvolutionBiasActivationForward is missing */
#include <stddef.h>

#ifndef FAKE_CUDNN_VERSION
#define FAKE_CUDNN_VERSION 91900
#endif

#define EXPORT __attribute__((visibility("default")))
#define NOT_SUPPORTED(name) \
  EXPORT int name(void) { return 3000; }

EXPORT size_t cudnnGetVersion(void) { return FAKE_CUDNN_VERSION; }
EXPORT const char* cudnnGetErrorString(int status) {
  return status == 3000 ? "CUDNN_STATUS_NOT_SUPPORTED (fake)" : "fake cuDNN status";
}
NOT_SUPPORTED(cudnnCreate)
NOT_SUPPORTED(cudnnDestroy)
NOT_SUPPORTED(cudnnSetStream)
NOT_SUPPORTED(cudnnCreateTensorDescriptor)
NOT_SUPPORTED(cudnnSetTensor4dDescriptor)
NOT_SUPPORTED(cudnnDestroyTensorDescriptor)
NOT_SUPPORTED(cudnnCreateFilterDescriptor)
NOT_SUPPORTED(cudnnSetFilter4dDescriptor)
NOT_SUPPORTED(cudnnDestroyFilterDescriptor)
NOT_SUPPORTED(cudnnCreateConvolutionDescriptor)
NOT_SUPPORTED(cudnnSetConvolution2dDescriptor)
NOT_SUPPORTED(cudnnSetConvolutionMathType)
NOT_SUPPORTED(cudnnGetConvolution2dForwardOutputDim)
NOT_SUPPORTED(cudnnDestroyConvolutionDescriptor)
NOT_SUPPORTED(cudnnGetConvolutionForwardAlgorithmMaxCount)
NOT_SUPPORTED(cudnnFindConvolutionForwardAlgorithmEx)
NOT_SUPPORTED(cudnnConvolutionForward)
#if !FAKE_CUDNN_NO_FUSED
NOT_SUPPORTED(cudnnConvolutionBiasActivationForward)
#endif
NOT_SUPPORTED(cudnnAddTensor)
NOT_SUPPORTED(cudnnCreateActivationDescriptor)
NOT_SUPPORTED(cudnnSetActivationDescriptor)
NOT_SUPPORTED(cudnnDestroyActivationDescriptor)
NOT_SUPPORTED(cudnnActivationForward)
