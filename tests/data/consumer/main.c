/* Compiles as strict C99 against the installed <dietcode/pack_abi.h> (the C++ half checks the
 * signatures) and prints the ABI version both halves saw. */
#include <dietcode/pack_abi.h>
#include <stdio.h>

int abi_from_cxx(void);

int main(void) {
  /* The status codes are part of the ABI: a program compares return values with them. */
  const int codes[] = {DIETCODE_OK,           DIETCODE_ERR_INVALID_ARGUMENT,
                       DIETCODE_ERR_UNKNOWN_OP, DIETCODE_ERR_NO_DEVICE,
                       DIETCODE_ERR_ARCH_MISMATCH, DIETCODE_ERR_CUDA};
  int i;
  for (i = 0; i < 6; ++i) {
    if (codes[i] != i) return 1;
  }
  printf("pack ABI %d from C, %d from C++\n", DIETCODE_ABI_VERSION, abi_from_cxx());
  return abi_from_cxx() == DIETCODE_ABI_VERSION ? 0 : 1;
}
