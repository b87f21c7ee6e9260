#!/bin/bash
# Packs s/libs.so (the fresh tune with SHARE_W in the space) and n/libn.so (AO's tune, the
# templates of AP), benched in turn, bound: ./ab.sh 1 2. DIETCODE: the dietcode binary;
# PACKS: the packs' tags; ARCH: the ISA level every contender is held to (x86-64-v3 unless
# set; ARCH= leaves each at the host's own).
DIETCODE=${DIETCODE:-dietcode}
ARCH=${ARCH-x86-64-v3}
for r in "$@"; do
  for p in ${PACKS:-s n}; do
    DIETCODE_CPU_BIND=1 OMP_PROC_BIND=close OMP_PLACES=cores "$DIETCODE" bench $p/lib$p.so \
      ${ARCH:+--arch $ARCH} --threads 2 --csv whole.$p.$r.csv > whole.$p.$r.txt 2>&1
    echo "$p run $r $(date +%T): $(grep -E '^weighted.*oneDNN' whole.$p.$r.txt | cut -c1-80)"
  done
done
