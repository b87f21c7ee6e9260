// The CPU templates' search spaces: BLIS-style fp32 GEMM micro-kernels for x86-64
// (templates/x86/ops_x86.h; its opening comment is the contract these mirror), one space per
// ISA level, each computing dense, batch_matmul in any layout and conv2d (NHWC, implicit GEMM).
//
// The tunables are those of dc_x86::Params. What bounds them is the core's register file, not
// any shape: MR x NR accumulators plus one row of B vectors and a broadcast must fit the 16 ymm
// (AVX2) or 32 zmm (AVX-512) registers, MC is whole MR panels and NC whole NR panels. Cache
// fit (KC x NR in L1, MC x KC in L2) is left to measurement and the cost model: a blocking
// that spills a cache level is slow, not wrong. SHARE_W = 1 packs W (the core's B) once for
// every worker and hands out blocks of C instead of a band per worker, each packing its own
// part of W (templates/x86/shared_b_x86.h); kernels of logs from before it had 0.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "space/templates.h"
#include "space/x86_space_rules.h"

namespace dietcode {

namespace {

struct IsaShape {
  const char* tmpl;
  int vector_floats;  // W
  int registers;      // R
  std::vector<int> nr;
  std::vector<int> mr;
  std::vector<std::map<std::string, int>> seeds;  // beyond the default with W shared
};

TemplateSpace make_x86_space(const IsaShape& isa) {
  TemplateSpace s;
  s.tmpl = isa.tmpl;
  s.target = Target::kCpu;
  s.tunables = {
      {"MR", isa.mr, 6, "rows of the register tile"},
      {"NR", isa.nr, isa.vector_floats == 8 ? 16 : 32, "columns of the register tile"},
      {"KC", {64, 128, 192, 256, 384, 512}, 256, "K block: one packed panel's depth"},
      {"MC", {24, 48, 72, 96, 120, 144, 168, 192, 240, 288, 336}, 72, "M block, whole MR panels"},
      {"NC", {256, 512, 768, 1024, 1536, 2048, 3072, 4096}, 3072, "N block, whole NR panels"},
      {"LOOP_ORDER", {0, 1}, 0, "0: B micro-panel outer (in L1); 1: A micro-panel outer"},
      {"THREADS_M", {0, 1, 2, 4}, 0, "row bands of the thread grid (0: chosen per shape)"},
      x86_workers_tunable(),
      {"PACK_A", {0, 1}, 1, "pack A into MR panels (0: read rows in place)"},
      {"PREFETCH", {0, 4, 8, 16}, 0, "software prefetch distance in k steps (0: none)"},
      {"UNROLL", {1, 2, 4, 8}, 4, "k-loop unroll"},
      x86_shared_b_tunable("SHARE_W", "W"),
  };
  s.chains = {{"BM", {"MC"}}, {"BN", {"NC"}}};
  s.constraints = x86_blis_core_constraints(isa.vector_floats, isa.registers, "B vectors");
  s.constraints.push_back(x86_one_worker_has_no_thread_grid());
  for (Constraint& c : x86_shared_b_constraints("SHARE_W", "W"))
    s.constraints.push_back(std::move(c));
  // The default with W shared by the workers, so that the first round times it.
  s.seeds = {{{"SHARE_W", 1}}};
  s.seeds.insert(s.seeds.end(), isa.seeds.begin(), isa.seeds.end());
  s.supports = [](const OpSpec& op) { return op.dtype == DType::kFloat32; };
  return s;
}

}  // namespace

const TemplateSpace& x86_avx2_f32_space() {
  static const TemplateSpace space =
      make_x86_space({"x86_avx2_f32", 8, 16, {8, 16, 24, 32}, {1, 2, 3, 4, 5, 6, 8, 12, 14}});
  return space;
}

const TemplateSpace& x86_avx512_f32_space() {
  // The seed: 6 rows of X broadcast against four vectors of W (24 accumulators), the register
  // tile oneDNN's AVX-512 matmul uses, in blocks that fit a Zen 4 core's 1 MiB L2 (KC 512, NC
  // 512), W's panels packed by each worker (SHARE_W 0) and read four k steps ahead. On BERT's
  // fc2 (K = 3072) from T = 16 up it ran 5-12% faster than the 8 x 32 kernel a 15-minute tune
  // had settled on, timed together in the tuner's worker (docs/results/cpu/README.md, AV); the
  // tune had timed 70 kernels of that op without reaching it.
  static const TemplateSpace space = make_x86_space(
      {"x86_avx512_f32", 16, 32, {16, 32, 48, 64}, {1, 2, 3, 4, 6, 8, 12, 14, 24, 28},
       {{{"MR", 6}, {"NR", 64}, {"KC", 512}, {"MC", 96}, {"NC", 512}, {"LOOP_ORDER", 0},
         {"PACK_A", 0}, {"PREFETCH", 4}, {"UNROLL", 1}}}});
  return space;
}

X86Form x86_form(const std::string& tmpl) {
  if (tmpl.find("_dot_") != std::string::npos) return X86Form::kDot;
  if (tmpl.find("_wbcast_") != std::string::npos) return X86Form::kWbcast;
  return X86Form::kBlis;
}

bool x86_is_avx512(const std::string& tmpl) { return tmpl.rfind("x86_avx512", 0) == 0; }

std::string x86_isa_level(const std::string& tmpl) {
  return x86_is_avx512(tmpl) ? "x86-64-v4" : "x86-64-v3";
}

}  // namespace dietcode
