#!/usr/bin/env bash
# S's AVX2 pack built with the runtime of 2b3519c (placement follows the caller in both modes):
# bound, unbound, bound.
set -u
B=${DIETCODE:-build/dietcode}
run() {  # name lib env...
  local name=$1 lib=$2; shift 2
  date -u +%H:%M:%S > $OUTDIR/$name.time
  env "$@" $B bench $lib --arch x86-64-v3 --threads 2 --csv $OUTDIR/$name.csv --json $OUTDIR/$name.json > $OUTDIR/$name.txt 2>&1
  date -u +%H:%M:%S >> $OUTDIR/$name.time
}
run follow-bound.1 /tmp/pool_v2_keep.so DIETCODE_CPU_BIND=1 OMP_PROC_BIND=close OMP_PLACES=cores
run follow-unbound.1 /tmp/pool_v2_keep.so -u DIETCODE_CPU_BIND -u OMP_PROC_BIND -u OMP_PLACES
run follow-bound.2 /tmp/pool_v2_keep.so DIETCODE_CPU_BIND=1 OMP_PROC_BIND=close OMP_PLACES=cores
