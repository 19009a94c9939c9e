#!/usr/bin/env bash
# Install the Debian packages memshim needs (when missing), then configure and build.
# Usage: scripts/setup.sh [BUILD_DIR [extra cmake args...]]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true

need=()
# libdw-dev: file:line of native frames in memshim-analyze (the shim does not use it).
# libzstd-dev: simcuda (tests only) reads kernel parameter layouts from compressed cubins.
for pkg in build-essential cmake pkg-config uthash-dev libunwind-dev libcriterion-dev libdw-dev \
    libzstd-dev python3; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "memshim setup: installing ${need[*]}" >&2
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo_cmd apt-get update -qq
    $sudo_cmd apt-get install -y -qq "${need[@]}"
fi
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH="/usr/local/cuda/bin:$PATH"
fi

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
