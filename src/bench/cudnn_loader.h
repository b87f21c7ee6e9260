// cuDNN 9, reached at run time and never linked: the conv2d baseline of `dietcode bench`.
//
// Why dlopen: as for cuBLAS (cublas_loader.h), dietcode must start on machines without cuDNN,
// and cuDNN is ~1 GB that only bench needs. libcudnn.so.9 is the small front library of
// cuDNN 9: it exports the whole API and loads its sub-libraries (libcudnn_cnn, libcudnn_ops,
// ...) from next to itself on first use, so opening it needs no GPU and no driver.
//
// Where it looks, in order (cudnn_candidates):
//   1. $DIETCODE_CUDNN_LIBRARY when set, and then nothing else: an explicit choice that does
//      not load is reported, never silently replaced by another cuDNN;
//   2. "libcudnn.so.9", which the dynamic loader resolves through LD_LIBRARY_PATH, the ld.so
//      cache and the default folders (Debian's and Red Hat's cudnn9 packages land there);
//   3. the CUDA toolkit's library folders (the one dietcode was built against, then
//      /usr/local/cuda/lib64), where the tarball install and NVIDIA's containers put it;
//   4. pip's wheel (nvidia-cudnn-cu12/cu13): nvidia/cudnn/lib/libcudnn.so.9 under the site-
//      packages of $VIRTUAL_ENV, $CONDA_PREFIX, ~/.local and the system Pythons, which is
//      where a GPU host with PyTorch or JAX already has one.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "bench/cudnn_abi.h"

namespace dietcode {

struct CudnnApi {
  std::string path;    // the file actually opened, for the report
  size_t version = 0;  // cudnnGetVersion(): 91900 for 9.19.0

  cudnn::GetVersionFn cudnnGetVersion = nullptr;
  cudnn::GetErrorStringFn cudnnGetErrorString = nullptr;
  cudnn::CreateFn cudnnCreate = nullptr;
  cudnn::DestroyFn cudnnDestroy = nullptr;
  cudnn::SetStreamFn cudnnSetStream = nullptr;
  cudnn::CreateTensorDescriptorFn cudnnCreateTensorDescriptor = nullptr;
  cudnn::SetTensor4dDescriptorFn cudnnSetTensor4dDescriptor = nullptr;
  cudnn::DestroyTensorDescriptorFn cudnnDestroyTensorDescriptor = nullptr;
  cudnn::CreateFilterDescriptorFn cudnnCreateFilterDescriptor = nullptr;
  cudnn::SetFilter4dDescriptorFn cudnnSetFilter4dDescriptor = nullptr;
  cudnn::DestroyFilterDescriptorFn cudnnDestroyFilterDescriptor = nullptr;
  cudnn::CreateConvolutionDescriptorFn cudnnCreateConvolutionDescriptor = nullptr;
  cudnn::SetConvolution2dDescriptorFn cudnnSetConvolution2dDescriptor = nullptr;
  cudnn::SetConvolutionMathTypeFn cudnnSetConvolutionMathType = nullptr;
  cudnn::GetConvolution2dForwardOutputDimFn cudnnGetConvolution2dForwardOutputDim = nullptr;
  cudnn::DestroyConvolutionDescriptorFn cudnnDestroyConvolutionDescriptor = nullptr;
  cudnn::GetConvolutionForwardAlgorithmMaxCountFn cudnnGetConvolutionForwardAlgorithmMaxCount =
      nullptr;
  cudnn::FindConvolutionForwardAlgorithmExFn cudnnFindConvolutionForwardAlgorithmEx = nullptr;
  cudnn::ConvolutionForwardFn cudnnConvolutionForward = nullptr;
  cudnn::ConvolutionBiasActivationForwardFn cudnnConvolutionBiasActivationForward = nullptr;
  cudnn::AddTensorFn cudnnAddTensor = nullptr;
  cudnn::CreateActivationDescriptorFn cudnnCreateActivationDescriptor = nullptr;
  cudnn::SetActivationDescriptorFn cudnnSetActivationDescriptor = nullptr;
  cudnn::DestroyActivationDescriptorFn cudnnDestroyActivationDescriptor = nullptr;
  cudnn::ActivationForwardFn cudnnActivationForward = nullptr;
};

// What the search depends on, so tests can give their own.
struct CudnnSearchEnv {
  std::string library;  // $DIETCODE_CUDNN_LIBRARY
  std::string virtual_env, conda_prefix, home;
  std::vector<std::string> python_roots = {"/usr/local/lib", "/usr/lib"};  // system Pythons
  static CudnnSearchEnv from_process();  // the variables of this process
};

// The candidates above, existing wheel folders expanded (python3.* globbed), no repeats.
std::vector<std::string> cudnn_candidates(const CudnnSearchEnv& env);

// "9.19.0" for 91900; cuDNN 8 counted major * 1000 ("8.9.7" for 8907).
std::string cudnn_version_text(size_t version);

// Opens the first loadable file, resolves every function and checks cudnnGetVersion() >= 9.0;
// false with *why set to one line, e.g. "no cuDNN: libcudnn.so.9: cannot open shared object
// file: No such file or directory (also tried /usr/local/cuda/lib64/libcudnn.so.9)",
// "no cuDNN: /x/libm.so.6 has no cudnnGetVersion" or "no cuDNN: /x/libcudnn.so.8 is cuDNN
// 8.9.7; bench needs cuDNN 9 or newer".
bool load_cudnn(const std::vector<std::string>& files, CudnnApi* out, std::string* why);

// The process-wide instance from the default candidates, loaded once. Null with *why set when
// it cannot be loaded: the caller decides between a fallback and an error.
const CudnnApi* cudnn_api_or_null(std::string* why);

// Throws EnvironmentError "WHAT: CUDNN_STATUS_... (the library's text)" unless success.
void check_cudnn(const CudnnApi& api, cudnn::Status status, const std::string& what);

}  // namespace dietcode
