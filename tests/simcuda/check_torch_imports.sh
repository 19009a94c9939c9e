#!/bin/sh
# Every symbol PyTorch's libraries import from libcudart.so.13, libcublas.so.13 and
# libcublasLt.so.13 (nm -D, with its version) must be defined by simcuda's library of that
# name: extension modules are bound at load, so one missing symbol fails `import torch` or the
# first linear-algebra call. Exits 77 (skipped) without an interpreter that has torch.
# usage: check_torch_imports.sh PYTHON SIM_DIR
set -eu
py=$1
sim_dir=$2
lib_dir=$("$py" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' \
    2>/dev/null) || { echo "skip: no torch in $py"; exit 77; }
tmp=${TMPDIR:-/tmp}/torch_imports.$$
trap 'rm -f "$tmp".*' EXIT
for f in "$lib_dir"/*.so; do
    nm -D --undefined-only "$f" 2>/dev/null | awk '{print $2}'
done | sort -u >"$tmp.undef"
status=0
for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13; do
    nm -D --defined-only "$sim_dir/$lib" | awk '{print $3}' | sed 's/@@/@/' | sort -u >"$tmp.def"
    grep "@$lib\$" "$tmp.undef" | comm -23 - "$tmp.def" >"$tmp.missing" || true
    wanted=$(grep -c "@$lib\$" "$tmp.undef" || true)
    if [ -s "$tmp.missing" ]; then
        echo "$lib lacks what torch imports:" $(cat "$tmp.missing")
        status=1
    else
        echo "$lib: all $wanted symbols torch imports, with their version"
    fi
done
exit $status
