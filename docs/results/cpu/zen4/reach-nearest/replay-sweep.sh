#!/bin/bash
# Run from the repository root: bash docs/results/cpu/zen4/reach-nearest/replay-sweep.sh
# held-out-shapes Spearman per log for reach-nearest 0 and 1 (3 seeds, as AV's sweep)
W=configs/workloads/bert_base_dense_cpu.json
for lg in configs/tuned/cpu-*/bert_dense_cpu*.jsonl.gz; do
  for rn in 0 1; do
    build/tests/x86/cost_model_replay $lg $W --seeds 3 --templates 0 --reach-nearest $rn 2>&1 | tail -4 | awk -v lg=$(basename $(dirname $lg))/$(basename $lg .jsonl.gz) -v b="reach$rn" '{s+=$8; l=l" "$8} END {printf "%-50s %-8s %s  mean %.3f\n", lg, b, l, s/NR}'
  done
done
