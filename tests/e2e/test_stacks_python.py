#!/usr/bin/env python3
"""Launching stacks of a real CPython program and of the trainer, end to end.

usage: test_stacks_python.py TRAINPROF HELPER.so VENV TRAINER
`trainprof record --stacks all` runs tests/e2e/stacks_prog.py (the venv's CPython with the nvtx
package), which launches kernels of known durations through stacks_helper.so from known
functions at known lines (`# @tag` markers), pushes NVTX ranges, launches from a C thread
without Python state and from a forked child. Checked, each against the numbers the program
chose (never a timing):
(a) report JSON "launch_stacks": one group per launching line, Python frames first, in order
    (function, line), with the kernels' exact count and GPU time; the C thread's group has
    native frames only (tsh_launch); the child's group is there; the text report and the TUI's
    Stacks view name the same lines; --stack-depth 1 keeps one frame per group; ranges of one
    name in two NVTX domains stay two ranges, and marks two marks (report JSON and text);
(b) SQLite export: the recording in one database (both processes, rows tagged with their
    pid), the ranges' push stacks (nvtx_ranges.stack_id) in the symbolized frames table: the
    Python frames of the push, in order, between native frames; tsh_launch symbolized with its
    file and line; the domains table names the second domain;
(c) folded export: weights per leaf equal the program's GPU time (gpu), the ranges' durations
    from the SQLite export (range), the API calls' (cpu); frames root first;
(d) the trainer (C, CPU device) under --stacks api: folded GPU weights per kernel equal the
    SQLite export's sum of the kernels whose launch call has a stack, and their sum the report's
    launch_stacks total minus its no-stack part.
The venv (scripts/install-deps.sh) is required: without it the test skips (77), or fails when
CI=true."""
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

TP, HELPER, VENV, TRAINER = sys.argv[1:5]
PROG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stacks_prog.py")
PY = os.path.join(VENV, "bin", "python")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tp_check import check, failures  # noqa: E402  (tests/tp_check.py)


def run(*args, **kw):
    return subprocess.run([TP, *args], capture_output=True, text=True, **kw)


with open(PROG, encoding="utf-8") as f:
    LINE = {m.group(1): i + 1 for i, line in enumerate(f)
            for m in [re.search(r"# @(\w+)", line)] if m}

# kernel -> (count, GPU ns, Python frames of the launch, innermost first)
WANT = {
    "gemm_bwd": (8, 8 * 70000, [("backward", LINE["bwd_launch"]), ("train_step", LINE["step_bwd"]),
                                ("<module>", LINE["main_step"])]),
    "gemm_fwd": (12, 12 * 40000, [("forward", LINE["fwd_launch"]), ("train_step", LINE["step_fwd"]),
                                  ("<module>", LINE["main_step"])]),
    "c_thread_kernel": (5, 5 * 30000, []),
    "child_kernel": (1, 50000, [("child", LINE["child_launch"]), ("<module>", LINE["fork_call"])]),
    "lib_kernel": (1, 20000, None),  # launched inside unittest.mock: see check_own_code
}
TOTAL = sum(c for _, c, _ in WANT.values())


def py_frames(frames):
    return [(x["function"], x["line"]) for x in frames if x["python"]]


def check_own_code(frames):
    """A launch from inside a library's Python code: the group reads the call (the innermost
    Python frame, unittest.mock's), then the program's own line, the library frames between
    left out and counted; every frame says whose it is."""
    got = [(x["label"], x["library"], x["skipped"]) for x in frames]
    check(len(frames) == 3 and frames[0]["python"] and frames[0]["library"]
          and frames[0]["file"].endswith("unittest/mock.py") and frames[0]["skipped"] == 0
          and py_frames(frames[1:]) == [("through_library", LINE["lib_call"]),
                                        ("<module>", LINE["lib_main"])]
          and not frames[1]["library"] and frames[1]["skipped"] >= 1
          and not frames[2]["library"] and frames[2]["skipped"] == 0,
          f"lib_kernel: frames {got}")


def check_report(trace):
    r = run("report", trace, "--format", "json")
    if not check(r.returncode == 0, f"report: {r.stderr}"):
        return
    ranks = json.loads(r.stdout)["ranks"]
    check(len(ranks) == 1, f"one rank for the recording, got {len(ranks)}")
    ls = ranks[0]["launch_stacks"]
    check(ls["gpu_ns"] == TOTAL and ls["n_ops"] == 27 and ls["no_stack_ops"] == 0,
          f"launch_stacks totals: {ls['gpu_ns']} ns, {ls['n_ops']} ops, {ls['no_stack_ops']}")
    groups = {tuple(k["name"] for k in g["kernels"]): g for g in ls["stacks"]}
    check(sorted(groups) == sorted((k,) for k in WANT), f"groups: {sorted(groups)}")
    for name, (count, ns, frames) in WANT.items():
        g = groups.get((name,))
        if not check(g is not None, f"no group launched {name}"):
            continue
        check(g["count"] == count and g["gpu_ns"] == ns,
              f"{name}: {g['count']} ops {g['gpu_ns']} ns, want {count} {ns}")
        if frames is None:
            check_own_code(g["frames"])
        elif frames:
            check(py_frames(g["frames"]) == frames and g["frames"][0]["python"],
                  f"{name}: frames {[(x['label']) for x in g['frames']]}, want {frames}")
        else:
            funcs = [x["function"] for x in g["frames"]]
            check(not py_frames(g["frames"]) and funcs[:1] in (["tsh_launch"], ["tp_activity_api"])
                  and "tsh_launch" in funcs and "thread_main" in funcs,
                  f"{name}: native frames expected, got {[x['label'] for x in g['frames']]}")
    ranges = {(x["domain"], x["name"]): x["count"] for x in ranks[0]["ranges"]}
    check(ranges == {("", "forward"): 4, ("", "backward"): 4, ("aux", "forward"): 1},
          f"ranges by domain and name: {ranges}")
    marks = {(x["domain"], x["name"]): x["count"] for x in ranks[0]["marks"]}
    check(marks == {("", "step-done"): 4, ("aux", "step-done"): 1}, f"NVTX marks: {marks}")
    order = [g["kernels"][0]["name"] for g in ls["stacks"]]
    check(order == ["gemm_bwd", "gemm_fwd", "c_thread_kernel", "child_kernel", "lib_kernel"],
          f"groups by GPU time: {order}")
    r = run("report", trace)
    text = r.stdout
    check(re.search(r"\n  \[aux\] forward +1 ", text) is not None, "text report: [aux] forward")
    check(re.search(r"\n  \[aux\] step-done +1 ", text) is not None
          and re.search(r"\n  step-done +4 ", text) is not None, "text report: NVTX marks")
    sec = text[text.find("GPU time by launching stack"):]
    want = [f"stacks_prog.py:{LINE['bwd_launch']} in backward",
            f"stacks_prog.py:{LINE['step_bwd']} in train_step",
            f"stacks_prog.py:{LINE['main_step']} in <module>", "-> gemm_bwd x8"]
    at = [sec.find(w) for w in want]
    check(r.returncode == 0 and -1 not in at and at == sorted(at),
          f"text report's stack section: {at}\n{sec[:1500]}")
    lib = re.search(r"\n +\d+ +\S+ µs +[\d.]+ % +1  mock\.py:\d+ in \S+\n"
                    r" +\.\.\. \d+ library frames?\n +stacks_prog\.py:(\d+) in through_library\n",
                    sec)
    check(lib is not None and int(lib.group(1)) == LINE["lib_call"],
          f"text report: the call in mock.py, the library frames counted, then the program's"
          f" line\n{sec}")
    r = run("report", trace, "--format", "json", "--stack-depth", "1")
    ls1 = json.loads(r.stdout)["ranks"][0]["launch_stacks"] if r.returncode == 0 else {}
    check(ls1.get("depth") == 1 and all(len(g["frames"]) == 1 for g in ls1.get("stacks", [])),
          f"--stack-depth 1: {ls1.get('depth')}")
    r = run("report", trace, "--stack-depth", "0")
    check(r.returncode == 2 and "--stack-depth" in r.stderr, f"--stack-depth 0: {r.stderr}")
    r = run("tui", trace, "--snapshot", "--view", "stacks", "--width", "150", "--height", "40")
    check(r.returncode == 0 and f"stacks_prog.py:{LINE['bwd_launch']} in backward" in r.stdout
          and "gemm_bwd" in r.stdout and "5 launching stacks" in r.stdout
          and re.search(r"stacks_prog\.py:%d in through_library -> mock\.py:\d+ in "
                        % LINE["lib_call"], r.stdout),
          f"TUI Stacks view: {r.stderr}\n{r.stdout}")


def check_sqlite(trace, db):
    r = run("export", trace, "--format", "sqlite", "-o", db)
    if not check(r.returncode == 0 and "2 processes" in r.stderr, f"sqlite export: {r.stderr}"):
        return None
    con = sqlite3.connect(db)
    pids = [p for p, in con.execute("SELECT pid FROM process ORDER BY start_realtime_ns")]
    check(len(set(pids)) == 2, f"process table: {pids}")
    per_pid = dict(con.execute("SELECT pid, count(*) FROM kernels GROUP BY pid"))
    check(len(pids) == 2 and per_pid.get(pids[0]) == 26 and per_pid.get(pids[1]) == 1,
          f"kernels by pid: {per_pid}")
    child = con.execute("SELECT k.pid FROM kernels_named k WHERE name = 'child_kernel'").fetchall()
    check(len(pids) == 2 and child == [(pids[1],)], f"child's kernel tagged {child}")
    for name, fn, push, call in (("forward", "forward", "fwd_push", "step_fwd"),
                                 ("backward", "backward", "bwd_push", "step_bwd")):
        stacks = con.execute("SELECT stack_id, pid FROM nvtx_ranges_named WHERE name = ? AND "
                             "stack_id != 0 AND domain_name IS NULL", (name,)).fetchall()
        check(len(stacks) == 4, f"{name}: {len(stacks)} ranges with a stack, want 4")
        for stack, pid in sorted(set(stacks)):
            rows = con.execute("SELECT depth, kind, function, line FROM frames WHERE stack_id = ? "
                               "AND pid = ? ORDER BY depth, inline_depth", (stack, pid)).fetchall()
            py = [(f, ln) for _, k, f, ln in rows if k == "python"]
            want = [(fn, LINE[push]), ("train_step", LINE[call]), ("<module>", LINE["main_step"])]
            check(py[1:] == want and py[:1] and py[0][0] == "push_range",
                  f"{name}: Python frames of the push {py}, want push_range then {want}")
            depths = [d for d, k, _, _ in rows if k == "python"]
            native = [d for d, k, _, _ in rows if k != "python"]
            check(depths and native and min(native) < min(depths) and max(native) > max(depths),
                  f"{name}: Python frames not between native frames: {rows}")
    # whose code each frame is, as the report's frames say (common/tp_libpath): the program's
    # Python frames 0, unittest.mock's 1, every native frame of this Python program 1
    lib = con.execute("SELECT f.kind, f.file, f.library FROM kernels_named k JOIN api a ON "
                      "a.correlation = k.correlation AND a.pid = k.pid JOIN frames f ON "
                      "f.stack_id = a.stack_id AND f.pid = a.pid WHERE k.name = 'lib_kernel'"
                      ).fetchall()
    check(lib and all(v == (0 if k == "python" and (fl or "").endswith("stacks_prog.py") else 1)
                      for k, fl, v in lib)
          and any(k == "python" and v == 0 for k, _, v in lib)
          and any(k == "python" and (fl or "").endswith("unittest/mock.py") and v == 1
                  for k, fl, v in lib), f"frames.library of lib_kernel's launch: {lib}")
    sym = con.execute("SELECT DISTINCT f.file, f.line FROM api_named a JOIN frames f ON "
                      "f.stack_id = a.stack_id AND f.pid = a.pid WHERE f.function = 'tsh_launch'"
                      ).fetchall()
    check(sym and all(f and f.endswith("stacks_helper.c") and ln and ln > 0 for f, ln in sym),
          f"tsh_launch symbolized: {sym}")
    unnamed = con.execute("SELECT count(*) FROM nvtx_ranges n WHERE n.domain != 0 AND NOT EXISTS "
                          "(SELECT 1 FROM domains d WHERE d.domain_id = n.domain AND "
                          "d.pid = n.pid)").fetchone()[0]
    check(unnamed == 0, f"{unnamed} ranges in a domain missing from the domains table")
    aux = con.execute("SELECT n.name, d.name, f.function, f.line FROM nvtx_ranges_named n "
                      "JOIN domains d ON d.domain_id = n.domain AND d.pid = n.pid JOIN frames f ON "
                      "f.stack_id = n.stack_id AND f.pid = n.pid AND f.kind = 'python' "
                      "AND f.function = 'aux_forward'").fetchall()
    check(aux == [("forward", "aux", "aux_forward", LINE["aux_push"])],
          f"the aux domain's range: {aux}")
    return con


def folded(trace, out, *extra):
    r = run("export", trace, "--format", "folded", "-o", out, *extra)
    if not check(r.returncode == 0, f"folded {extra}: {r.stderr}"):
        return []
    lines = []
    for ln in open(out, encoding="utf-8"):
        stack, _, w = ln.rstrip("\n").rpartition(" ")
        lines.append((stack.split(";"), int(w)))
    return lines


def by_leaf(lines):
    s = {}
    for frames, w in lines:
        s[frames[-1]] = s.get(frames[-1], 0) + w
    return s


def check_folded(trace, con, d):
    lines = folded(trace, os.path.join(d, "p.folded"))
    check(sum(w for _, w in lines) == TOTAL, f"folded gpu sum {sum(w for _, w in lines)}")
    check(by_leaf(lines) == {k: v[1] for k, v in WANT.items()}, f"folded by kernel {by_leaf(lines)}")
    for frames, _ in lines:
        if frames[-1] != "gemm_fwd":
            continue
        want = [f"stacks_prog.py:{LINE[t]} in {f}"
                for f, t in (("<module>", "main_step"), ("train_step", "step_fwd"),
                             ("forward", "fwd_launch"))]
        at = [frames.index(w) if w in frames else -1 for w in want]
        check(-1 not in at and at == sorted(at), f"folded gemm_fwd root first: {frames}")
    if con is None:
        return
    lines = folded(trace, os.path.join(d, "r.folded"), "--weight", "range", "--force")
    want = dict(con.execute("SELECT name, sum(end - start) FROM nvtx_ranges_named "
                            "WHERE stack_id != 0 GROUP BY name"))
    check(by_leaf(lines) == want and len(want) >= 2, f"range weights {by_leaf(lines)} != {want}")
    lines = folded(trace, os.path.join(d, "c.folded"), "--weight", "cpu")
    check(by_leaf(lines) == {"tshLaunchKernel": 27 * 1000}, f"cpu weights {by_leaf(lines)}")
    r = run("export", trace, "--format", "folded", "--no-symbols", "-o", "/dev/stdout")
    check(r.returncode == 0 and all(re.search(r"\+0x[0-9a-f]+;|:\d+ in |^[^;]*;", ln)
                                    for ln in r.stdout.splitlines()) and "tsh_launch" not in r.stdout,
          f"folded --no-symbols keeps module+offset: {r.stdout[:300]}")
    r = run("export", trace, "--format", "folded", "--weight", "wall")
    check(r.returncode == 2 and "--weight" in r.stderr, f"--weight wall: {r.stderr}")


def check_trainer(d):
    trace = os.path.join(d, "trainer.tprof")
    r = subprocess.run([TP, "record", "--stacks", "api", "-o", trace, "--", TRAINER, "--device",
                        "cpu", "--steps", "4"], capture_output=True, text=True)
    if not check(r.returncode == 0, f"record trainer: {r.stderr}"):
        return
    db = os.path.join(d, "trainer.sqlite")
    check(run("export", trace, "--format", "sqlite", "-o", db).returncode == 0, "trainer sqlite")
    con = sqlite3.connect(db)
    want = {}
    for table, name in (("kernels_named", "k.name"), ("memcpy_named", "k.name"),
                        ("memset", "'Memset (Device)'")):
        q = (f"SELECT {name}, sum(k.end - k.start) FROM {table} k JOIN api a ON "
             "a.correlation = k.correlation AND a.pid = k.pid WHERE a.stack_id != 0 GROUP BY 1")
        for n, ns in con.execute(q):
            want[n] = want.get(n, 0) + ns
    mods = con.execute("SELECT DISTINCT module, library FROM frames WHERE module IS NOT NULL"
                       ).fetchall()
    check(any(m.endswith("trainprof-trainer") for m, _ in mods) and
          all(v == (0 if m.endswith("trainprof-trainer") else 1) for m, v in mods
              if m.endswith("trainprof-trainer") or m.startswith(("/lib/", "/usr/lib"))),
          f"trainer frames.library: the program's 0, the system's libraries 1 ({mods})")
    lines = folded(trace, os.path.join(d, "trainer.folded"))
    got = by_leaf(lines)
    check(got == want and len(want) >= 3, f"trainer folded by kernel {got} != sqlite {want}")
    named = [f for frames, _ in lines for f in frames[:-1]]
    check(named and all(not re.fullmatch(r"0x[0-9a-f]+|.*\+0x[0-9a-f]+", f) or "lib" in f
                        for f in named if "trainprof-trainer" in f),
          "trainer frames are symbolized")
    r = run("report", trace, "--format", "json")
    ls = json.loads(r.stdout)["ranks"][0]["launch_stacks"]
    check(sum(got.values()) == ls["gpu_ns"] - ls["no_stack_gpu_ns"] and ls["stacks"],
          f"folded sum {sum(got.values())} vs report {ls['gpu_ns']} - {ls['no_stack_gpu_ns']}")


def main():
    if not os.path.exists(PY) or subprocess.run([PY, "-c", "import nvtx"]).returncode != 0:
        print("no venv with the nvtx package at", VENV)
        return 1 if os.environ.get("CI") == "true" else 77
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "prog.tprof")
        r = subprocess.run([TP, "record", "--stacks", "all", "-o", trace, "--", PY, PROG, HELPER],
                           capture_output=True, text=True)
        if check(r.returncode == 0, f"record: {r.returncode} {r.stderr}"):
            check_report(trace)
            con = check_sqlite(trace, os.path.join(d, "prog.sqlite"))
            check_folded(trace, con, d)
        check_trainer(d)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


sys.exit(main())
