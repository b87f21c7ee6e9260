#!/usr/bin/env bash
# Installs the Debian packages dietcode builds against, when they are missing.
# Idempotent: a machine that already has them is left untouched. Runs as root or via sudo.
# The CUDA 13 toolkit (NVRTC, headers) is expected in its standard location; it is not a
# Debian package and is not installed here.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libfmt-dev
  libxgboost-dev libdmlc-dev
  binutils
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v nvcc >/dev/null 2>&1 && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "setup: the CUDA toolkit (NVRTC) was not found in /usr/local/cuda; install CUDA 13" >&2
  exit 2
fi
