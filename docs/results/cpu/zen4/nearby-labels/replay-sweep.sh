#!/bin/bash
# Run from the repository root: bash docs/results/cpu/zen4/nearby-labels/replay-sweep.sh "0 1" "0.3 0.3"
# For each BERT-base CPU log in configs/tuned and each "bandwidth prior-weight" setting: the
# held-out-shapes Spearman of qkv, proj, fc1, fc2 (cost_model_replay, 3 seeds) and their mean.
W=configs/workloads/bert_base_dense_cpu.json
settings=("$@")
for lg in configs/tuned/cpu-*/bert_dense_cpu*.jsonl.gz; do
  for b in "${settings[@]}"; do read bw pw extra <<< "$b"
    build/tests/x86/cost_model_replay $lg $W --seeds 3 --templates 0 --bandwidth $bw --prior-weight $pw $extra 2>&1 | tail -4 | awk -v lg=$(basename $(dirname $lg))/$(basename $lg .jsonl.gz) -v b="$bw/$pw" '{s+=$8; l=l" "$8} END {printf "%-50s %-8s %s  mean %.3f\n", lg, b, l, s/NR}'
  done
done
