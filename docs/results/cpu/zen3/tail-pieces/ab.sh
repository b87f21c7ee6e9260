#!/bin/bash
# Packs o/libo.so (templates of 71936ae) and n/libn.so (this commit's: SHARE_X's last blocks in
# pieces), built from the same log, benched in turn, bound: ./ab.sh 1 2. DIETCODE: the binary.
DIETCODE=${DIETCODE:-dietcode}
for r in "$@"; do
  for p in o n; do
    DIETCODE_CPU_BIND=1 OMP_PROC_BIND=close OMP_PLACES=cores "$DIETCODE" bench $p/lib$p.so \
      --arch x86-64-v3 --threads 2 --csv whole.$p.$r.csv > whole.$p.$r.txt 2>&1
    echo "$p run $r $(date +%T): $(grep -E '^weighted.*oneDNN' whole.$p.$r.txt | cut -c1-80)"
  done
done
