#!/bin/sh
# Every symbol the simulated libraries export must be one the real CUDA 13 library of the same
# name exports (simcuda's own simcuda* extensions aside): a misspelt or invented name would
# never be called by a real program. Exits 77 (skipped) without the toolkit's libraries.
# usage: check_exports.sh SIM_DIR REAL_LIB_DIR
set -eu
sim_dir=$1
real_dir=$2
status=0
exports() {
    nm -D --defined-only "$1" | awk '{print $3}' | sed 's/@.*//' | grep -v '^lib' | sort -u
}
for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13; do
    if [ ! -e "$real_dir/$lib" ]; then
        echo "skip: no $real_dir/$lib"
        exit 77
    fi
    exports "$sim_dir/$lib" > "${TMPDIR:-/tmp}/sim_exports.$$"
    extra=$(exports "$real_dir/$lib" | comm -23 "${TMPDIR:-/tmp}/sim_exports.$$" - |
            grep -v '^simcuda' || true)
    rm -f "${TMPDIR:-/tmp}/sim_exports.$$"
    if [ -n "$extra" ]; then
        echo "$lib exports names the real library does not:" $extra
        status=1
    fi
    [ -n "$extra" ] || echo "$lib: $(exports "$sim_dir/$lib" | wc -l) exports, all real"
done
exit $status
