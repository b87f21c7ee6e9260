#!/usr/bin/env bash
# The main job on the shipped BERT-base workload:
#   validate -> tune -> build the kernel pack -> run the C example against it -> bench.
# On a GPU host it tunes configs/workloads/bert_base_dense.json on the GPU. Without a GPU it
# tunes BERT-base dense on this machine's CPU for real (configs/workloads/bert_base_dense_cpu.json,
# every 8th T; DEMO_CPU_BUDGET of wall time, 4 minutes by default), builds a CPU pack, runs the C
# example on it and benches it against oneDNN and OpenBLAS on the same cores.
# DEMO_SIMULATE=1 instead tunes against the simulated device -- a model of an H100, a test
# double whose numbers are not measurements -- and labels the pack so.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -f .bundle/env.sh ]] && ! bash scripts/setup.sh --check >/dev/null 2>&1; then
  # shellcheck disable=SC1091
  source .bundle/env.sh
fi
bash scripts/setup.sh
build=${DIETCODE_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" --target dietcode
dietcode="$PWD/$build/dietcode"
workload=configs/workloads/bert_base_dense.json
out=${DEMO_OUT:-$build/demo}
mkdir -p "$out"

step() { printf '\n== %s\n' "$*"; }

step "dietcode validate $workload"
"$dietcode" validate "$workload"

log="$out/bert_base_dense.jsonl"
build_flags=()
target=gpu
if "$dietcode" devices -q >/dev/null 2>&1; then
  gpu=$("$dietcode" devices --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["devices"][0]["name"])' 2>/dev/null || echo "")
  shipped=$(ls configs/tuned/*/bert_base_dense.jsonl 2>/dev/null | head -n 1 || true)
  step "dietcode tune $workload on the GPU ($gpu)"
  "$dietcode" tune "$workload" -o "$log" --trials "${DEMO_TRIALS:-48}"
  [[ -n "$shipped" ]] && echo "(logs measured earlier on real GPUs are in configs/tuned/)"
elif [[ "${DEMO_SIMULATE:-0}" == 1 ]]; then
  step "no GPU here: dietcode tune $workload --simulate h100 (a model of an H100, not a measurement)"
  "$dietcode" tune "$workload" -o "$log" --simulate h100 --trials "${DEMO_TRIALS:-12}"
  build_flags+=(--allow-simulated)
else
  target=cpu
  workload=configs/workloads/bert_base_dense_cpu.json
  log="$out/bert_base_dense_cpu.jsonl"
  budget=${DEMO_CPU_BUDGET:-4m}
  step "no GPU here: dietcode tune $workload --target cpu --time-budget $budget (measured on this CPU)"
  "$dietcode" tune "$workload" -o "$log" --target cpu --time-budget "$budget"
fi

step "dietcode build $workload --log $log"
"$dietcode" build "$workload" --log "$log" -o "$out/libbert_dense.so" "${build_flags[@]}"

step "dietcode inspect $out/libbert_dense.so --shape T=37"
"$dietcode" inspect "$out/libbert_dense.so" --shape T=37

step "examples/c/run_pack against the pack"
make -s -C examples/c run_pack CC="${CC:-cc}" >/dev/null
set +e
examples/c/run_pack "$out/libbert_dense.so" qkv T=37
status=$?
set -e
# 77: the example ran and found no GPU to launch on (expected on a machine without one).
[[ $status -eq 0 || $status -eq 77 ]] || exit $status

if [[ $target == cpu ]]; then
  # Every contender's threads bound to CPUs (the pack's pool and the baselines' OpenMP team):
  # on a busy host, threads the scheduler moves make small shapes noisy (docs/cpu-target.md).
  step "dietcode bench $out/libbert_dense.so --shapes T=1,32,64,96,128 (against oneDNN and OpenBLAS, threads bound)"
  DIETCODE_CPU_BIND=1 OMP_PROC_BIND=close OMP_PLACES=cores \
    "$dietcode" bench "$out/libbert_dense.so" --shapes T=1,32,64,96,128 --repeats 5 \
    --plot "$out/bench.svg"
fi
echo
echo "demo done: pack in $out/libbert_dense.so, header in $out/bert_dense.h"
