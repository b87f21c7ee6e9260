// The tunables of one fp32 SIMT GEMM micro-kernel (templates/gemm_core_f32.cuh) in the order the
// template and GPU tests of dense_f32, batch_matmul_f32 and conv2d_f32 sample them: warps,
// threads of a warp along M (the rest go along N), elements per thread, K depth, vector width,
// pipeline stages and split-K.
#pragma once

#include <map>
#include <string>

namespace dietcode::testing {

inline std::map<std::string, int> simt_tile(int wm, int wn, int thm, int tm, int tn, int bk,
                                            int vec, int stages, int split = 1) {
  return {{"WARPS_M", wm},    {"WARPS_N", wn},  {"THREADS_M", thm}, {"THREADS_N", 32 / thm},
          {"TM", tm},         {"TN", tn},       {"BK", bk},         {"VEC", vec},
          {"STAGES", stages}, {"SPLITK", split}};
}

}  // namespace dietcode::testing
