#!/bin/bash
# Packs a/liba.so (a log as tuned) and b/libb.so (the same log through share_x_log.py) benched
# in turn, bound, one run each per argument: ./ab.sh 2 3. DIETCODE: the dietcode binary.
DIETCODE=${DIETCODE:-dietcode}
for r in "$@"; do
  for p in a b; do
    DIETCODE_CPU_BIND=1 OMP_PROC_BIND=close OMP_PLACES=cores "$DIETCODE" bench $p/lib$p.so \
      --arch x86-64-v3 --threads 2 --csv whole.$p.$r.csv > whole.$p.$r.txt 2>&1
    echo "$p run $r $(date +%T): $(grep -E '^weighted.*oneDNN' whole.$p.$r.txt | cut -c1-80)"
  done
done
