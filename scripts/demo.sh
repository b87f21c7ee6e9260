#!/usr/bin/env bash
# The main job on the shipped BERT-base workload (configs/workloads/bert_base_dense.json):
#   validate -> tune -> build the kernel pack -> run the C example against it.
# On a GPU host it tunes on the GPU (or uses a shipped log measured on the same GPU). Without a
# GPU it tunes against the simulated device -- a model of an H100, a test double whose numbers
# are not measurements -- so the whole pipeline still runs; the pack it builds is labelled so.
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
if "$dietcode" devices -q >/dev/null 2>&1; then
  gpu=$("$dietcode" devices --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["devices"][0]["name"])' 2>/dev/null || echo "")
  shipped=$(ls configs/tuned/*/bert_base_dense.jsonl 2>/dev/null | head -n 1 || true)
  step "dietcode tune $workload on the GPU ($gpu)"
  "$dietcode" tune "$workload" -o "$log" --trials "${DEMO_TRIALS:-48}"
  [[ -n "$shipped" ]] && echo "(logs measured earlier on real GPUs are in configs/tuned/)"
else
  step "no GPU here: dietcode tune $workload --simulate h100 (a model of an H100, not a measurement)"
  "$dietcode" tune "$workload" -o "$log" --simulate h100 --trials "${DEMO_TRIALS:-12}"
  build_flags+=(--allow-simulated)
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
echo
echo "demo done: pack in $out/libbert_dense.so, header in $out/bert_dense.h"
