#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test layer. GPU-labelled tests skip
# themselves on a machine without a GPU. Extra arguments go to ctest (e.g. -L unit).
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
jobs=${JOBS:-$(nproc)}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${DIETCODE_CMAKE_ARGS:-}
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@"
