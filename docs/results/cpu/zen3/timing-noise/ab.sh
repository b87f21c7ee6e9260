#!/bin/bash
# Packs benched in turn, bound, one run each per argument: PACKS="n z" ./ab.sh 1 2 (runs 1, 2),
# PACKS="d z n" ./ab.sh 3 4 (runs 3, 4). Pack p is p/libp.so; DIETCODE: the dietcode binary.
DIETCODE=${DIETCODE:-dietcode}
for r in "$@"; do
  for p in ${PACKS:-n z}; do
    DIETCODE_CPU_BIND=1 OMP_PROC_BIND=close OMP_PLACES=cores "$DIETCODE" bench $p/lib$p.so \
      --arch x86-64-v3 --threads 2 --csv whole.$p.$r.csv > whole.$p.$r.txt 2>&1
    echo "$p run $r $(date +%T): $(grep -E '^weighted.*oneDNN' whole.$p.$r.txt | cut -c1-100)"
  done
done
