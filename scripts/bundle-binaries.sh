#!/usr/bin/env bash
# A prebuilt dietcode for a GPU host: a Release build of the CLI, the shared libraries it links
# that a CUDA host need not have (XGBoost and libdmlc, fmt, ONNX and protobuf, libgomp), the
# templates and configs it reads at run time, and the C example that runs a pack, in one
# folder that works wherever it is copied.
#
#   scripts/bundle-binaries.sh [--from BIN] [--with-tests | --tests-from BIN] [DIR]
#                                                          DIR defaults to .bundle-bin
#
# --from BIN bundles a dietcode binary already built (any build type) instead of making a
# Release build in build-release/ (DIETCODE_BUILD_DIR).
# --with-tests adds the kernel families' GPU tests (tests/gpu, one executable: ~6 MB) and
# DIR/run-gpu-tests FILTER, which runs those whose name matches a GoogleTest filter; then
# `gpu-run.sh --prebuilt DIR --stage test` checks every kernel family without a build.
# --tests-from BIN bundles a gpu_kernel_tests already built instead.
#
# Why: a GPU reservation of 15 minutes should not spend four of them compiling, and some GPU
# hosts have the driver and the CUDA libraries but no compiler at all. Build on a host whose
# glibc is no newer than the GPU host's (docs/results/h200 ran a Debian 12 build, glibc 2.36,
# on Ubuntu 24.04, glibc 2.39), then copy DIR over and run
#
#   DIR/dietcode devices
#   scripts/gpu-run.sh --prebuilt DIR --stage tune      (and --stage bench)
#
# DIR/dietcode is a wrapper that points the loader at DIR/lib and dietcode at DIR/share's
# templates. The driver and cuBLAS (opened at run time) and NVRTC (linked) come from the GPU
# host, as they do for a build made there. The GPU tests of the measurer and of bench are not
# bundled (they read the source tree): those need a build.
set -euo pipefail
from=""
with_tests=0
tests_from=""
out=.bundle-bin
while (($#)); do
  case $1 in
    --from) from=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift ;;
    --with-tests) with_tests=1 ;;
    --tests-from) tests_from=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift ;;
    -*) echo "bundle-binaries: unknown option $1" >&2; exit 1 ;;
    *) out=$1 ;;
  esac
  shift
done
cd "$(dirname "$0")/.." || exit 1
build=${DIETCODE_BUILD_DIR:-build-release}
jobs=${JOBS:-$(nproc)}

if [[ -z $from ]] || ((with_tests)); then
  # The offline bundle of build dependencies, when this host lacks them (offline-gpu-hosts.md).
  if [[ -z ${DIETCODE_OFFLINE_PREFIX:-} && -f .bundle/env.sh ]] &&
    ! bash scripts/setup.sh --check >/dev/null 2>&1; then
    # shellcheck source=/dev/null
    source .bundle/env.sh
  fi
  tests=OFF
  ((with_tests)) && tests=ON
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDIETCODE_BUILD_TESTS=$tests >/dev/null
fi
if [[ -z $from ]]; then
  cmake --build "$build" -j "$jobs" --target dietcode
  from=$build/dietcode
fi
[[ -x $from ]] || { echo "bundle-binaries: no dietcode binary at $from" >&2; exit 1; }
if ((with_tests)); then
  cmake --build "$build" -j "$jobs" --target gpu_kernel_tests
  tests_from=$build/tests/gpu_kernel_tests
fi
[[ -z $tests_from || -x $tests_from ]] || {
  echo "bundle-binaries: no gpu_kernel_tests binary at $tests_from" >&2
  exit 1
}

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/share/dietcode"
out=$(cd "$out" && pwd)
cp "$from" "$out/bin/dietcode"
strip "$out/bin/dietcode"
binaries=("$out/bin/dietcode")
if [[ -n $tests_from ]]; then
  cp "$tests_from" "$out/bin/gpu_kernel_tests"
  strip "$out/bin/gpu_kernel_tests"
  binaries+=("$out/bin/gpu_kernel_tests")
fi

# Every library the loader resolves for it, less what every Linux host with a C++ runtime has
# and what the GPU host's CUDA toolkit has (NVRTC: the wrapper adds the toolkit's lib64 to the
# loader's path). libgomp comes along: a host with the driver but no compiler may lack it.
host_has='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libz|libstdc\+\+|libgcc_s|libnvrtc|libnvJitLink|libcudart|libcublas)\.so'
for binary in "${binaries[@]}"; do
  while read -r name _ path _; do
    [[ $path == /* ]] || continue
    [[ $name =~ $host_has ]] && continue
    cp -L "$path" "$out/lib/$name"
  done < <(ldd "$binary")
  if ldd "$binary" | grep -q 'not found'; then
    echo "bundle-binaries: the loader cannot resolve every library of $binary:" >&2
    ldd "$binary" | grep 'not found' >&2
    exit 1
  fi
done

# What dietcode reads at run time; configs/tuned (logs, tens of MB) stays with the repository,
# where the commands that read a log name it.
tar -cf - --exclude=configs/tuned templates configs | tar -xf - -C "$out/share/dietcode"
cc -O2 -o "$out/bin/run_pack" examples/c/run_pack.c -ldl -lm

cat >"$out/dietcode" <<'EOF'
#!/bin/sh
# dietcode from this folder: its libraries, its templates (DIETCODE_DATA_DIR wins if set), and
# NVRTC from the CUDA toolkit (CUDA_HOME, else /usr/local/cuda) when the loader would not find it.
here=$(cd "$(dirname "$0")" && pwd)
cuda_lib="${CUDA_HOME:-/usr/local/cuda}/lib64"
[ -d "$cuda_lib" ] || cuda_lib=
LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}${cuda_lib:+:$cuda_lib}" \
DIETCODE_DATA_DIR="${DIETCODE_DATA_DIR:-$here/share/dietcode}" \
  exec "$here/bin/dietcode" "$@"
EOF
chmod +x "$out/dietcode"

if [[ -n $tests_from ]]; then
  cat >"$out/run-gpu-tests" <<'EOF'
#!/bin/sh
# run-gpu-tests FILTER [ARGS...]: the bundled GPU tests whose name matches the GoogleTest
# filter (DenseTcGpu.Sampled*), in the environment the wrapper gives dietcode. Exit 3 when no
# bundled test matches, so a caller can tell "not bundled" from "passed".
here=$(cd "$(dirname "$0")" && pwd)
filter=$1
shift
cuda_lib="${CUDA_HOME:-/usr/local/cuda}/lib64"
[ -d "$cuda_lib" ] || cuda_lib=
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}${cuda_lib:+:$cuda_lib}"
export DIETCODE_DATA_DIR="${DIETCODE_DATA_DIR:-$here/share/dietcode}"
tests="$here/bin/gpu_kernel_tests"
if ! "$tests" --gtest_list_tests --gtest_filter="$filter" | grep -q '^  '; then
  echo "run-gpu-tests: no bundled test matches $filter"
  exit 3
fi
exec "$tests" --gtest_filter="$filter" "$@"
EOF
  chmod +x "$out/run-gpu-tests"
fi

# The check a GPU host would make first: it starts, with nothing from this build folder.
(cd / && env -u LD_LIBRARY_PATH "$out/dietcode" --version >/dev/null) || {
  echo "bundle-binaries: $out/dietcode does not start" >&2
  exit 1
}
if [[ -n $tests_from ]]; then
  (cd / && env -u LD_LIBRARY_PATH "$out/run-gpu-tests" 'CudaHandles.*' >/dev/null) || {
    echo "bundle-binaries: $out/run-gpu-tests does not start" >&2
    exit 1
  }
fi
echo "bundle-binaries: wrote $out ($(du -sh "$out" | cut -f1)): $(ls "$out/lib" | tr '\n' ' ')"
