/* The one argument every dietcode micro-kernel takes: a plain C struct passed by value.
 *
 * Shared verbatim by the device templates (compiled by NVRTC) and the host side (the tuner's
 * measurer and the loader runtime inside every kernel pack), so it must stay plain C with
 * fixed-width fields and no padding surprises: pointers first, then 64-bit integers, then
 * 32-bit ones. A new field goes at the end and bumps DIETCODE_ARGS_VERSION.
 *
 * The GEMM view: batch independent problems C[b] = epilogue(A[b] . B[b] + bias), with
 * element strides between batch elements. dense maps to batch = 1, A = X[M,K],
 * B = W[N,K] (transposed use); conv2d fills conv with its geometry for implicit GEMM.
 */
#ifndef DIETCODE_ARGS_H_
#define DIETCODE_ARGS_H_

#define DIETCODE_ARGS_VERSION 1

typedef struct DietcodeArgs {
  const void* a;    /* dense: X[M,K]; batch_matmul: A; conv2d: input NHWC */
  const void* b;    /* dense: W[N,K]; batch_matmul: B; conv2d: weights KRSC */
  const void* bias; /* [N] or NULL when the epilogue has no bias */
  void* c;          /* output */
  void* workspace;  /* split-K partial sums, sized by the launch plan; NULL when unused */
  long long batch, m, n, k;
  long long stride_a, stride_b, stride_c; /* elements between batch elements */
  /* conv2d NHWC geometry: input n,h,w,c; filter k,r,s; output p,q; stride, pad, dilation */
  int conv_n, conv_h, conv_w, conv_c, conv_k, conv_r, conv_s, conv_p, conv_q;
  int stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  int reserved;
} DietcodeArgs;

#endif /* DIETCODE_ARGS_H_ */
