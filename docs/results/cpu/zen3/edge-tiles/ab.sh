#!/bin/bash
# Alternate two packs, bench each in turn: ab.sh TAG1 LIB1 TAG2 LIB2 ROUNDS (files TAG.ROUND.*).
set -u
for r in $(seq 1 $5); do
  for p in "$1:$2" "$3:$4"; do
    t=${p%%:*}; l=${p#*:}
    s=$(date -u +%H:%M:%S)
    DIETCODE_CPU_BIND=1 OMP_PROC_BIND=close OMP_PLACES=cores /work/main/build/dietcode bench $l --arch x86-64-v3 --threads 2 ${BENCH_ARGS:-} --csv $t.$r.csv --json $t.$r.json > $t.$r.txt 2>&1
    echo "$t.$r $s-$(date -u +%H:%M:%S) $(grep -E 'speedup over|worst instance|FMA peak' $t.$r.txt | sed 's/weighted geometric-mean speedup over //' | cut -c1-70 | tr '\n' ' ')"
  done
done
