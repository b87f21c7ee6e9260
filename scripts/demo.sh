#!/usr/bin/env bash
# The main job on the shipped BERT-base workload: build dietcode, then validate the workload.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
build=${DIETCODE_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" --target dietcode
dietcode="$build/dietcode"
workload=configs/workloads/bert_base_dense.json

echo "== dietcode validate $workload"
"$dietcode" validate "$workload"
