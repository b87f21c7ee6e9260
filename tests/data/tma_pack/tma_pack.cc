// A hand-written kernel pack translation unit (what `dietcode build` generates, written out for
// tests): one kernel with a TMA producer (tma_box_k 64, as dense_wgmma with PRODUCER=1 has) and
// one without, in bfloat16. Compiled with the pack runtime and run on the stand-in driver (a
// TEST DOUBLE), where nothing runs: the images are PTX text that declares each entry's
// parameters, from which the double learns that the TMA kernel takes two tensor maps.
//
//   proj  (M, N, K)     dense: M < 64 picks the plain kernel (1), else the TMA kernel (0)
//   bmm   (B, M, N, K)  batch_matmul, always the TMA kernel
//   tma_t (T)           dense M = 64*T, N = 256, K = 512 on the TMA kernel    (for the bench)
//   plain_t (T)         the same shape on the plain kernel                    (for the bench)
#include "pack_runtime.h"

namespace dietcode_pack {
namespace {

const char kTmaImage[] =
    ".version 8.0\n.target sm_90a\n.address_size 64\n"
    ".visible .entry dietcode_dense_wgmma(.param .align 8 .b8 dietcode_dense_wgmma_param_0[160],"
    " .param .align 64 .b8 dietcode_dense_wgmma_param_1[128],"
    " .param .align 64 .b8 dietcode_dense_wgmma_param_2[128]) { ret; }\n";
const char kPlainImage[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry dietcode_dense_tc(.param .align 8 .b8 dietcode_dense_tc_param_0[160])"
    " { ret; }\n";

const CubinImage cubins_tma[] = {
    {90, true, reinterpret_cast<const unsigned char*>(kTmaImage), sizeof kTmaImage}};
const CubinImage cubins_plain[] = {
    {90, false, reinterpret_cast<const unsigned char*>(kPlainImage), sizeof kPlainImage}};

// Kernel 0 asks only 2-byte alignment of its pointers, so the TMA's own 16-byte rule is what
// refuses a misaligned operand (a generated wgmma kernel asks 16 itself).
const KernelDesc kernels[] = {
    {"dietcode_dense_wgmma", "", 384, 98304, 128, 256, 1, 1, 256, 2, 64, cubins_tma, 1, nullptr, 0},
    {"dietcode_dense_tc", "", 128, 0, 64, 64, 1, 1, 256, 16, 0, cubins_plain, 1, nullptr, 0},
};

int select_proj(const int64_t* v) { return v[0] < 64 ? 1 : 0; }
int select_tma(const int64_t*) { return 0; }
int select_plain(const int64_t*) { return 1; }

void dense(int64_t m, int64_t n, int64_t k, DietcodeArgs* a) {
  a->batch = 1, a->m = m, a->n = n, a->k = k;
  a->stride_a = m * k, a->stride_b = n * k, a->stride_c = m * n;
}
int shape_proj(const int64_t* v, DietcodeArgs* a) { return dense(v[0], v[1], v[2], a), 1; }
int shape_t(const int64_t* v, DietcodeArgs* a) { return dense(64 * v[0], 256, 512, a), 1; }
int shape_bmm(const int64_t* v, DietcodeArgs* a) {
  dense(v[1], v[2], v[3], a);
  a->batch = v[0];
  return 1;
}

const char* const args_dense[] = {"X", "W", "Y"};
const char* const args_bmm[] = {"A", "B", "C"};
const char* const vars_proj[] = {"M", "N", "K", nullptr};
const char* const vars_bmm[] = {"B", "M", "N", "K", nullptr};
const char* const vars_t[] = {"T", nullptr};
const ArchSelect selects_proj[] = {{90, true, select_proj}};
const ArchSelect selects_tma[] = {{90, true, select_tma}};
const ArchSelect selects_plain[] = {{90, false, select_plain}};

const OpDesc ops[] = {
    {"proj", args_dense, 3, -1, 2, vars_proj, 3, selects_proj, 1, shape_proj, kernels, 2},
    {"bmm", args_bmm, 3, -1, 2, vars_bmm, 4, selects_tma, 1, shape_bmm, kernels, 2},
    {"tma_t", args_dense, 3, -1, 2, vars_t, 1, selects_tma, 1, shape_t, kernels, 2},
    {"plain_t", args_dense, 3, -1, 2, vars_t, 1, selects_plain, 1, shape_t, kernels, 2},
};

}  // namespace

const PackDesc kPack = {"tma_test", "{}", ops, 4};

}  // namespace dietcode_pack
