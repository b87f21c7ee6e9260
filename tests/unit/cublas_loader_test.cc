// The cuBLAS/cuBLASLt loader without a GPU: where it looks, what it says when a library is
// missing or is not cuBLAS, and that the toolkit's libraries load and resolve (they need no
// driver to load; only cublasCreate would).
#include "bench/cublas_loader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

namespace dietcode {
namespace {

TEST(CublasLoader, CandidatesStartWithTheSoname) {
  const std::vector<std::string> blas = cublas_candidates();
  ASSERT_GE(blas.size(), 3u);
  EXPECT_EQ(blas[0], "libcublas.so.13");
  EXPECT_EQ(blas[1], "libcublas.so");
  EXPECT_NE(std::find(blas.begin(), blas.end(), "/usr/local/cuda/lib64/libcublas.so.13"),
            blas.end());
  EXPECT_EQ(std::set<std::string>(blas.begin(), blas.end()).size(), blas.size());  // no repeats

  const std::vector<std::string> lt = cublaslt_candidates();
  EXPECT_EQ(lt[0], "libcublasLt.so.13");
  EXPECT_NE(std::find(lt.begin(), lt.end(), "/usr/local/cuda/lib64/libcublasLt.so.13"), lt.end());
}

TEST(CublasLoader, MissingLibraryIsOneLine) {
  CublasApi api;
  std::string why;
  EXPECT_FALSE(load_cublas({"libcublas_missing.so.13"}, {"libcublasLt_missing.so.13"}, &api, &why));
  EXPECT_EQ(why,
            "no cuBLASLt: libcublasLt_missing.so.13: cannot open shared object file: No such file "
            "or directory; run with --baseline none to time the pack alone");

  EXPECT_FALSE(load_cublas({"libcublas_missing.so.13"},
                           {"libcublasLt_missing.so.13", "/nonexistent/libcublasLt.so"}, &api,
                           &why));
  EXPECT_EQ(why,
            "no cuBLASLt: libcublasLt_missing.so.13: cannot open shared object file: No such file "
            "or directory (also tried /nonexistent/libcublasLt.so); run with --baseline none to "
            "time the pack alone");
}

TEST(CublasLoader, ALibraryThatIsNotCublas) {
  CublasApi api;
  std::string why;
  EXPECT_FALSE(load_cublas({"libm.so.6"}, {"libm.so.6"}, &api, &why));
  EXPECT_EQ(why,
            "no cuBLAS: libm.so.6 has no cublasCreate_v2 (a cuBLAS from CUDA 12 or newer is "
            "needed)");
  EXPECT_EQ(api.cublasCreate_v2, nullptr);  // nothing half-filled on failure
}

TEST(CublasLoader, LoadsTheToolkitsLibraries) {
  // The CUDA toolkit dietcode builds against ships both; they load without a driver.
  bool present = false;
  for (const std::string& path : cublaslt_candidates()) present |= std::filesystem::exists(path);
  if (!present) GTEST_SKIP() << "no libcublasLt in the toolkit's library folder";
  CublasApi api;
  std::string why;
  ASSERT_TRUE(load_cublas(cublas_candidates(), cublaslt_candidates(), &api, &why)) << why;
  EXPECT_EQ(why, "");
  EXPECT_NE(api.cublas_path.find("libcublas.so"), std::string::npos) << api.cublas_path;
  EXPECT_NE(api.cublaslt_path.find("libcublasLt.so"), std::string::npos) << api.cublaslt_path;
  EXPECT_EQ(api.lt_version / 10000, size_t(CUBLAS_VER_MAJOR));
  for (const void* fn : {(const void*)api.cublasCreate_v2,
                         (const void*)api.cublasDestroy_v2,
                         (const void*)api.cublasSetStream_v2,
                         (const void*)api.cublasSetWorkspace_v2,
                         (const void*)api.cublasSetMathMode,
                         (const void*)api.cublasSgemm_v2,
                         (const void*)api.cublasGemmEx,
                         (const void*)api.cublasSgemmStridedBatched,
                         (const void*)api.cublasGemmStridedBatchedEx,
                         (const void*)api.cublasLtCreate,
                         (const void*)api.cublasLtMatmul,
                         (const void*)api.cublasLtMatmulDescCreate,
                         (const void*)api.cublasLtMatmulDescSetAttribute,
                         (const void*)api.cublasLtMatmulDescDestroy,
                         (const void*)api.cublasLtMatrixLayoutCreate,
                         (const void*)api.cublasLtMatrixLayoutDestroy,
                         (const void*)api.cublasLtMatmulPreferenceCreate,
                         (const void*)api.cublasLtMatmulPreferenceSetAttribute,
                         (const void*)api.cublasLtMatmulPreferenceDestroy,
                         (const void*)api.cublasLtMatmulAlgoGetHeuristic})
    EXPECT_NE(fn, nullptr);
  // The library's own words for a status, as check_cublas reports them.
  EXPECT_STRNE(api.cublasGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED), "");
}

TEST(CublasLoader, StatusNamesAndChecks) {
  EXPECT_EQ(cublas_status_name(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
  EXPECT_EQ(cublas_status_name(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED");
  EXPECT_EQ(cublas_status_name(static_cast<cublasStatus_t>(99)), "cublasStatus_t 99");
  CublasApi no_library;  // without cublasGetStatusString the name alone is reported
  EXPECT_NO_THROW(check_cublas(no_library, CUBLAS_STATUS_SUCCESS, "x"));
  try {
    check_cublas(no_library, CUBLAS_STATUS_ARCH_MISMATCH, "cublasLtMatmul for op qkv");
    FAIL() << "no exception";
  } catch (const EnvironmentError& e) {
    EXPECT_STREQ(e.what(), "cublasLtMatmul for op qkv: CUBLAS_STATUS_ARCH_MISMATCH");
  }
}

}  // namespace
}  // namespace dietcode
