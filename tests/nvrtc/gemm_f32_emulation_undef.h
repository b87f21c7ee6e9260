// Clears the tunables, layout and geometry macros and entry renames of the fp32 SIMT GEMM
// templates (dense_f32, batch_matmul_f32, conv2d_f32) between two inclusions in a host-emulation
// test. Deliberately without an include guard.
#include "nvrtc/dense_f32_emulation_undef.h"
#undef STATIC_M
#undef MIN_BLOCKS
#undef A_K_CONTIGUOUS
#undef B_K_CONTIGUOUS
#undef STATIC_H
#undef STATIC_W
#undef STATIC_C
#undef STATIC_S
#undef STATIC_P
#undef STATIC_Q
#undef CONV_STRIDE_H
#undef CONV_STRIDE_W
#undef CONV_PAD_H
#undef CONV_PAD_W
#undef CONV_DILATION_H
#undef CONV_DILATION_W
#undef dietcode_batch_matmul_f32
#undef dietcode_batch_matmul_f32_reduce
#undef dietcode_conv2d_f32
#undef dietcode_conv2d_f32_reduce
