#!/usr/bin/env bash
# The main job on the shipped BERT-base workload: build dietcode, then validate the workload.
set -euo pipefail
cd "$(dirname "$0")/.."

# A GPU host without a package registry builds against the offline bundle, when one was
# copied here and the packages are not installed (docs/offline-gpu-hosts.md).
if [[ -z ${DIETCODE_OFFLINE_PREFIX:-} && -f .bundle/env.sh ]] && ! bash scripts/setup.sh --check >/dev/null 2>&1; then
  echo "using the offline bundle in .bundle"
  source .bundle/env.sh
fi
bash scripts/setup.sh
build=${DIETCODE_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" --target dietcode
dietcode="$build/dietcode"
workload=configs/workloads/bert_base_dense.json

echo "== dietcode validate $workload"
"$dietcode" validate "$workload"
