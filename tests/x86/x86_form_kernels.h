// The kernel tables of the forms that read B's rows in place (run_dot in dot_x86.h, run_wbcast in
// wbcast_x86.h) and their checks, shared by the AVX2 and the AVX-512 kernel tests. Include it
// after x86/ops_x86.h; the ISA comes in through P.
#pragma once

#include "x86/serial_runtime.h"
#include "x86_kernel_harness.h"

namespace dc_x86_test {

struct DotForm {
  template <dc_x86::OpKind OP, int EPI, class P>
  static int run(const DietcodeArgs* a, const DietcodeCpuRuntime* rt) {
    return dc_x86::run_dot<OP, dc_x86::Epilogue(EPI), P>(a, rt);
  }
};

struct WbcastForm {
  template <dc_x86::OpKind OP, int EPI, class P>
  static int run(const DietcodeArgs* a, const DietcodeCpuRuntime* rt) {
    return dc_x86::run_wbcast<OP, dc_x86::Epilogue(EPI), P>(a, rt);
  }
};

// What check_b_in_place_form runs: dense with every epilogue, batch_matmul NT with none and
// bias+GELU.
template <class Form, class P>
DietcodeCpuKernelFn rows_of_k_kernels(Op op, int epi) {
  using dc_x86::OpKind;
  static const DietcodeCpuKernelFn dense[6] = {
      Form::template run<OpKind::kDense, 0, P>, Form::template run<OpKind::kDense, 1, P>,
      Form::template run<OpKind::kDense, 2, P>, Form::template run<OpKind::kDense, 3, P>,
      Form::template run<OpKind::kDense, 4, P>, Form::template run<OpKind::kDense, 5, P>};
  if (op == Op::kDense) return dense[epi];
  return epi == 0 ? Form::template run<OpKind::kBatchMatmulNT, 0, P>
                  : Form::template run<OpKind::kBatchMatmulNT, 5, P>;
}

// The dot-product form with DotParams P on the serial runtime and a pool of `threads`.
template <class P>
void check_dot(int threads) {
  dc_x86::SimpleThreadPool pool{threads};
  const DietcodeCpuRuntime serial = dc_x86::serial_runtime(), pooled = pool.runtime();
  check_dot_form(rows_of_k_kernels<DotForm, P>, P::MR, P::NR, P::KC, &serial, &pooled);
}

// The W-broadcast form (W broadcast in place, X packed, C stored transposed) with Params P.
template <class P>
void check_wbcast(int threads) {
  dc_x86::SimpleThreadPool pool{threads};
  const DietcodeCpuRuntime serial = dc_x86::serial_runtime(), pooled = pool.runtime();
  check_wbcast_form(rows_of_k_kernels<WbcastForm, P>, P::MR, P::NR, P::KC, P::MC, P::NC, &serial,
                    &pooled);
}

}  // namespace dc_x86_test
