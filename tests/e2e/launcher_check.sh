#!/bin/sh
# build/bin/memshim, the launcher: the preload order (the shim before simcuda's runtime and
# BLAS, so it sees the program's calls), the variables each option sets, --no-shim, bad
# options, and a real run whose trace the analyzer reads.
# usage: launcher_check.sh MEMSHIM ANALYZE PROGRAM OUT_DIR
set -u
launcher=$1 analyze=$2 prog=$3 out=$4
mkdir -p "$out"
fails=0
check() { # CONDITION-STATUS WHAT
    if [ "$1" -eq 0 ]; then echo "ok   $2"; else echo "FAIL $2"; fails=$((fails + 1)); fi
}
env_of() { "$launcher" "$@" -- sh -c 'echo "$LD_PRELOAD|$LD_LIBRARY_PATH|${MEMSHIM_LIMIT:-}|${MEMSHIM_POLICY:-}|${MEMSHIM_TRACE:-}|${MEMSHIM_REPORT:-}|${SIMCUDA_COMPUTE:-}|${SIMCUDA_DEVICE_MEMORY:-}"'; }

unset LD_PRELOAD MEMSHIM_LIMIT MEMSHIM_POLICY MEMSHIM_TRACE MEMSHIM_REPORT SIMCUDA_COMPUTE
got=$(env_of --sim --limit 1g --policy spill --trace t.mst --report stderr --no-compute \
    --device-memory 80g)
pre=${got%%|*}
case $pre in
*/libmemshim.so:*/libcudart.so.13:*/libcublasLt.so.13:*/libcublas.so.13) r=0 ;;
*) r=1 ;;
esac
check $r "--sim preloads the shim first, then simcuda's runtime and BLAS ($pre)"
rest=${got#*|}
case $rest in
*/simcuda*"|1g|spill|t.mst|stderr|0|80g") r=0 ;;
*) r=1 ;;
esac
check $r "the options set the library path and MEMSHIM_*/SIMCUDA_* variables ($rest)"

got=$(env_of --sim --no-shim)
case ${got%%|*} in
*libmemshim*) r=1 ;;
*/libcudart.so.13*) r=0 ;;
*) r=1 ;;
esac
check $r "--no-shim leaves the shim out"
"$launcher" --no-shim --trace x.mst -- true 2>"$out/err"
grep -q -- '--trace has no effect with --no-shim' "$out/err"
check $? "a shim option with --no-shim is reported as having no effect"

"$launcher" --bogus -- true 2>"$out/err"
[ $? -eq 2 ] && grep -q 'unknown option --bogus' "$out/err"
check $? "an unknown option exits 2 and says which"
"$launcher" --limit 2>"$out/err"
[ $? -eq 2 ] && grep -q -- '--limit needs a value' "$out/err"
check $? "a missing value exits 2 and names the option"
"$launcher" --help | grep -q '^usage: memshim'
check $? "--help prints the usage"

rm -f "$out/run.mst"
"$launcher" --sim --trace "$out/run.mst" -- "$prog" --steps 2 >"$out/run.out" 2>&1
check $? "a program runs under --sim with a trace"
"$analyze" summary --json "$out/run.mst" >"$out/run.json" 2>&1 &&
    grep -q '"allocations": [1-9]' "$out/run.json"
check $? "the shim traced its allocations (memshim-analyze summary)"

[ $fails -eq 0 ] && echo "all checks passed" || echo "$fails failure(s)"
[ $fails -eq 0 ]
