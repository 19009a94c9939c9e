#!/usr/bin/env python3
"""The shim in the hard places of a host process, on simcuda (harden_prog.c's programs).

    harden_check.py SCENARIO --shim LIB --prog PROG --linked PROG --analyze EXE

Scenarios:
  setuid          a setuid-root copy of a program linked to libmemshim, run by `nobody`
                  (setpriv): MEMSHIM_TRACE/REPORT/RULES are refused with one line each; no
                  root-owned file is created, truncated or echoed. Skipped when not root or
                  without setpriv and the user nobody.
  env_extremes    every variable of the options table (from gen_env_table's output, i.e. the
                  table itself) with extreme values, each run in a child under a time limit:
                  no hang, no crash, exit 0
  fork            a child forked while 4 threads are inside the shim under spill: no child
                  hangs; a child's trace has its device and ceiling records
  exec            an exec in place: the first image's records stay in the first file, the new
                  image's go to a new name
  signals         every catchable fatal signal flushes (flush period 60 s); a SIGUSR1 handler
                  installed after load is chained and sees the default as its previous action
  exit_paths      _exit flushes
  names           two processes with one MEMSHIM_TRACE name (no %p) write two files; %r reads
                  LOCAL_RANK, PMI_RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK and RANK in order;
                  MEMSHIM_TRACE equal to MEMSHIM_REPORT keeps the trace
  report_wrapper  a wrapper process that never uses CUDA prints no summary and leaves the
                  worker's report alone
  driver_oom      an out-of-memory from the driver with no ceiling prints the OOM screen (with
                  call sites when a report is asked for, without when nothing reads them)
  analyzer_inputs a FIFO named *.mst (given, or in a folder), a dangling link and a folder
                  named *.mst are refused or skipped with one line, never waited on; a file two
                  processes wrote (a second header, or a zero hole) is an error naming the cause;
                  60 traces with one bit flipped (past the header) are never read silently
  spill_stress    8 threads under spill at a small ceiling: 0 frees of unknown addresses, every
                  failed copy an OOM record and a report entry, the report's rows add up
"""

import argparse
import json
import os
import pwd
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scenario  # noqa: E402
import shim_trace  # noqa: E402

MIB = 1024 * 1024
SKIP = 77


Failure, expect = scenario.Failure, scenario.expect


class Ctx:
    def __init__(self, args):
        self.shim, self.prog = os.path.abspath(args.shim), os.path.abspath(args.prog)
        self.linked, self.analyze = os.path.abspath(args.linked), os.path.abspath(args.analyze)
        self.build = os.path.dirname(os.path.dirname(self.prog))
        self.tmp = tempfile.mkdtemp(prefix="harden-e2e-")
        os.chmod(self.tmp, 0o755)

    def env(self, extra=None, preload=True):
        e = {k: v for k, v in os.environ.items() if not k.startswith("MEMSHIM_")
             and k not in ("RANK", "LOCAL_RANK", "PMI_RANK", "SLURM_PROCID",
                           "OMPI_COMM_WORLD_RANK")}
        if preload:
            e["LD_PRELOAD"] = self.shim
        if "ASAN_OPTIONS" in e:
            # Under the sanitizer build: the fatal signals are the program's and the shim's to
            # handle, as without it (ASan would turn them into its own report and exit 1).
            e["ASAN_OPTIONS"] += (":handle_segv=0:handle_sigbus=0:handle_sigfpe=0"
                                  ":handle_sigill=0:handle_abort=0")
        e.update(extra or {})
        return e

    def run(self, args, env=None, preload=True, timeout=120, check=True, argv0=None):
        argv = [argv0 or self.prog] + [str(a) for a in args]
        p = subprocess.run(argv, env=self.env(env, preload), capture_output=True, text=True,
                           timeout=timeout)
        if check and p.returncode != 0:
            raise Failure("%s exited %d\nstdout:\n%s\nstderr:\n%s" %
                          (" ".join(argv), p.returncode, p.stdout[-3000:], p.stderr[-3000:]))
        return p

    def summary(self, trace):
        p = subprocess.run([self.analyze, "summary", "--json", trace], capture_output=True,
                           text=True)
        expect(p.returncode == 0, "analyze %s: %s" % (trace, p.stderr))
        return json.loads(p.stdout)

    def path(self, name):
        return os.path.join(self.tmp, name)


def allocs(path):
    return [a.size for a in shim_trace.Trace(path).allocs()]


# --- setuid ------------------------------------------------------------------------------------

def s_setuid(ctx):
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        print("SKIP: needs root and setpriv")
        return SKIP
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        print("SKIP: no user nobody")
        return SKIP
    # The loader of a setuid program reads its libraries as the unprivileged user sees them
    # (it ignores LD_LIBRARY_PATH): a build tree under a private home cannot be used.
    ldd = subprocess.run(["ldd", ctx.linked], capture_output=True, text=True).stdout
    libs = re.findall(r"=> (/\S+)", ldd)
    unreadable = [lib for lib in libs if subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "test", "-r", lib],
        capture_output=True).returncode != 0]
    if unreadable:
        print("SKIP: the user nobody cannot read %s" % unreadable[0])
        return SKIP
    if os.statvfs(ctx.tmp).f_flag & os.ST_NOSUID:
        print("SKIP: %s is on a nosuid file system" % ctx.tmp)
        return SKIP
    prog = ctx.path("suid-prog")
    shutil.copy(ctx.linked, prog)
    os.chown(prog, 0, 0)
    os.chmod(prog, 0o4755)
    secret_dir = ctx.path("rootonly")
    os.mkdir(secret_dir, 0o700)
    secret = ctx.path("secret.rules")
    with open(secret, "w") as f:
        f.write("SECRET-LINE-ONLY-ROOT-MAY-READ\n")
    os.chmod(secret, 0o600)
    report = ctx.path("root-report.txt")
    with open(report, "w") as f:
        f.write("precious\n")
    os.chmod(report, 0o644)
    env = {"MEMSHIM_TRACE": os.path.join(secret_dir, "t.mst"), "MEMSHIM_REPORT": report,
           "MEMSHIM_RULES": secret, "MEMSHIM_LOG": "info"}
    argv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", prog, "basic"]
    p = subprocess.run(argv, env=ctx.env(env, preload=False), capture_output=True, text=True,
                       timeout=60)
    expect(p.returncode == 0, "the setuid program failed (%d): %s" % (p.returncode, p.stderr))
    expect("SECRET" not in p.stderr + p.stdout, "a root-only file was echoed: %s" % p.stderr)
    for var in ("MEMSHIM_TRACE", "MEMSHIM_REPORT", "MEMSHIM_RULES"):
        lines = [ln for ln in p.stderr.splitlines() if ln.startswith("memshim: %s is ignored" % var)]
        expect(len(lines) == 1, "no refusal line for %s:\n%s" % (var, p.stderr))
    expect(os.listdir(secret_dir) == [], "a file was created in a root-only directory")
    with open(report) as f:
        expect(f.read() == "precious\n", "the root-owned report file was overwritten")
    # Control: the same copy run by root (not privileged beyond its user) honours them.
    os.chmod(secret, 0o644)
    q = subprocess.run([prog, "basic"], env=ctx.env(env, preload=False), capture_output=True,
                       text=True, timeout=60)
    expect(q.returncode == 0 and os.path.exists(os.path.join(secret_dir, "t.mst")),
           "unprivileged run wrote no trace: %s" % q.stderr)
    expect("is ignored" not in q.stderr, "refused without privileges: %s" % q.stderr)
    print("setuid: 3 variables refused, nothing created/truncated/echoed")


# --- extreme values ----------------------------------------------------------------------------

def option_names(ctx):
    gen = os.path.join(os.path.dirname(ctx.prog), "gen_env_table")
    out = subprocess.run([gen], capture_output=True, text=True, check=True).stdout
    names = re.findall(r"^\| `(MEMSHIM_[A-Z_<>a-z]+)`", out, re.M)
    expect(len(names) >= 10, "the options table lists only %s" % names)
    return [n.replace("<ordinal>", "0") for n in names]


def extreme_values(ctx):
    fifo = ctx.path("fifo")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    return ["", "0", "1", "-1", " ", "18446744073709551615", "18446744073709551616",
            "99999999999999999999999999", "8388607t", "8388608t", "8388609t", "16777216t",
            "1t", "100%", "100.000001%", "0.0000001%", "1e9", "0x10", "5%", "%", "%p%r%%",
            "spill\nmemshim: forged", "\x1b[31mred", "a" * 5000, "%p" * 600,
            "/dev/zero", "/dev/full", "/proc/self/mem", fifo, ctx.tmp, "/nonexistent/x/y",
            "h2d=1,d2h=1,gemm=1", "h2d=0", "h2d=18446744073709551615,gemm=1e999", "auto",
            "recompute", "debug", "60000", "60001", "64", "65"]


def s_env_extremes(ctx):
    names = option_names(ctx)
    values = extreme_values(ctx)
    base = {"MEMSHIM_POLICY": "spill", "MEMSHIM_LIMIT": "64m", "SIMCUDA_DEVICE_MEMORY": "256m"}
    runs = hung = crashed = failed = 0
    bad = []
    for name in names:
        for v in values:
            env = dict(base)
            env["MEMSHIM_TRACE"] = ctx.path("x.mst") if name != "MEMSHIM_TRACE" else v
            env[name] = v
            runs += 1
            try:
                p = ctx.run(["basic"], env=env, timeout=20, check=False)
            except subprocess.TimeoutExpired:
                hung += 1
                bad.append("%s=%r hung" % (name, v[:40]))
                continue
            if p.returncode < 0:
                crashed += 1
                bad.append("%s=%r died of signal %d" % (name, v[:40], -p.returncode))
            elif p.returncode != 0 and not (p.returncode == 1 and "FAIL: cuda" in p.stderr):
                # A ceiling below the program's needs fails its cudaMalloc cleanly: allowed.
                failed += 1
                bad.append("%s=%r exited %d: %s" % (name, v[:40], p.returncode, p.stderr[-300:]))
            if "\x1b" in p.stderr or re.search(r"^memshim: forged", p.stderr, re.M):
                bad.append("%s=%r: the value's newline or escape reached stderr" % (name, v[:40]))
    print("env_extremes: %d runs over %d variables, hung %d, crashed %d, failed %d" %
          (runs, len(names), hung, crashed, failed))
    expect(not bad, "\n  ".join(bad[:20]))


# --- fork, exec, signals, _exit ----------------------------------------------------------------

def s_fork(ctx):
    tmpl = ctx.path("fork-%p.mst")
    env = {"MEMSHIM_TRACE": tmpl, "MEMSHIM_POLICY": "spill", "MEMSHIM_LIMIT": "24m",
           "SIMCUDA_DEVICE_MEMORY": "1g"}
    p = ctx.run(["fork", 4, 100], env=env, timeout=600)
    m = re.search(r"forks (\d+) hung (\d+) failed (\d+) hung-outside-the-shim (\d+)", p.stdout)
    expect(m, "no fork summary: %s" % p.stdout)
    n, hung, failed, elsewhere = map(int, m.groups())
    print("fork: %d children, %d hung in the shim, %d failed, %d hung in simcuda's own locks" %
          (n, hung, failed, elsewhere))
    expect(hung == 0 and failed == 0, "children hung or failed: %s%s" % (p.stdout, p.stderr))
    traces = [f for f in os.listdir(ctx.tmp) if f.startswith("fork-")]
    # A child stuck in simcuda may have died before its first CUDA event was written.
    expect(n + 1 - elsewhere <= len(traces) <= n + 1,
           "%d traces for %d processes" % (len(traces), n + 1))
    for f in traces[:10]:
        s = ctx.summary(ctx.path(f))
        expect(s["devices"] and s["devices"][0]["ceiling_bytes"] == 24 * MIB,
               "%s: devices %s" % (f, s["devices"]))
        expect(s["ceiling_bytes"] == 24 * MIB, "%s: ceiling %s" % (f, s["ceiling_bytes"]))


def s_exec(ctx):
    trace = ctx.path("exec.mst")
    p = ctx.run(["exec"], env={"MEMSHIM_TRACE": trace})
    first = allocs(trace)
    expect(first == [MIB, 2 * MIB, 3 * MIB], "first image's records: %s" % first)
    others = [f for f in os.listdir(ctx.tmp) if f.startswith("exec.") and f != "exec.mst"]
    expect(len(others) == 1, "the new image's trace: %s" % others)
    second = allocs(ctx.path(others[0]))
    expect(second == [5 * MIB, 6 * MIB], "new image's records: %s" % second)
    expect(re.match(r"exec\.\d+\.mst$", others[0]), "new name %s" % others[0])
    del p


FATAL = ["SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE",
         "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM", "SIGXCPU", "SIGXFSZ",
         "SIGVTALRM", "SIGPROF", "SIGSYS"]


def s_signals(ctx):
    lost = []
    for name in FATAL:
        sig = getattr(signal, name)
        trace = ctx.path("sig-%s.mst" % name)
        p = ctx.run(["signal", int(sig)], env={"MEMSHIM_TRACE": trace, "MEMSHIM_FLUSH_MS": "60000"},
                    check=False)
        expect(p.returncode == -sig, "%s: exit status %d, stderr %s" % (name, p.returncode,
                                                                          p.stderr[-500:]))
        expect("handled" in p.stdout, "%s: the handler installed after load did not run" % name)
        expect("previous default" in p.stdout, "%s: the program saw the shim's handler" % name)
        n = len(allocs(trace)) if os.path.exists(trace) else 0
        if n != 5:
            lost.append("%s: %d of 5 allocations in the trace" % (name, n))
    print("signals: %d fatal signals, %d lost records" % (len(FATAL), len(lost)))
    expect(not lost, "\n  ".join(lost))


def s_exit_paths(ctx):
    trace = ctx.path("exit.mst")
    p = ctx.run(["_exit"], env={"MEMSHIM_TRACE": trace, "MEMSHIM_FLUSH_MS": "60000"}, check=False)
    expect(p.returncode == 3, "exit status %d" % p.returncode)
    expect(len(allocs(trace)) == 5, "_exit lost records: %s" % allocs(trace))


# --- names, reports ----------------------------------------------------------------------------

def s_names(ctx):
    trace = ctx.path("same.mst")
    env = {"MEMSHIM_TRACE": trace, "MEMSHIM_FLUSH_MS": "60000"}
    e1 = ctx.env(env)
    # The first process holds the name (it is still running) while the second starts.
    holder = subprocess.Popen([ctx.prog, "hold", "3000"], env=e1,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(200):
            if os.path.exists(trace) and os.path.getsize(trace) > 0:
                break
            subprocess.run(["sleep", "0.05"])
        ctx.run(["basic"], env=env)
    finally:
        holder.communicate(timeout=300)
    pids = {shim_trace.Trace(ctx.path(f)).pid for f in os.listdir(ctx.tmp)
            if f.startswith("same") and f.endswith(".mst")}
    expect(holder.pid in pids and len(pids) >= 2, "traces by pid: %s (holder %d)" %
           (pids, holder.pid))
    # %r: the documented order, global ranks first.
    order = ["RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "LOCAL_RANK"]
    for i, var in enumerate(order):
        env = {"MEMSHIM_TRACE": ctx.path("rank-%r.mst")}
        for j, later in enumerate(order[i:]):
            env[later] = str(10 * (i + 1) + j)
        ctx.run(["basic"], env=env)
        want = ctx.path("rank-%d.mst" % (10 * (i + 1)))
        expect(os.path.exists(want), "%s set (and those after it): no %s" % (var, want))
        expect(shim_trace.Trace(want).rank == 10 * (i + 1), "rank in the header")
    # The same file for both: the trace is kept, the summary goes to stderr.
    both = ctx.path("both.mst")
    p = ctx.run(["basic"], env={"MEMSHIM_TRACE": both, "MEMSHIM_REPORT": both})
    expect("name the same file" in p.stderr and "memshim summary" in p.stderr, p.stderr)
    expect(shim_trace.Trace(both).summary(), "the trace was overwritten")


def s_report_wrapper(ctx):
    report = ctx.path("report.txt")
    env = {"MEMSHIM_REPORT": report}
    # A shell wrapper (like pyenv's python3) that runs the worker, then exits after it.
    p = ctx.run(["-c", '"$0" basic; true', ctx.prog], env=env, argv0="/bin/sh")
    expect("memshim summary" not in p.stderr, "the wrapper printed a summary")
    with open(report) as f:
        text = f.read()
    expect("allocations 2, frees 2" in text, "the worker's report was overwritten:\n" + text)
    q = ctx.run(["-c", "true"], env={"MEMSHIM_REPORT": "stderr"}, argv0="/bin/sh")
    expect(q.stderr == "", "a process without CUDA printed: %r" % q.stderr)
    # A report that cannot be written says why, and the summary is not lost.
    r = ctx.run(["basic"], env={"MEMSHIM_REPORT": ctx.path("no/such/dir/r.txt")})
    expect("cannot open for writing" in r.stderr and "memshim summary" in r.stderr, r.stderr)


def s_driver_oom(ctx):
    p = ctx.run(["oom", str(64 * 1024 * MIB)], env={"SIMCUDA_DEVICE_MEMORY": "1g",
                                                      "MEMSHIM_REPORT": "stderr"})
    expect("oom 2" in p.stdout, "cudaMalloc did not fail with cudaErrorMemoryAllocation: %s" %
           p.stdout)
    expect("memshim: out of memory on device 0: the driver refused" in p.stderr, p.stderr)
    expect("top call sites" in p.stderr and "ceiling   none" in p.stderr, p.stderr)
    expect("failed 1" in p.stderr, "the summary does not count it:\n" + p.stderr)
    # Nothing configured that reads call sites (no trace, report or ceiling): none is captured,
    # and the screen says what would record them.
    q = ctx.run(["oom", str(64 * 1024 * MIB)], env={"SIMCUDA_DEVICE_MEMORY": "1g"})
    expect("the driver refused" in q.stderr and
           "no call sites: recorded only with MEMSHIM_TRACE, MEMSHIM_REPORT or a ceiling" in
           q.stderr, q.stderr)


# --- analyzer inputs ---------------------------------------------------------------------------

def analyze(ctx, *args):
    return subprocess.run([ctx.analyze] + list(args), capture_output=True, text=True, timeout=30)


def s_analyzer_inputs(ctx):
    good = ctx.path("good.mst")
    ctx.run(["basic"], env={"MEMSHIM_TRACE": good})
    folder = ctx.path("traces")
    os.mkdir(folder)
    shutil.copy(good, os.path.join(folder, "a.mst"))
    os.mkfifo(os.path.join(folder, "fifo.mst"))
    os.symlink("/nonexistent/x.mst", os.path.join(folder, "dangling.mst"))
    os.mkdir(os.path.join(folder, "dir.mst"))
    for cmd in ("summary", "dump", "timeline", "whatif"):
        extra = {"timeline": ["-o", ctx.path("t.svg")], "whatif": ["--limit", "1m"]}.get(cmd, [])
        argv = [cmd] + extra + ([folder] if cmd != "dump" else [os.path.join(folder, "a.mst")])
        p = analyze(ctx, *argv)
        expect(p.returncode == 0, "%s over the folder: %d %s" % (cmd, p.returncode, p.stderr))
    p = analyze(ctx, "summary", folder)
    skipped = [ln for ln in p.stderr.splitlines() if "skipped" in ln]
    expect(len(skipped) == 3, "skip lines: %s" % p.stderr)
    p = analyze(ctx, "summary", os.path.join(folder, "fifo.mst"))
    expect(p.returncode != 0 and "not a regular file" in p.stderr, p.stderr)
    with open(good, "rb") as f:
        data = f.read()
    cut = len(data) // 2
    cases = {"second.mst": (data[:cut] + data, "two processes wrote this file"),
             "hole.mst": (data[:cut] + b"\0" * 4096 + data[cut:], "another process truncated")}
    for name, (blob, cause) in cases.items():
        with open(ctx.path(name), "wb") as f:
            f.write(blob)
        p = analyze(ctx, "summary", ctx.path(name))
        expect(cause in p.stderr, "%s: the error does not name the cause: %s" % (name, p.stderr))
    # One bit flipped past the file header (which no checksum covers), 60 times: never read
    # as if nothing happened.
    big = ctx.path("big.mst")
    ctx.run(["stress", 2, 200], env={"MEMSHIM_TRACE": big})
    with open(big, "rb") as f:
        data = f.read()
    hdr = shim_trace.HEADER.size
    rng = random.Random(21)
    silent = 0
    for i in range(60):
        blob = bytearray(data)
        pos = rng.randrange(hdr, len(blob))
        blob[pos] ^= 1 << rng.randrange(8)
        with open(ctx.path("flip.mst"), "wb") as f:
            f.write(blob)
        p = analyze(ctx, "summary", ctx.path("flip.mst"))
        silent += p.returncode == 0 and not p.stderr.strip()
    print("analyzer_inputs: %d of 60 bit-flipped traces read without a word" % silent)
    expect(silent == 0, "%d of 60 bit-flipped traces were read without a word" % silent)


# --- 8 threads under spill ---------------------------------------------------------------------

def report_rows_add_up(text):
    """Each `resident at exit` figure equals the sum of its category rows (to display
    rounding)."""
    units = {"B": 1, "KiB": 1024, "MiB": MIB, "GiB": 1024 * MIB}

    def parse(s):
        v, u = s.split()
        return float(v) * units[u]

    blocks = re.findall(r"resident at exit ([\d.]+ \w+), .*\n  resident at exit by category:\n"
                        r"((?:    .*\n)*)", text)
    expect(blocks, "no per-device block in the report:\n" + text)
    for total, rows in blocks:
        s = sum(parse(" ".join(r.split()[1:3])) for r in rows.splitlines()
                if "(nothing)" not in r)
        expect(abs(s - parse(total)) <= 0.01 * max(parse(total), 1) + 1024,
               "rows add up to %d, resident %s:\n%s" % (s, total, text))


def s_spill_stress(ctx):
    trace, report = ctx.path("stress.mst"), ctx.path("stress.txt")
    env = {"MEMSHIM_TRACE": trace, "MEMSHIM_REPORT": report, "MEMSHIM_POLICY": "spill",
           "MEMSHIM_LIMIT": "16m", "MEMSHIM_STACK_DEPTH": "0", "SIMCUDA_DEVICE_MEMORY": "1g"}
    p = ctx.run(["stress", 8, 1200], env=env, timeout=500)
    m = re.search(r"stress copyfail (\d+) allocfail (\d+) mismatch (\d+)", p.stdout)
    expect(m, p.stdout)
    copyfail, allocfail, mismatch = map(int, m.groups())
    s = ctx.summary(trace)
    with open(report) as f:
        text = f.read()
    refused = re.search(r"calls refused out of memory .*: (\d+)", text)
    refused = int(refused.group(1)) if refused else 0
    failed = int(re.search(r"failed (\d+)", text).group(1))
    print("spill_stress: unknown frees %d, copies failed %d (OOM records %d, report %d), "
          "allocations failed %d (report %d), mismatches %d" %
          (s["unknown_frees"], copyfail, s["ooms"], refused, allocfail, failed, mismatch))
    expect(s["unknown_frees"] == 0, "%d frees of unknown addresses" % s["unknown_frees"])
    expect(mismatch == 0, "%d copies read back other bytes" % mismatch)
    expect(refused == copyfail, "%d copies failed, the report counts %d" % (copyfail, refused))
    expect(failed == allocfail, "%d allocations failed, the report counts %d" %
           (allocfail, failed))
    at_ceiling = int(re.search(r"at the ceiling (\d+)", text).group(1))
    expect(at_ceiling == allocfail, "%d allocations failed at the ceiling, the report says %d" %
           (allocfail, at_ceiling))
    expect(s["ooms"] == copyfail + allocfail, "%d OOM records for %d failures" %
           (s["ooms"], copyfail + allocfail))
    report_rows_add_up(text)


SCENARIOS = {
    "setuid": s_setuid, "env_extremes": s_env_extremes, "fork": s_fork, "exec": s_exec,
    "signals": s_signals, "exit_paths": s_exit_paths, "names": s_names,
    "report_wrapper": s_report_wrapper, "driver_oom": s_driver_oom, "spill_stress": s_spill_stress,
    "analyzer_inputs": s_analyzer_inputs,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--shim", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--linked", required=True)
    ap.add_argument("--analyze", required=True)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    return scenario.run(SCENARIOS, args.scenario, Ctx(args), args.keep)


if __name__ == "__main__":
    sys.exit(main())
