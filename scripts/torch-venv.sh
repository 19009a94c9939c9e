#!/usr/bin/env bash
# Installs the PyTorch wheel the torch tests run on simcuda (torch==2.15.0 for CUDA 13.2 with its
# nvidia-* wheels, about 5.4 GB), and pandas for the tests that load memshim's outputs in it,
# into a virtual environment, .venv-torch at the top of the checkout unless a directory is
# given. Does nothing when both are already there.
# Usage: scripts/torch-venv.sh [VENV_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-$root/.venv-torch}
version=${MEMSHIM_TORCH_VERSION:-2.15.0}

installed() {
    "$venv/bin/python" - "$version" <<'PY' 2>/dev/null
import sys
import pandas  # the referee of the CSV and viewer tests
import torch
sys.exit(0 if torch.__version__.split("+")[0] == sys.argv[1] and torch.version.cuda else 1)
PY
}

if installed; then
    echo "torch-venv: $venv has torch $version"
    exit 0
fi
if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    echo "torch-venv: installing python3-venv" >&2
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo_cmd apt-get update -qq
    $sudo_cmd apt-get install -y -qq python3-venv
fi
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
echo "torch-venv: installing torch==$version and pandas into $venv (several GB, once)" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "torch==$version" pandas
installed || { echo "torch-venv: torch $version with CUDA or pandas does not import from $venv" >&2; exit 1; }
echo "torch-venv: $venv has torch $version"
