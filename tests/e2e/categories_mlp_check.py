#!/usr/bin/env python3
"""Categories without tags: mlp-train-sim --no-tags (NVTX ranges only) must get, allocation by
allocation, the category the tagged run records, from phases, rules and lifetime alone.

Both runs are read through `memshim-analyze dump --refined`: the tagged run's `category=` is
what the trainer said; the untagged run's `refined=` is what memshim worked out. The two runs
make the same allocations in the same order (the trainer is deterministic), so the n-th ALLOC
of one is the n-th of the other. Also: a user's rules file beats the built-in rules, a
`symbol:` rule matches a static function of the executable (named from .symtab), and a rule
that matches nothing is named at exit.
"""
import os
import re
import subprocess
import sys
import tempfile

BUILD = os.environ["MEMSHIM_BUILD_DIR"]
ANALYZE = os.path.join(BUILD, "bin", "memshim-analyze")
TRAINER = os.path.join(BUILD, "bin", "mlp-train-sim")
SHIM = os.path.join(BUILD, "lib", "libmemshim.so")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def train(tmp, name, args, rules=None, extra=None):
    env = dict(os.environ, **(extra or {}))
    env["LD_PRELOAD"] = SHIM + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env["MEMSHIM_TRACE"] = os.path.join(tmp, name)
    env.pop("MEMSHIM_RULES", None)
    if rules:
        env["MEMSHIM_RULES"] = rules
    p = subprocess.run([TRAINER, "--steps", "3", *args], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return env["MEMSHIM_TRACE"], p.stderr


FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


def allocs(trace):
    p = subprocess.run([ANALYZE, "dump", "--refined", trace], capture_output=True, text=True)
    check(p.returncode == 0, f"dump --refined {trace}: exit {p.returncode}\n{p.stderr}")
    out, live = [], {}
    for line in p.stdout.splitlines():
        kind = line.split(" ", 1)[0]
        f = dict(FIELD.findall(line))
        if kind == "alloc":
            live[f["addr"]] = len(out)
            out.append(f)
        elif kind == "retag" and f["addr"] in live:
            # cublasSetWorkspace names a workspace after its allocation: the last word counts
            out[live[f["addr"]]]["category"] = out[live[f["addr"]]]["refined"] = f["category"]
        elif kind == "free":
            live.pop(f["addr"], None)
    return out


def compare(tmp, label, args):
    tagged, _ = train(tmp, label + "-tags.mst", args)
    untagged, _ = train(tmp, label + "-notags.mst", args + ["--no-tags"])
    a, b = allocs(tagged), allocs(untagged)
    check(len(a) == len(b) and a, f"{label}: {len(a)} allocations tagged, {len(b)} untagged")
    wrong = {}
    for x, y in zip(a, b):
        check(x["size"] == y["size"], f"{label}: runs diverge at {x} / {y}")
        if x["category"] != y["refined"]:
            key = (x["category"], y["refined"], y["phase_name"] if "phase_name" in y else "")
            wrong[key] = wrong.get(key, 0) + 1
    for (want, got, phase), n in sorted(wrong.items()):
        check(False, f"{label}: {n} allocations tagged {want} came out {got} (phase {phase})")
    print(f"ok: {label}: {len(a)} allocations, {len(a) - sum(wrong.values())} agree")


def user_rules(tmp):
    rules = os.path.join(tmp, "user.rules")
    with open(rules, "w") as f:
        # A frame rule of the user beats the built-in `phase:*backward*` guess; model_backward
        # is not exported by the trainer, so only its .symtab names it.
        f.write("communication symbol:model_backward\n")
        f.write("kv_cache symbol:no_such_function_anywhere\n")
    trace, err = train(tmp, "rules.mst", ["--no-tags"], rules, {"MEMSHIM_REPORT": "stderr"})
    got = allocs(trace)
    bwd = [x for x in got if x.get("phase_name") == '"backward"']
    check(bwd and all(x["category"] == "communication" for x in bwd),
          "every allocation of backward from the user's symbol rule: "
          f"{sorted(set(x['category'] for x in bwd))}")
    check(all(x["category"] != "communication" for x in got if x not in bwd),
          "the symbol rule only where model_backward is on the stack")
    check("no_such_function_anywhere" in err and "matched no allocation" in err,
          f"the unused rule is named at exit: {err}")
    check("model_backward" not in err, f"the used rule is not named: {err}")
    check("rules of MEMSHIM_RULES that matched no allocation: 1" in err,
          f"the exit summary counts it: {err}")
    print(f"ok: user rules: {len(bwd)} backward allocations from symbol:model_backward")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        compare(tmp, "relu", [])
        compare(tmp, "gelu-ex", ["--act", "gelu", "--gemm", "ex", "--layers", "4"])
        user_rules(tmp)
    if failures:
        sys.exit(1)


main()
