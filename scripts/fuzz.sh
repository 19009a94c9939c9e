#!/usr/bin/env bash
# Build every libFuzzer target (tests/fuzz/*.cmake) with clang and run each for SECONDS on
# its seed corpus (tests/fuzz/corpus/<name>/). Usage: scripts/fuzz.sh [BUILD_DIR [SECONDS]]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-fuzz}
seconds=${2:-60}
CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMSHIM_FUZZ=ON \
    -DMEMSHIM_WITH_TESTS=ON >/dev/null
targets=$(cd tests/fuzz && ls fuzz_*.c 2>/dev/null | sed 's/\.c$//')
[ -n "$targets" ] || { echo "fuzz: no targets"; exit 0; }
# shellcheck disable=SC2086
cmake --build "$build" -j"$(nproc)" --target $targets
fail=0
for t in $targets; do
    corpus="tests/fuzz/corpus/${t#fuzz_}"
    work=$(mktemp -d)
    mkdir -p "$work/corpus"
    [ -d "$corpus" ] && cp -r "$corpus"/. "$work/corpus"/
    echo "fuzz: $t for ${seconds}s"
    rc=0
    "$build/tests/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$work/" "$work/corpus" >"$work/log" 2>&1 || rc=$?
    grep -E "^(Done|stat::number_of_executed_units)" "$work/log" || true
    if [ "$rc" -ne 0 ]; then
        echo "fuzz: $t failed (exit $rc); last lines and failing inputs:"
        tail -n 40 "$work/log"
        ls -l "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* 2>/dev/null || true
        fail=1
    fi
    rm -rf "$work"
done
exit "$fail"
