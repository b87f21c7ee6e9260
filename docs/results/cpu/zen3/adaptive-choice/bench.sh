#!/bin/bash
# A/B of section AL (docs/results/cpu/README.md): the same pack with its adaptive choice on and
# off, benched alternately. DIR/libalt.so was built with adaptive-choice.patch applied:
#   dietcode build configs/workloads/bert_base_dense_cpu.json \
#     --log bert_dense_cpu_avx2_runoff3.jsonl.gz --target cpu --arch x86-64-v3 --alternates 5 \
#     -o DIR/libalt.so
# The second pair of runs added --warmup 17 to bench (files w*), so that every timed run came
# after the shape's 16 trial launches. Nothing else ran on the cores.
cd /work/main
export DIETCODE_CPU_BIND=1 OMP_PROC_BIND=close OMP_PLACES=cores
for run in $(seq 1 ${RUNS:-2}); do
  for p in on off; do
    if [ $p = off ]; then export DIETCODE_CPU_ADAPT=0; else unset DIETCODE_CPU_ADAPT; fi
    date -u +"%H:%M:%S start $p.$run" >> DIR/times.txt
    build/dietcode bench DIR/libalt.so --arch x86-64-v3 --threads 2 --csv DIR/$p.$run.csv --json DIR/$p.$run.json > DIR/$p.$run.txt 2>&1
  done
done
date -u +"%H:%M:%S done" >> DIR/times.txt
