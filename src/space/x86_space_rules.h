// Rules the x86 template spaces share (x86_gemm_space.cc, x86_dot_space.cc,
// x86_wbcast_space.cc), so a form added beside them states only what is its own.
#pragma once

#include <string>
#include <vector>

#include "space/template_space.h"

namespace dietcode {

// The BLIS core's register tile (templates/x86/register_tile_x86.h), in the frame the core
// computes: MR x NR/W accumulators, NR/W vectors of the packed operand (named by
// `packed_vectors`, as in "B vectors") and one broadcast fit the `registers` vector registers of
// W = `vector_floats` lanes; MC is whole MR panels and NC whole NR panels.
std::vector<Constraint> x86_blis_core_constraints(int vector_floats, int registers,
                                                  const std::string& packed_vectors);

// How many of the runtime's workers a kernel runs on (templates/x86/gemm_x86.h,
// kernel_workers): all, or one alone, the caller, so that no pool thread is woken. Waking one
// costs tens of microseconds on a virtual machine, as much as a small kernel's whole work;
// where that pays is the host's to say, so it is measured like any tunable. The tunable goes
// right after THREADS_M, which it constrains.
Tunable x86_workers_tunable();
// A kernel on one worker has no thread grid: THREADS_M = 0 then (its other values would be
// the same kernel again).
Constraint x86_one_worker_has_no_thread_grid();
// SHARE_B (templates/x86/shared_b_x86.h), named `name` in a form's space (SHARE_W in the
// BLIS form's, SHARE_X in the W-broadcast form's): its B packed once by all workers, blocks
// handed out. 0, the default, is what kernels logged before it ran, since a log's kernel is
// completed with the space's defaults; seeds bring 1 in. Its rules: no thread bands with it
// (THREADS_M would be the same kernel again), and none of it on one worker.
Tunable x86_shared_b_tunable(const std::string& name, const std::string& operand);
std::vector<Constraint> x86_shared_b_constraints(const std::string& name,
                                                 const std::string& operand);
// The threads a kernel of `mk` runs on when the runtime has `threads` (kernel_workers' rule;
// kernels logged before WORKERS existed ran on all of them).
int x86_kernel_workers(const MicroKernel& mk, int threads);

// The ops whose A is [M][K] and B is [N][K] in fp32 — dense with W [N,K] and batch_matmul
// with transpose_b alone — which the forms that read B's K-contiguous rows in place compute.
bool x86_b_rows_are_k_contiguous(const OpSpec& op);

}  // namespace dietcode
