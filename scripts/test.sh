#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test layer. GPU-labelled tests skip
# themselves on a machine without a GPU. Extra arguments go to ctest (e.g. -L unit).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
build=${DIETCODE_BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${DIETCODE_CMAKE_ARGS:-}
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@"
