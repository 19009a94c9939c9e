#!/usr/bin/env bash
# Quick start: set up and build, then train the example MLP on the simulated GPU
# (tests/simcuda) under libmemshim, and print what the trace says.
# Usage: scripts/demo.sh [extra mlp-train-sim arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build

out=${MEMSHIM_DEMO_DIR:-out/demo}
mkdir -p "$out"
rm -f "$out"/run-*.mst
export LD_LIBRARY_PATH="$PWD/build/simcuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SIMCUDA_STATS="$out/simcuda-stats.json"

echo "== training on simcuda under libmemshim (trace: $out/run-<pid>.mst)"
LD_PRELOAD="$PWD/build/lib/libmemshim.so" MEMSHIM_TRACE="$out/run-%p.mst" \
    build/bin/mlp-train-sim --steps 12 "$@"

trace=$(ls -t "$out"/run-*.mst | head -n 1)
echo
echo "== memshim-analyze summary $trace"
build/bin/memshim-analyze summary "$trace"
build/bin/memshim-analyze timeline "$trace" -o "$out/timeline.svg"
build/bin/memshim-analyze timeline "$trace" -o "$out/timeline.html"
echo
echo "timeline: $out/timeline.svg (and .html); simulated device stats: $SIMCUDA_STATS"
