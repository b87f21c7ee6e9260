/* dietcode kernel pack C ABI (SPEC §5). Provisional copy: replaced by the shared header. */
#ifndef DIETCODE_PACK_ABI_H_
#define DIETCODE_PACK_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DIETCODE_ABI_VERSION 1
enum {
  DIETCODE_OK = 0,
  DIETCODE_ERR_INVALID_ARGUMENT = 1,
  DIETCODE_ERR_UNKNOWN_OP = 2,
  DIETCODE_ERR_NO_DEVICE = 3,
  DIETCODE_ERR_ARCH_MISMATCH = 4,
  DIETCODE_ERR_CUDA = 5
};
int dietcode_abi_version(void);
const char* dietcode_manifest(void);
const char* dietcode_last_error(void);
int dietcode_select(const char* op, const int64_t* shape_values, int n_values);
int dietcode_launch(const char* op, void* const* args, int n_args,
                    const int64_t* shape_values, int n_values, void* stream);

#ifdef __cplusplus
}
#endif

#endif /* DIETCODE_PACK_ABI_H_ */
