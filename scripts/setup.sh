#!/usr/bin/env bash
# Installs the Debian packages dietcode builds against, when they are missing.
# Idempotent: a machine that already has them is left untouched. Runs as root or via sudo.
# The CUDA 13 toolkit (NVRTC, headers) is expected in its standard location; it is not a
# Debian package and is not installed here.
#
#   scripts/setup.sh           install what is missing
#   scripts/setup.sh --check   exit 0 if nothing is missing, 1 otherwise; installs nothing
#
# With an offline bundle in use (DIETCODE_OFFLINE_PREFIX, set by .bundle/env.sh; see
# docs/offline-gpu-hosts.md) nothing is installed: the bundle holds the libraries, and only
# the tools it cannot hold are checked.
set -euo pipefail

check_only=0
[[ ${1:-} == --check ]] && check_only=1

packages=(
  cmake ninja-build g++ pkg-config
  nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libfmt-dev
  libxgboost-dev libdmlc-dev zlib1g-dev
  binutils
  libdnnl2 libopenblas0-openmp
  libonnx-dev libprotobuf-dev
)

check_cuda() {
  if ! command -v nvcc >/dev/null 2>&1 && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
    echo "setup: the CUDA toolkit (NVRTC) was not found in /usr/local/cuda; install CUDA 13" >&2
    exit 2
  fi
}

if [[ -n ${DIETCODE_OFFLINE_PREFIX:-} ]]; then
  if [[ ! -d $DIETCODE_OFFLINE_PREFIX/include/xgboost ]]; then
    echo "setup: DIETCODE_OFFLINE_PREFIX=$DIETCODE_OFFLINE_PREFIX holds no bundle" \
      "(expected include/xgboost); rerun scripts/bundle-deps.sh" >&2
    exit 2
  fi
  for tool in cmake ninja g++ readelf; do
    command -v "$tool" >/dev/null 2>&1 || {
      echo "setup: $tool is missing, and the offline bundle does not provide it" >&2
      exit 2
    }
  done
  check_cuda
  ((check_only)) || echo "setup: using the offline bundle at $DIETCODE_OFFLINE_PREFIX; nothing to install"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((check_only)); then
  ((${#missing[@]} == 0)) || {
    echo "setup: missing ${missing[*]}"
    exit 1
  }
  exit 0
fi

if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

check_cuda
