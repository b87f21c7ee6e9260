/* A stand-in kernel pack: a TEST DOUBLE, never a measurement.
 *
 * It exports the pack C ABI (include/dietcode/pack_abi.h) with a fixed manifest in the pack
 * generator's format and launches nothing, so the pack loader and `dietcode bench` are tested
 * on machines without a GPU. Build variants:
 *   (default)              manifest with "dims" per op
 *   TEST_PACK_NO_DIMS=1    manifest without "dims" (bench then needs --workload)
 *   TEST_PACK_ABI=N        dietcode_abi_version() returns N */
#include <stdint.h>
#include <string.h>

#include "dietcode/pack_abi.h"

#ifndef TEST_PACK_ABI
#define TEST_PACK_ABI DIETCODE_ABI_VERSION
#endif

#if TEST_PACK_NO_DIMS
#define QKV_DIMS ""
#define FC1_DIMS ""
#else
#define QKV_DIMS "\"dims\": {\"M\": \"16*T\", \"N\": \"64\", \"K\": \"32\"}, "
#define FC1_DIMS "\"dims\": {\"M\": \"16*T\", \"N\": 96, \"K\": \"32\"}, "
#endif

static const char kManifest[] =
    "{\"format\": \"dietcode-pack\", \"abi_version\": 1, \"name\": \"test_pack\", "
    "\"tool_version\": \"0.1.0\", \"archs\": [\"sm_90\"], \"ptx_arch\": null, "
    "\"choices\": \"test double\", "
    "\"shape_vars\": [{\"name\": \"T\", \"min\": 1, \"max\": 4, \"count\": 4}], "
    "\"ops\": ["
    "{\"name\": \"qkv\", \"function\": \"test_pack_qkv\", \"op\": \"dense\", "
    "\"dtype\": \"float32\", \"epilogue\": \"none\", \"weight\": 1, \"vars\": [\"T\"], "
    "\"args\": [\"X\", \"W\", \"Y\"], " QKV_DIMS
    "\"kernels\": [], \"instances\": {\"values\": [[1], [2], [3], [4]], "
    "\"weight\": [0.1, 0.2, 0.3, 0.4]}}, "
    "{\"name\": \"fc1\", \"function\": \"test_pack_fc1\", \"op\": \"dense\", "
    "\"dtype\": \"float16\", \"epilogue\": \"bias_gelu\", \"weight\": 2, \"vars\": [\"T\"], "
    "\"args\": [\"X\", \"W\", \"bias\", \"Y\"], " FC1_DIMS "\"kernels\": []}"
    "]}";

static __thread const char* last_error = "";

DIETCODE_API int dietcode_abi_version(void) { return TEST_PACK_ABI; }

DIETCODE_API const char* dietcode_manifest(void) { return kManifest; }

DIETCODE_API const char* dietcode_last_error(void) { return last_error; }

DIETCODE_API int dietcode_select(const char* op, const int64_t* shape_values, int n_values) {
  if (!op || !shape_values || n_values != 1) return -DIETCODE_ERR_INVALID_ARGUMENT;
  if (strcmp(op, "qkv") != 0 && strcmp(op, "fc1") != 0) return -DIETCODE_ERR_UNKNOWN_OP;
  return 0;
}

DIETCODE_API int dietcode_launch(const char* op, void* const* args, int n_args,
                                 const int64_t* shape_values, int n_values, void* stream) {
  (void)op, (void)args, (void)n_args, (void)shape_values, (void)n_values, (void)stream;
  last_error = "test double: this pack launches nothing";
  return DIETCODE_ERR_NO_DEVICE;
}
