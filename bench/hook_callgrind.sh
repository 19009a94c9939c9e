#!/bin/sh
# Instructions the shim adds to a cudaMalloc+cudaFree pair through the hooks (simcuda), counted
# by callgrind inside bench_hook's runtime loop: bare, then under the shim in each setting, at
# several numbers of live allocations. Stable where timings are not; prints, asserts nothing.
#
#     bench/hook_callgrind.sh BUILD_DIR [pairs] [live counts...]
set -eu
build=${1:?usage: hook_callgrind.sh BUILD_DIR [pairs] [live...]}
pairs=${2:-2000}
if [ $# -ge 2 ]; then shift 2; else shift $#; fi # dash exits on a failed shift
lives=${*:-0 1000 4000}
bench=$build/bin/bench_hook
shim=${BENCH_SHIM:-$build/lib/libmemshim.so} # BENCH_SHIM: another build of the shim
sim=$build/simcuda
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Counted: `pairs` rounded up to batches of 500. bench_hook's warm-up pairs (the first through
# the measured call site: interning a new stack is paid once per site) switch the count off
# with callgrind's client request (valgrind/callgrind.h, which valgrind's package installs).
calls=$(((pairs + 499) / 500 * 500))

# Ir inside runtime_pairs for one child run; $1: LD_PRELOAD ("" for none), then env settings.
count() {
    pre=$1
    shift
    env BENCH_HOOK_CHILD=1 LD_LIBRARY_PATH="$sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        ${pre:+LD_PRELOAD=$pre} "$@" \
        valgrind --tool=callgrind --toggle-collect=runtime_pairs \
        --callgrind-out-file="$tmp/cg.out" "$bench" "$shim" "$pairs" >/dev/null 2>"$tmp/vg.err" ||
        { cat "$tmp/vg.err" >&2; exit 1; }
    sed -n 's/^summary: *//p' "$tmp/cg.out"
}

printf '%-28s %6s %12s %10s\n' setting live "Ir/pair" added
for live in $lives; do
    bare=$(count "" BENCH_HOOK_LIVE="$live")
    printf '%-28s %6d %12.0f %10s\n' "no shim" "$live" "$(echo "$bare / $calls" | bc -l)" -
    for setting in "stacks off, trace on|MEMSHIM_STACK_DEPTH=0 MEMSHIM_TRACE=$tmp/t-%p.mst" \
        "24 frames, trace on|MEMSHIM_TRACE=$tmp/t-%p.mst" \
        "default (no trace)|MEMSHIM_TRACE="; do
        label=${setting%%|*}
        # shellcheck disable=SC2086 # the settings are words
        ir=$(count "$shim" BENCH_HOOK_LIVE="$live" ${setting#*|})
        printf '%-28s %6d %12.0f %+10.0f\n' "$label" "$live" "$(echo "$ir / $calls" | bc -l)" \
            "$(echo "($ir - $bare) / $calls" | bc -l)"
    done
done
