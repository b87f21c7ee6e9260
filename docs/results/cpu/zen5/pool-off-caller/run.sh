#!/usr/bin/env bash
# S's AVX2 pack built with the runtime of 35d4094 (old) and of 8c99d74 (new), benched
# alternately with no binding in the environment (a user's default), then the new one bound.
set -u
B=${DIETCODE:-build/dietcode}
run() {  # name lib env...
  local name=$1 lib=$2; shift 2
  date -u +%H:%M:%S > $OUTDIR/$name.time
  env "$@" $B bench $lib --arch x86-64-v3 --threads 2 --csv $OUTDIR/$name.csv --json $OUTDIR/$name.json > $OUTDIR/$name.txt 2>&1
  date -u +%H:%M:%S >> $OUTDIR/$name.time
}
for round in 1 2; do
  run old-unbound.$round /tmp/pool_old.so -u DIETCODE_CPU_BIND -u OMP_PROC_BIND -u OMP_PLACES
  run new-unbound.$round /tmp/pool_new.so -u DIETCODE_CPU_BIND -u OMP_PROC_BIND -u OMP_PLACES
done
run new-bound.1 /tmp/pool_new.so DIETCODE_CPU_BIND=1 OMP_PROC_BIND=close OMP_PLACES=cores
