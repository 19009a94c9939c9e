#!/usr/bin/env bash
# tests/gpu/run.sh: memshim's checks on a real GPU, in one script. On a machine with an NVIDIA
# GPU and the CUDA toolkit it builds memshim against the real libraries, runs an allocation
# probe and the example trainer (nvcc build, shared and static cudart) and, when torch imports
# with CUDA, examples/pytorch/train.py under the shim, and checks that
#   - every allocation path is seen: each probe allocation is in the trace and charged as the
#     driver's free memory moved (cudaMemGetInfo); the trainer's allocation count; for PyTorch
#     the trace peak against torch.cuda.max_memory_reserved() and the per-tensor allocator modes;
#   - the ceiling holds: MEMSHIM_POLICY=fail refuses at the ceiling (every path, the trainer,
#     PyTorch) and cudaMemGetInfo reports it; spill and recompute where the shim enforces them
#     (a shim that says it does not gives SKIP lines, not failures);
#   - results are identical with and without the shim (the per-step losses);
# and prints a table of step-time ratios (shim off / trace / trace+stacks / spill at 50%).
#
# Every check prints `PASS|FAIL|SKIP name: detail`; exit status 1 on any FAIL, 77 without a GPU
# (no nvidia-smi or no device) or toolkit, 0 otherwise. Everything goes to one log,
# $OUT/gpu-check.log ($OUT if set, else tests/gpu/out/), the runs' files (outputs, traces,
# summaries) in gpu-work.tar.gz beside it.
# The whole script stops starting work after MEMSHIM_GPU_BUDGET seconds (default 420) and
# every step has its own timeout, so it finishes in under 8 minutes.
#
# Knobs: CUDA_HOME (default /usr/local/cuda), CUDA_ARCH (native, the default, or e.g. 90), PYTHON
# (default python3), MEMSHIM_GPU_BUILD=DIR (where to build, default build-gpu-check/),
# MEMSHIM_GPU_PREBUILT=DIR (use that build directory instead of building).
# MEMSHIM_GPU_SIM=1 with MEMSHIM_GPU_PREBUILT runs the checks that can run on simcuda (the
# probe with the shared cudart and mlp-train-sim) so that this script's own logic is tested
# on machines without a GPU (ctest gpu_run_sim).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/tests/gpu
OUTDIR=${OUT:-$HERE/out}
SIM=${MEMSHIM_GPU_SIM:-0}
PREBUILT=${MEMSHIM_GPU_PREBUILT:-}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
ARCH=${CUDA_ARCH:-native}   # native, or a compute capability as CMake spells it (90)
NVCC_ARCH=native
[[ $ARCH != native ]] && NVCC_ARCH=sm_$ARCH
BUDGET=${MEMSHIM_GPU_BUDGET:-420}
PY=${PYTHON:-python3}
CHECK=("$PY" "$HERE/gpu_check.py")

# A clean environment for every run: nothing preloaded, no memshim or allocator settings from
# the caller, and no simcuda on the library path (ctest puts it there) unless simulating.
unset LD_PRELOAD PYTORCH_CUDA_ALLOC_CONF PYTORCH_NO_CUDA_MEMORY_CACHING
while IFS= read -r v; do
    [[ $v == MEMSHIM_* && $v != MEMSHIM_GPU_* ]] && unset "$v"
done < <(compgen -e)
if [[ -n ${LD_LIBRARY_PATH:-} ]]; then
    LD_LIBRARY_PATH=$(tr ':' '\n' <<<"$LD_LIBRARY_PATH" | grep -v simcuda | paste -sd: -)
    export LD_LIBRARY_PATH
fi

mkdir -p "$OUTDIR" || exit 1
LOG=$OUTDIR/gpu-check.log
: >"$LOG"
exec > >(tee -a "$LOG") 2>&1

START=$SECONDS
PASSES=0 FAILS=0 SKIPS=0

say() { echo "== $*"; }

# Count and echo check lines (`PASS|FAIL|SKIP name: detail`) read from stdin; other lines pass.
record() {
    local line
    while IFS= read -r line; do
        echo "$line"
        case $line in
        PASS\ *) PASSES=$((PASSES + 1)) ;;
        FAIL\ *) FAILS=$((FAILS + 1)) ;;
        SKIP\ *) SKIPS=$((SKIPS + 1)) ;;
        esac
    done
}
check() { record <<<"$*"; }

# The runs' files (outputs, traces, summaries; not the dumps, which are large) go back as one
# archive beside the log: a device machine returns only a few files from $OUT.
finish() {
    if [[ -n ${W:-} && -d $W ]]; then
        tar -czf "$OUTDIR/gpu-work.tar.gz" -C "$W" --exclude='*.dump' --exclude='mlp-static' --exclude='gpu-probe-*' . 2>/dev/null
        if (($(stat -c %s "$OUTDIR/gpu-work.tar.gz" 2>/dev/null || echo 0) > 15 << 20)); then
            tar -czf "$OUTDIR/gpu-work.tar.gz" -C "$W" --exclude='*.dump' --exclude='*.mst' \
                --exclude='mlp-static' --exclude='gpu-probe-*' . 2>/dev/null
        fi
        [[ $W == "$OUTDIR"/* ]] || rm -rf "$W"
    fi
    say "$PASSES passed, $FAILS failed, $SKIPS skipped in $((SECONDS - START)) s; log: $LOG"
    if ((FAILS > 0)); then exit 1; fi
    exit 0
}

# run_t SECONDS COMMAND...: COMMAND under a timeout, cut to what is left of the budget.
run_t() {
    local t=$1 left=$((BUDGET - (SECONDS - START)))
    shift
    if ((left < 5)); then
        echo "out of time, not run: $*" >&2
        return 124
    fi
    ((t > left)) && t=$left
    timeout -k 5 "$t" "$@"
}

# run NAME SECONDS [VAR=VALUE...] -- COMMAND...: one program run; its stdout, stderr, exit
# status and wall seconds go to $W/NAME.{out,err,rc,time}. Returns the exit status.
run() {
    local name=$1 t=$2 t0 t1 rc
    shift 2
    local vars=()
    while (($#)) && [[ $1 != -- ]]; do
        vars+=("$1")
        shift
    done
    shift
    t0=$(date +%s.%N)
    run_t "$t" env "${BASE_VARS[@]}" "${vars[@]}" "$@" >"$W/$name.out" 2>"$W/$name.err"
    rc=$?
    t1=$(date +%s.%N)
    echo "$rc" >"$W/$name.rc"
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }' >"$W/$name.time"
    echo "   ran $name: exit $rc in $(cat "$W/$name.time") s"
    if ((rc != 0)); then tail -n 5 "$W/$name.err" | sed 's/^/   | /'; fi
    return "$rc"
}

# The environment of a shimmed run writing trace $W/NAME.mst.
shim_vars() { echo "LD_PRELOAD=$SHIM MEMSHIM_TRACE=$W/$1.mst"; }

# summarize NAME: the trace's summary as JSON in $W/NAME.json, its dump in $W/NAME.dump.
summarize() {
    run_t 60 "$ANALYZE" summary --json "$W/$1.mst" >"$W/$1.json" 2>>"$W/$1.err"
    run_t 60 "$ANALYZE" dump "$W/$1.mst" >"$W/$1.dump" 2>>"$W/$1.err"
}

field() { "${CHECK[@]}" field "$@"; }

# --- is there a GPU? -------------------------------------------------------------------------

say "memshim GPU check, $(date -u +%FT%TZ), log $LOG"
if [[ $SIM == 1 ]]; then
    if [[ -z $PREBUILT ]]; then
        echo "MEMSHIM_GPU_SIM=1 needs MEMSHIM_GPU_PREBUILT=<build dir with simcuda>"
        exit 2
    fi
    say "simulation mode: simcuda from $PREBUILT, no GPU used"
else
    if ! command -v nvidia-smi >/dev/null 2>&1; then
        echo "SKIP gpu: no nvidia-smi on this machine"
        exit 77
    fi
    if ! timeout 60 nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
        echo "SKIP gpu: nvidia-smi lists no device"
        exit 77
    fi
    if [[ ! -x $CUDA_HOME/bin/nvcc ]]; then
        echo "SKIP gpu: no CUDA toolkit at $CUDA_HOME (set CUDA_HOME)"
        exit 77
    fi
    timeout 60 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    "$CUDA_HOME/bin/nvcc" --version | tail -n 2
fi

# With OUT set (ctest, a device machine) the work files live in a private temporary folder
# and come back only as $OUT/gpu-work.tar.gz; without it, in tests/gpu/out/work/.
if [[ -n ${OUT:-} ]]; then
    W=$(mktemp -d "${TMPDIR:-/tmp}/memshim-gpu.XXXXXX") || exit 1
else
    W=$OUTDIR/work
    rm -rf "$W" && mkdir -p "$W" || exit 1
fi
say "work files in $W"

# --- build -----------------------------------------------------------------------------------

BASE_VARS=()
if [[ -n $PREBUILT ]]; then
    BUILD=$PREBUILT
    say "using the build in $BUILD"
else
    BUILD=${MEMSHIM_GPU_BUILD:-$ROOT/build-gpu-check} # not under $OUT: only results go there
    say "building memshim against the real CUDA libraries in $BUILD"
    if ! run_t 120 cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DMEMSHIM_WITH_TESTS=OFF -DCMAKE_CUDA_COMPILER="$CUDA_HOME/bin/nvcc" \
        -DCMAKE_CUDA_ARCHITECTURES="$ARCH" >"$W/cmake.log" 2>&1 ||
        ! run_t 300 cmake --build "$BUILD" -j "$(nproc)" \
            --target memshim memshim-analyze mlp-train >>"$W/cmake.log" 2>&1; then
        tail -n 30 "$W/cmake.log"
        check "FAIL build: cmake (see $W/cmake.log)"
        finish
    fi
    check "PASS build: libmemshim.so, memshim-analyze, mlp-train (shared cudart)"
fi
SHIM=$BUILD/lib/libmemshim.so
ANALYZE=$BUILD/bin/memshim-analyze
# A prebuilt shim carried to a machine that lacks its libraries (libunwind) may bring them in
# $BUILD/deps.
if [[ -d $BUILD/deps ]]; then
    export LD_LIBRARY_PATH=$BUILD/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

CC=${CC:-cc}
CINC=(-std=c11 -O2 -D_GNU_SOURCE -I"$ROOT/include" -I"$CUDA_HOME/include")
# The stub libcuda only to link; at run time the driver's own, and the toolkit's libraries
# found through the run path even where the loader's default path lacks them.
CLIB=(-L"$CUDA_HOME/lib64" -L"$CUDA_HOME/lib64/stubs" -Xlinker -rpath -Xlinker "$CUDA_HOME/lib64")
declare -A PROBE MLP
if [[ $SIM == 1 ]]; then
    BASE_VARS=("LD_LIBRARY_PATH=$BUILD/simcuda")
    MLP[shared]=$BUILD/bin/mlp-train-sim
    VARIANTS=(shared)
    check "SKIP static cudart: simcuda cannot host the toolkit's static runtime"
else
    MLP[shared]=$BUILD/bin/mlp-train
    VARIANTS=(shared static)
    # The static-cudart trainer: the same sources, linked by hand (its CMake target is shared).
    S=$W/mlp-static
    mkdir -p "$S"
    ok=1
    for f in main options data apptags check device model; do
        run_t 60 "$CC" "${CINC[@]}" -c "$ROOT/examples/mlp/$f.c" -o "$S/$f.o" || ok=0
    done
    run_t 180 "$CUDA_HOME/bin/nvcc" -O2 -arch="$NVCC_ARCH" -I"$ROOT/include" -I"$ROOT/examples/mlp" \
        -c "$ROOT/examples/mlp/kernels_cuda.cu" -o "$S/kernels_cuda.o" || ok=0
    run_t 60 "$CC" "$S"/*.o -o "$S/mlp-train-static" -Wl,-z,dynamic-undefined-weak "${CLIB[@]}" \
        -lcublas -lcudart_static -lstdc++ -lm -ldl -lpthread -lrt || ok=0
    MLP[static]=$S/mlp-train-static
    if ((ok)); then
        check "PASS build: mlp-train with the static cudart"
    else
        check "FAIL build: mlp-train with the static cudart"
        VARIANTS=(shared)
    fi
fi
for v in "${VARIANTS[@]}"; do
    PROBE[$v]=$W/gpu-probe-$v
    if [[ $v == shared ]]; then
        rt=(-lcudart)
    else
        rt=(-lcudart_static -ldl -lpthread -lrt)
    fi
    if ! run_t 60 "$CC" "${CINC[@]}" "$HERE/probe.c" -o "${PROBE[$v]}" "${CLIB[@]}" "${rt[@]}" -lcuda; then
        check "FAIL build: gpu-probe ($v cudart)"
        unset "PROBE[$v]"
    fi
done

# --- allocation paths and the ceiling, through the probe ---------------------------------------

for v in "${!PROBE[@]}"; do
    say "allocation paths, $v cudart"
    p=${PROBE[$v]}
    if ! run "probe-$v-off" 60 -- "$p" paths; then
        check "FAIL probe $v: the probe fails without the shim"
        continue
    fi
    # shellcheck disable=SC2046  # shim_vars prints VAR=VALUE words
    run "probe-$v" 60 $(shim_vars "probe-$v") -- "$p" paths
    summarize "probe-$v"
    record < <("${CHECK[@]}" probe "probe $v" "$W/probe-$v.out" "$W/probe-$v.dump")
    # shellcheck disable=SC2046
    run "probe-$v-ceiling" 60 $(shim_vars "probe-$v-ceiling") MEMSHIM_LIMIT=256m -- "$p" ceiling 32
    record < <("${CHECK[@]}" ceiling "ceiling $v" "$W/probe-$v-ceiling.out" $((256 << 20)) $((32 << 20)))
done

# --- the example trainer -----------------------------------------------------------------------

# Per-step wall time: (run time - the unshimmed short run's time) / extra steps.
declare -A STEP_MS SPILL_NOTE
per_step_ms() { # NAME SHORT_NAME EXTRA_STEPS
    awk -v a="$(cat "$W/$1.time")" -v b="$(cat "$W/$2.time")" -v n="$3" \
        'BEGIN { printf "%.3f\n", (a - b) * 1000 / n }'
}

if [[ $SIM == 1 ]]; then
    L=8 S1=2 S2=8 SP=5
    MARGS=(--act gelu --layers "$L" --hidden 1024 --batch 16)
else
    L=6 S1=10 S2=210 SP=60 # SP: steps of the spill and recompute runs, which move gigabytes
    MARGS=(--act gelu --layers "$L" --hidden 4096 --batch 1024)
fi
for v in "${VARIANTS[@]}"; do
    m=${MLP[$v]}
    n=mlp-$v
    say "example trainer, $v cudart: ${MARGS[*]}, $S2 steps"
    if ! run "$n-short" 120 -- "$m" "${MARGS[@]}" --steps $S1 || ! run "$n-off" 120 -- "$m" "${MARGS[@]}" --steps $S2; then
        check "FAIL $n: the trainer fails without the shim"
        continue
    fi
    STEP_MS[$n.off]=$(per_step_ms "$n-off" "$n-short" $((S2 - S1)))
    # shellcheck disable=SC2046
    run "$n-trace" 120 $(shim_vars "$n-trace") MEMSHIM_STACK_DEPTH=0 -- "$m" "${MARGS[@]}" --steps $S2
    summarize "$n-trace"
    record < <("${CHECK[@]}" same "$n trace: losses" "$W/$n-off.out" "$W/$n-trace.out")
    record < <("${CHECK[@]}" mlp "$n trace: allocations" "$W/$n-trace.json" $L $S2)
    STEP_MS[$n.trace]=$(per_step_ms "$n-trace" "$n-short" $((S2 - S1)))
    # shellcheck disable=SC2046
    run "$n-stacks" 120 $(shim_vars "$n-stacks") -- "$m" "${MARGS[@]}" --steps $S2
    summarize "$n-stacks"
    record < <("${CHECK[@]}" same "$n trace+stacks: losses" "$W/$n-off.out" "$W/$n-stacks.out")
    STEP_MS[$n.stacks]=$(per_step_ms "$n-stacks" "$n-short" $((S2 - S1)))
    run_t 60 "$ANALYZE" summary "$W/$n-stacks.mst" | sed 's/^/   /'

    peak=$(field "$W/$n-trace.json" peak_bytes)
    if [[ -z $peak || $peak -le 0 ]]; then
        check "FAIL $n: no peak in the trace summary"
        continue
    fi
    half=$((peak / 2))
    # shellcheck disable=SC2046
    run "$n-fail" 120 $(shim_vars "$n-fail") MEMSHIM_LIMIT=$half MEMSHIM_POLICY=fail -- "$m" "${MARGS[@]}" --steps $S1
    summarize "$n-fail"
    record < <("${CHECK[@]}" ceiling-run "$n fail at 50%" "$W/$n-fail.json" "$(cat "$W/$n-fail.rc")" $half)
    for pol in spill recompute; do
        # recompute with the trainer's readonly rules: without them every GEMM output reaches a
        # kernel that may write it and nothing is droppable (replays on the GPU unchecked).
        rules=()
        [[ $pol == recompute ]] && rules=(MEMSHIM_RULES="$ROOT/examples/mlp/memshim.rules")
        # shellcheck disable=SC2046
        run "$n-$pol" 180 $(shim_vars "$n-$pol") "${rules[@]}" MEMSHIM_LIMIT=$half MEMSHIM_POLICY=$pol MEMSHIM_LOG=info -- "$m" "${MARGS[@]}" --steps $SP
        summarize "$n-$pol"
        out=$("${CHECK[@]}" policy "$n $pol at 50%" "$W/$n-$pol.json" "$(cat "$W/$n-$pol.rc")" $half "$W/$n-$pol.err" $pol)
        record <<<"$out"
        if [[ $out == SKIP* ]]; then
            [[ $pol == spill ]] && SPILL_NOTE[$n]="not supported"
            continue
        fi
        head -n "$SP" "$W/$n-off.out" >"$W/$n-off-$SP.out"
        record < <("${CHECK[@]}" same "$n $pol: losses" "$W/$n-off-$SP.out" "$W/$n-$pol.out")
        [[ $pol == spill ]] && STEP_MS[$n.spill]=$(per_step_ms "$n-spill" "$n-short" $((SP - S1)))
    done
    # The trainer as it ships at whatif's smallest workable ceiling: its Adam update's four
    # 2.25 MiB buffers fit there by size but not in whole 2 MiB granules, so it completes only
    # by using what has no room in host memory (MEMSHIM_HOST_USE), which needs host VMM.
    # shellcheck disable=SC2046
    run "$n-default" 60 $(shim_vars "$n-default") -- "$m" --steps 3
    run_t 60 "$ANALYZE" whatif --json --limit 1g "$W/$n-default.mst" >"$W/$n-default-whatif.json"
    small=$(field "$W/$n-default-whatif.json" min_ceiling_bytes)
    if [[ -z $small || $small -le 0 ]]; then
        check "FAIL $n host use: whatif gave no smallest workable ceiling"
        continue
    fi
    # shellcheck disable=SC2046
    run "$n-hostuse" 120 $(shim_vars "$n-hostuse") MEMSHIM_LIMIT=$small MEMSHIM_POLICY=spill -- "$m" --steps 3
    summarize "$n-hostuse"
    record < <("${CHECK[@]}" host-use "$n host use at $small" "$W/$n-hostuse.json" "$(cat "$W/$n-hostuse.rc")" "$small" "$W/$n-hostuse.err")
    record < <("${CHECK[@]}" same "$n host use: losses" "$W/$n-default.out" "$W/$n-hostuse.out")
done

# --- PyTorch -----------------------------------------------------------------------------------

TORCH=0
# MEMSHIM_GPU_TORCH_DEVICE=cpu (a development aid, with torch installed) runs this part's
# control flow on the CPU, where the shim sees nothing: its trace checks then fail.
TDEV=${MEMSHIM_GPU_TORCH_DEVICE:-cuda}
if [[ $TDEV == cpu ]]; then
    TORCH=1
elif [[ $SIM == 1 ]]; then
    check "SKIP pytorch: not on simcuda"
elif ! run torch-probe 120 -- "$PY" -c 'import sys, torch; print(torch.__version__, torch.version.cuda); sys.exit(0 if torch.cuda.is_available() else 1)'; then
    check "SKIP pytorch: torch does not import with CUDA ($(tail -n 1 "$W/torch-probe.err"))"
else
    TORCH=1
    say "PyTorch $(cat "$W/torch-probe.out")"
fi
if ((TORCH)); then
    T=$ROOT/examples/pytorch/train.py
    TSTEPS=${MEMSHIM_GPU_TORCH_STEPS:-40}
    TARGS=(--layers 4 --hidden 512 --heads 8 --seq-len 256 --batch 16 --steps "$TSTEPS" --nvtx --device "$TDEV")
    [[ $TDEV == cpu ]] && TARGS=(--layers 2 --hidden 64 --seq-len 32 --batch 4 --steps "$TSTEPS" --nvtx --device cpu)
    n=torch
    torch_ms() { awk -v s="$(field "$W/$1.out" step_time_median_s)" 'BEGIN { printf "%.3f\n", s * 1000 }'; }
    if run torch-off 180 -- "$PY" "$T" "${TARGS[@]}"; then
        STEP_MS[$n.off]=$(torch_ms torch-off)
        # shellcheck disable=SC2046
        run torch-trace 180 $(shim_vars torch-trace) MEMSHIM_STACK_DEPTH=0 MEMSHIM_PY_STACKS=0 -- "$PY" "$T" "${TARGS[@]}"
        summarize torch-trace
        STEP_MS[$n.trace]=$(torch_ms torch-trace)
        record < <("${CHECK[@]}" same "torch trace: losses" "$W/torch-off.out" "$W/torch-trace.out")
        record < <("${CHECK[@]}" torch-reserved "torch trace: peak vs reserved" "$W/torch-trace.json" "$W/torch-trace.out")
        nsteps=$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["steps"]))' "$W/torch-trace.json" 2>/dev/null || echo 0)
        if ((nsteps >= TSTEPS)); then
            check "PASS torch nvtx: $nsteps steps in the trace (torch.cuda.nvtx 'step N' ranges)"
        else
            check "FAIL torch nvtx: $nsteps steps in the trace, want $TSTEPS"
        fi

        # shellcheck disable=SC2046
        run torch-stacks 180 $(shim_vars torch-stacks) -- "$PY" "$T" "${TARGS[@]}"
        summarize torch-stacks
        STEP_MS[$n.stacks]=$(torch_ms torch-stacks)
        record < <("${CHECK[@]}" same "torch trace+stacks: losses" "$W/torch-off.out" "$W/torch-stacks.out")
        if grep -q 'train\.py' "$W/torch-stacks.dump"; then
            check "PASS torch python stacks: train.py frames in the trace"
        else
            check "SKIP torch python stacks: no train.py frame in the trace (MEMSHIM_PY_STACKS off or not implemented)"
        fi
        # For checking shim/builtin_rules.txt by eye: categories and call sites of a real run.
        run_t 60 "$ANALYZE" summary --top 15 "$W/torch-stacks.mst" | sed 's/^/   /'

        # The allocator modes of examples/pytorch/README.md.
        min=$((TSTEPS * 10))
        # shellcheck disable=SC2046
        run torch-async 180 $(shim_vars torch-async) MEMSHIM_STACK_DEPTH=0 PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync -- "$PY" "$T" "${TARGS[@]}"
        summarize torch-async
        record < <("${CHECK[@]}" kinds "torch backend:cudaMallocAsync: per tensor" "$W/torch-async.dump" cudaMallocAsync,cudaMallocFromPoolAsync,cuMemAllocAsync,cuMemAllocFromPoolAsync $min)
        # shellcheck disable=SC2046
        run torch-nocache 240 $(shim_vars torch-nocache) MEMSHIM_STACK_DEPTH=0 PYTORCH_NO_CUDA_MEMORY_CACHING=1 -- "$PY" "$T" "${TARGS[@]}"
        summarize torch-nocache
        record < <("${CHECK[@]}" kinds "torch PYTORCH_NO_CUDA_MEMORY_CACHING=1: per tensor" "$W/torch-nocache.dump" cudaMalloc,cuMemAlloc $min)
        # shellcheck disable=SC2046
        run torch-expandable 180 $(shim_vars torch-expandable) MEMSHIM_STACK_DEPTH=0 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True -- "$PY" "$T" "${TARGS[@]}"
        summarize torch-expandable
        record < <("${CHECK[@]}" kinds "torch expandable_segments: through cuMemCreate" "$W/torch-expandable.dump" cuMemCreate 1)
        for mode in async nocache expandable; do
            "${CHECK[@]}" same "torch $mode: losses" "$W/torch-off.out" "$W/torch-$mode.out" | sed 's/^\(PASS\|FAIL\) /INFO /'
        done

        # The ceiling last: spilling is the slowest run.
        reserved=$(field "$W/torch-off.out" max_memory_reserved)
        if [[ ! $reserved =~ ^[0-9]+$ ]] || ((reserved == 0)); then
            check "FAIL torch: no max_memory_reserved in train.py's final line"
        else
            half=$((reserved / 2))
            # shellcheck disable=SC2046
            run torch-fail 180 $(shim_vars torch-fail) MEMSHIM_LIMIT=$half MEMSHIM_POLICY=fail -- "$PY" "$T" "${TARGS[@]}"
            summarize torch-fail
            record < <("${CHECK[@]}" ceiling-run "torch fail at 50%" "$W/torch-fail.json" "$(cat "$W/torch-fail.rc")" $half)
            total=$(field "$W/torch-fail.out" mem_get_info.1)
            if [[ $total == "$half" ]]; then
                check "PASS torch mem_get_info: total $total is the ceiling"
            else
                check "FAIL torch mem_get_info: total '$total', ceiling $half"
            fi
            # shellcheck disable=SC2046
            run torch-spill 240 $(shim_vars torch-spill) MEMSHIM_LIMIT=$half MEMSHIM_POLICY=spill MEMSHIM_LOG=info -- "$PY" "$T" "${TARGS[@]}"
            summarize torch-spill
            out=$("${CHECK[@]}" policy "torch spill at 50%" "$W/torch-spill.json" "$(cat "$W/torch-spill.rc")" $half "$W/torch-spill.err" spill)
            record <<<"$out"
            if [[ $out == SKIP* ]]; then
                SPILL_NOTE[$n]="not supported"
            else
                record < <("${CHECK[@]}" same "torch spill: losses" "$W/torch-off.out" "$W/torch-spill.out")
                STEP_MS[$n.spill]=$(torch_ms torch-spill)
            fi
        fi
    else
        check "FAIL torch: train.py fails without the shim"
    fi
fi

# --- PyTorch against its own recorder -----------------------------------------------------------
# The checks ctest runs on simcuda (tests/e2e/torch_sim_check.py: the allocator's segments, maps
# and tensors against _snapshot(), the peak against max_memory_reserved, the ceiling, backward
# tensors' forward lines against torch.profiler), here on the GPU through the build's launcher.

if ((TORCH)) && [[ $TDEV == cuda ]]; then
    for mode in native expandable async limit forward; do
        run torch-referee-$mode 300 MEMSHIM_TORCH_SIM=0 MEMSHIM_TORCH_PYTHON="$PY" \
            MEMSHIM_LAUNCHER="$BUILD/bin/memshim" MEMSHIM_ANALYZE="$ANALYZE" \
            OUT="$W/torch-referee-$mode" -- "$PY" "$ROOT/tests/e2e/torch_sim_check.py" "$mode"
        rc=$(cat "$W/torch-referee-$mode.rc")
        record < <(sed -n -e "s/^ok   /PASS torch referee /p" -e "s/^FAIL /FAIL torch referee /p" \
            "$W/torch-referee-$mode.out")
        if ((rc != 0)) && ! grep -q '^FAIL ' "$W/torch-referee-$mode.out"; then
            check "FAIL torch referee $mode: exit $rc"
        fi
    done
elif [[ $SIM == 1 ]]; then
    check "SKIP torch referee: not on simcuda here (ctest runs it there as torch_sim_*)"
fi

# --- step-time table ---------------------------------------------------------------------------

say "step time: ms per step without the shim, then ratios to it"
printf '%-28s %10s %8s %14s %12s\n' program "off (ms)" trace trace+stacks "spill@50%"
for n in mlp-shared mlp-static torch; do
    off=${STEP_MS[$n.off]:-}
    [[ -z $off ]] && continue
    row=()
    for c in trace stacks spill; do
        x=${STEP_MS[$n.$c]:-}
        if [[ -n $x ]]; then
            row+=("$(awk -v a="$x" -v b="$off" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')")
        elif [[ $c == spill && -n ${SPILL_NOTE[$n]:-} ]]; then
            row+=("${SPILL_NOTE[$n]}")
        else
            row+=(n/a)
        fi
    done
    printf '%-28s %10s %8s %14s %12s\n' "$n" "$off" "${row[@]}"
done
finish
