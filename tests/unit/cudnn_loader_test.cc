// The cuDNN loader without a GPU: where it looks, the one line it gives when cuDNN is missing,
// is not cuDNN, lacks a function or is too old (stand-in libraries, test doubles), that the
// real cuDNN 9 of this machine loads and resolves everything (opening it needs no driver), and
// that our declarations (cudnn_abi.h) match cuDNN's own headers where those are installed.
#include "bench/cudnn_loader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>

#include "common/error.h"

#if __has_include(<cudnn.h>)
#include <cudnn.h>
#define DIETCODE_HAVE_CUDNN_HEADERS 1
#endif

namespace dietcode {
namespace {

namespace fs = std::filesystem;

const std::string kFakeDir = DIETCODE_FAKE_CUDNN_DIR;

CudnnSearchEnv empty_env() {
  CudnnSearchEnv env;
  env.python_roots.clear();
  return env;
}

TEST(CudnnLoader, CandidatesInOrder) {
  const std::vector<std::string> files = cudnn_candidates(empty_env());
  ASSERT_GE(files.size(), 2u);
  EXPECT_EQ(files[0], "libcudnn.so.9");
  EXPECT_NE(std::find(files.begin(), files.end(), "/usr/local/cuda/lib64/libcudnn.so.9"),
            files.end());
  EXPECT_EQ(std::set<std::string>(files.begin(), files.end()).size(), files.size());
}

TEST(CudnnLoader, EnvironmentOverrideIsTheOnlyCandidate) {
  CudnnSearchEnv env = empty_env();
  env.library = "/opt/cudnn/lib/libcudnn.so.9";
  env.virtual_env = "/somewhere";
  EXPECT_EQ(cudnn_candidates(env), std::vector<std::string>{"/opt/cudnn/lib/libcudnn.so.9"});
}

TEST(CudnnLoader, FindsPipWheelsInVirtualEnvAndHome) {
  const fs::path root = fs::temp_directory_path() / ("dietcode_cudnn_" + std::to_string(getpid()));
  const fs::path venv_lib = root / "venv/lib/python3.11/site-packages/nvidia/cudnn/lib";
  const fs::path home_lib = root / "home/.local/lib/python3.12/site-packages/nvidia/cudnn/lib";
  const fs::path deb_lib = root / "usr/lib/python3/dist-packages/nvidia/cudnn/lib";
  for (const fs::path& dir : {venv_lib, home_lib, deb_lib}) {
    fs::create_directories(dir);
    std::ofstream(dir / "libcudnn.so.9") << "";
  }
  CudnnSearchEnv env = empty_env();
  env.virtual_env = (root / "venv").string();
  env.home = (root / "home").string();
  env.python_roots = {(root / "usr/lib").string()};
  const std::vector<std::string> files = cudnn_candidates(env);
  const std::vector<std::string> tail(files.end() - 3, files.end());
  EXPECT_EQ(tail, (std::vector<std::string>{(venv_lib / "libcudnn.so.9").string(),
                                            (home_lib / "libcudnn.so.9").string(),
                                            (deb_lib / "libcudnn.so.9").string()}));
  fs::remove_all(root);
}

TEST(CudnnLoader, MissingLibraryIsOneLine) {
  CudnnSearchEnv env = empty_env();
  env.library = "/nonexistent/libcudnn.so.9";
  CudnnApi api;
  std::string why;
  EXPECT_FALSE(load_cudnn(cudnn_candidates(env), &api, &why));
  EXPECT_EQ(why,
            "no cuDNN: /nonexistent/libcudnn.so.9: cannot open shared object file: No such file "
            "or directory");

  EXPECT_FALSE(load_cudnn({"libcudnn_missing.so.9", "/nonexistent/libcudnn.so.9"}, &api, &why));
  EXPECT_EQ(why,
            "no cuDNN: libcudnn_missing.so.9: cannot open shared object file: No such file or "
            "directory (also tried /nonexistent/libcudnn.so.9)");
}

TEST(CudnnLoader, ALibraryThatIsNotCudnn) {
  CudnnApi api;
  std::string why;
  EXPECT_FALSE(load_cudnn({"libm.so.6"}, &api, &why));
  EXPECT_EQ(why, "no cuDNN: libm.so.6 has no cudnnGetVersion");
  EXPECT_EQ(api.cudnnGetVersion, nullptr);  // nothing half-filled on failure
}

TEST(CudnnLoader, ALibraryLackingOneFunctionIsRefused) {
  const std::string path = kFakeDir + "/libfake_cudnn_no_fused.so";
  CudnnApi api;
  std::string why;
  EXPECT_FALSE(load_cudnn({path}, &api, &why));
  EXPECT_EQ(why, "no cuDNN: " + path + " has no cudnnConvolutionBiasActivationForward");
  EXPECT_EQ(api.cudnnCreate, nullptr);
}

TEST(CudnnLoader, CudnnEightIsRefused) {
  const std::string path = kFakeDir + "/libfake_cudnn_v8.so";
  CudnnApi api;
  std::string why;
  EXPECT_FALSE(load_cudnn({path}, &api, &why));
  EXPECT_EQ(why, "no cuDNN: " + path + " is cuDNN 8.9.7; bench needs cuDNN 9 or newer");
}

TEST(CudnnLoader, TheFirstLoadableCandidateWins) {
  const std::string path = kFakeDir + "/libfake_cudnn_v9.so";
  CudnnApi api;
  std::string why = "stale";
  ASSERT_TRUE(load_cudnn({"/nonexistent/libcudnn.so.9", path}, &api, &why)) << why;
  EXPECT_EQ(why, "");
  EXPECT_EQ(api.path, path);
  EXPECT_EQ(api.version, 91900u);
  // The library's words for a failure, as check_cudnn reports them.
  try {
    check_cudnn(api, api.cudnnCreate(nullptr), "cudnnCreate");
    FAIL() << "no exception";
  } catch (const EnvironmentError& e) {
    EXPECT_STREQ(e.what(), "cudnnCreate: CUDNN_STATUS_NOT_SUPPORTED (fake)");
  }
}

TEST(CudnnLoader, VersionText) {
  EXPECT_EQ(cudnn_version_text(91900), "9.19.0");
  EXPECT_EQ(cudnn_version_text(90100), "9.1.0");
  EXPECT_EQ(cudnn_version_text(100203), "10.2.3");
  EXPECT_EQ(cudnn_version_text(8907), "8.9.7");
}

TEST(CudnnLoader, StatusWithoutTheLibrary) {
  CudnnApi none;
  EXPECT_NO_THROW(check_cudnn(none, cudnn::kStatusSuccess, "x"));
  try {
    check_cudnn(none, cudnn::kStatusBadParam, "cudnnSetTensor4dDescriptor");
    FAIL() << "no exception";
  } catch (const EnvironmentError& e) {
    EXPECT_STREQ(e.what(), "cudnnSetTensor4dDescriptor: cudnnStatus_t 2000");
  }
}

TEST(CudnnLoader, LoadsTheInstalledCudnn) {
  bool present = false;
  for (const std::string& path : cudnn_candidates(CudnnSearchEnv::from_process()))
    present |= path.find('/') == std::string::npos || fs::exists(path);
  CudnnApi api;
  std::string why;
  if (!load_cudnn(cudnn_candidates(CudnnSearchEnv::from_process()), &api, &why))
    GTEST_SKIP() << "no cuDNN 9 on this machine: " << why;
  EXPECT_TRUE(present);
  EXPECT_EQ(why, "");
  EXPECT_NE(api.path.find("libcudnn.so.9"), std::string::npos) << api.path;
  EXPECT_GE(api.version, 90000u);
  EXPECT_TRUE(std::regex_match(cudnn_version_text(api.version), std::regex(R"(9\.\d+\.\d+)")))
      << cudnn_version_text(api.version);
  for (const void* fn : {(const void*)api.cudnnGetVersion,
                         (const void*)api.cudnnGetErrorString,
                         (const void*)api.cudnnCreate,
                         (const void*)api.cudnnDestroy,
                         (const void*)api.cudnnSetStream,
                         (const void*)api.cudnnCreateTensorDescriptor,
                         (const void*)api.cudnnSetTensor4dDescriptor,
                         (const void*)api.cudnnDestroyTensorDescriptor,
                         (const void*)api.cudnnCreateFilterDescriptor,
                         (const void*)api.cudnnSetFilter4dDescriptor,
                         (const void*)api.cudnnDestroyFilterDescriptor,
                         (const void*)api.cudnnCreateConvolutionDescriptor,
                         (const void*)api.cudnnSetConvolution2dDescriptor,
                         (const void*)api.cudnnSetConvolutionMathType,
                         (const void*)api.cudnnGetConvolution2dForwardOutputDim,
                         (const void*)api.cudnnDestroyConvolutionDescriptor,
                         (const void*)api.cudnnGetConvolutionForwardAlgorithmMaxCount,
                         (const void*)api.cudnnFindConvolutionForwardAlgorithmEx,
                         (const void*)api.cudnnConvolutionForward,
                         (const void*)api.cudnnConvolutionBiasActivationForward,
                         (const void*)api.cudnnAddTensor,
                         (const void*)api.cudnnCreateActivationDescriptor,
                         (const void*)api.cudnnSetActivationDescriptor,
                         (const void*)api.cudnnDestroyActivationDescriptor,
                         (const void*)api.cudnnActivationForward})
    EXPECT_NE(fn, nullptr);
  // cuDNN's own text for a status: what check_cudnn puts in its message.
  EXPECT_STREQ(api.cudnnGetErrorString(cudnn::kStatusBadParam), "CUDNN_STATUS_BAD_PARAM");
  std::string process_why;
  ASSERT_NE(cudnn_api_or_null(&process_why), nullptr) << process_why;
}

#ifdef DIETCODE_HAVE_CUDNN_HEADERS
template <typename R, typename... A>
constexpr size_t arity(R (*)(A...)) {
  return sizeof...(A);
}

// cudnn_abi.h against the real declarations: values, struct layout and function types.
TEST(CudnnAbi, MatchesCudnnHeaders) {
  static_assert(cudnn::kStatusSuccess == CUDNN_STATUS_SUCCESS);
  static_assert(cudnn::kStatusBadParam == CUDNN_STATUS_BAD_PARAM);
  static_assert(cudnn::kStatusNotSupported == CUDNN_STATUS_NOT_SUPPORTED);
  static_assert(cudnn::kDataFloat == CUDNN_DATA_FLOAT && cudnn::kDataHalf == CUDNN_DATA_HALF &&
                cudnn::kDataBFloat16 == CUDNN_DATA_BFLOAT16);
  static_assert(cudnn::kTensorNchw == CUDNN_TENSOR_NCHW && cudnn::kTensorNhwc == CUDNN_TENSOR_NHWC);
  static_assert(cudnn::kCrossCorrelation == CUDNN_CROSS_CORRELATION);
  static_assert(cudnn::kDefaultMath == CUDNN_DEFAULT_MATH &&
                cudnn::kTensorOpMath == CUDNN_TENSOR_OP_MATH &&
                cudnn::kTensorOpMathAllowConversion == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION &&
                cudnn::kFmaMath == CUDNN_FMA_MATH);
  static_assert(cudnn::kActivationRelu == CUDNN_ACTIVATION_RELU &&
                cudnn::kActivationIdentity == CUDNN_ACTIVATION_IDENTITY);
  static_assert(cudnn::kNotPropagateNan == CUDNN_NOT_PROPAGATE_NAN);
  static_assert(cudnn::kFwdAlgoCount == CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  static_assert(sizeof(cudnn::FwdAlgoPerf) == sizeof(Perf));
  static_assert(offsetof(cudnn::FwdAlgoPerf, algo) == offsetof(Perf, algo));
  static_assert(offsetof(cudnn::FwdAlgoPerf, status) == offsetof(Perf, status));
  static_assert(offsetof(cudnn::FwdAlgoPerf, time) == offsetof(Perf, time));
  static_assert(offsetof(cudnn::FwdAlgoPerf, memory) == offsetof(Perf, memory));
  static_assert(offsetof(cudnn::FwdAlgoPerf, math_type) == offsetof(Perf, mathType));
  static_assert(sizeof(cudnnStatus_t) == sizeof(cudnn::Status));
  static_assert(sizeof(cudnnConvolutionFwdAlgo_t) == sizeof(int) &&
                sizeof(cudnnMathType_t) == sizeof(int) && sizeof(cudnnDataType_t) == sizeof(int));
  // Every function we declare takes as many parameters as the header's (the types are
  // opaque-pointer or int stand-ins of the same size, checked above).
  static_assert(arity(cudnn::GetVersionFn{}) == arity(&::cudnnGetVersion));
  static_assert(arity(cudnn::GetErrorStringFn{}) == arity(&::cudnnGetErrorString));
  static_assert(arity(cudnn::CreateFn{}) == arity(&::cudnnCreate));
  static_assert(arity(cudnn::DestroyFn{}) == arity(&::cudnnDestroy));
  static_assert(arity(cudnn::SetStreamFn{}) == arity(&::cudnnSetStream));
  static_assert(arity(cudnn::CreateTensorDescriptorFn{}) == arity(&::cudnnCreateTensorDescriptor));
  static_assert(arity(cudnn::SetTensor4dDescriptorFn{}) == arity(&::cudnnSetTensor4dDescriptor));
  static_assert(arity(cudnn::DestroyTensorDescriptorFn{}) ==
                arity(&::cudnnDestroyTensorDescriptor));
  static_assert(arity(cudnn::CreateFilterDescriptorFn{}) == arity(&::cudnnCreateFilterDescriptor));
  static_assert(arity(cudnn::SetFilter4dDescriptorFn{}) == arity(&::cudnnSetFilter4dDescriptor));
  static_assert(arity(cudnn::DestroyFilterDescriptorFn{}) ==
                arity(&::cudnnDestroyFilterDescriptor));
  static_assert(arity(cudnn::CreateConvolutionDescriptorFn{}) ==
                arity(&::cudnnCreateConvolutionDescriptor));
  static_assert(arity(cudnn::SetConvolution2dDescriptorFn{}) ==
                arity(&::cudnnSetConvolution2dDescriptor));
  static_assert(arity(cudnn::SetConvolutionMathTypeFn{}) == arity(&::cudnnSetConvolutionMathType));
  static_assert(arity(cudnn::GetConvolution2dForwardOutputDimFn{}) ==
                arity(&::cudnnGetConvolution2dForwardOutputDim));
  static_assert(arity(cudnn::DestroyConvolutionDescriptorFn{}) ==
                arity(&::cudnnDestroyConvolutionDescriptor));
  static_assert(arity(cudnn::GetConvolutionForwardAlgorithmMaxCountFn{}) ==
                arity(&::cudnnGetConvolutionForwardAlgorithmMaxCount));
  static_assert(arity(cudnn::FindConvolutionForwardAlgorithmExFn{}) ==
                arity(&::cudnnFindConvolutionForwardAlgorithmEx));
  static_assert(arity(cudnn::ConvolutionForwardFn{}) == arity(&::cudnnConvolutionForward));
  static_assert(arity(cudnn::ConvolutionBiasActivationForwardFn{}) ==
                arity(&::cudnnConvolutionBiasActivationForward));
  static_assert(arity(cudnn::AddTensorFn{}) == arity(&::cudnnAddTensor));
  static_assert(arity(cudnn::CreateActivationDescriptorFn{}) ==
                arity(&::cudnnCreateActivationDescriptor));
  static_assert(arity(cudnn::SetActivationDescriptorFn{}) ==
                arity(&::cudnnSetActivationDescriptor));
  static_assert(arity(cudnn::DestroyActivationDescriptorFn{}) ==
                arity(&::cudnnDestroyActivationDescriptor));
  static_assert(arity(cudnn::ActivationForwardFn{}) == arity(&::cudnnActivationForward));
}
#endif

}  // namespace
}  // namespace dietcode
