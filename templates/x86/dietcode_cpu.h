/* The plain-C runtime contract of every dietcode CPU (x86-64) kernel, shared by the kernel
 * templates (templates/x86/ops_x86.h), the tuner's CPU measurer and the loader runtime of a
 * kernel pack (the thread pool, src/x86/cpu_thread_pool.h).
 *
 * Includes dietcode_args.h by a path relative to this file, so it works with any -I (the
 * templates directory, the repository root, or none at all).
 *
 * A kernel gets the problem (DietcodeArgs) and a runtime: the number of workers and a
 * parallel_for over them. The kernel never creates threads itself; it cuts its work into tasks
 * and hands them to rt->parallel_for, whose return is a barrier. Worker ids index per-worker
 * state; two tasks running at once always have different worker ids. */
#ifndef DIETCODE_CPU_H_
#define DIETCODE_CPU_H_

#include "../dietcode_args.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*DietcodeCpuTask)(void* ctx, int task, int worker);

typedef struct DietcodeCpuRuntime {
  int threads; /* workers; worker ids passed to tasks are in [0, threads) */
  void* pool;
  /* Runs task(ctx, i, worker) for every i in [0, n_tasks) on the pool's workers (the caller is
   * one of them) and returns when all are done. */
  void (*parallel_for)(void* pool, int n_tasks, DietcodeCpuTask task, void* ctx);
} DietcodeCpuRuntime;

/* Every generated CPU kernel has this signature; returns 0, or nonzero when it cannot run
 * (scratch allocation failed, or a static dimension disagrees with args). */
typedef int (*DietcodeCpuKernelFn)(const DietcodeArgs* args, const DietcodeCpuRuntime* rt);

#ifdef __cplusplus
}
#endif

#endif /* DIETCODE_CPU_H_ */
