#!/usr/bin/env python3
"""Python frames in the collector's stacks, end to end with real CPython programs.

usage: test_collector_pyframes.py TRAINPROF HELPER.so PYSTACK_DUMP VENV
       test_collector_pyframes.py --fake TRAINPROF FAKE_CPYTHON PYSTACK_DUMP
`trainprof record --stacks all` runs tests/collector/pyframes_prog.py, which pushes NVTX
ranges (through ctypes into pyframes_helper.c, and through the nvtx PyPI package), makes a
device-API call and reports an allocation failure from known functions at known lines
(`# @tag` markers). Checked in the trace (pystack_dump), the SQLite export and the report:
(a) each stack holds exactly the Python frames of its call site, innermost first, function
    and line, surrounded by native frames, every group of them followed by a native frame of
    the interpreter (its evaluation loop): the native and Python stacks interleaved;
(b) with the GIL released around the C call (ctypes.CDLL) the frames are still there;
(c) a pthread created in C while a Python thread holds the GIL gets native frames only;
    a threading.Thread, a generator, 42 frames of recursion, Latin-1 and UCS-2 function names,
    a callback from C into Python (C frames between two groups), 4 threads capturing at once
    (GIL released), an atexit handler and a fork child all work;
(d) the SQLite export names the frames of an API call's stack (python_code, stacks_python),
    the report's JSON finding for the allocation failure lists them, and its text says
    `pyframes_prog.py:LINE in oom`;
(e) CPython versions without Python-frame support (3.7 and older) record native frames only.
The venv (scripts/install-deps.sh: .deps/pyenv with the nvtx package) is required: without
it the test skips (77), or fails when CI=true. Every other CPython found (pyenv, /usr/bin)
runs the ctypes part too; TP_TEST_PYTHONS adds more (colon-separated).
With --fake (no Python needed): fake_cpython.c, a stand-in exporting the C-API symbols,
claims CPython 3.7, then a 3.11 whose thread state leads to unreadable memory; both must be
recorded with native frames only, and the second must not crash the program."""
import glob
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

FAKE = sys.argv[1] == "--fake"
if FAKE:
    TP, HELPER, DUMP = sys.argv[2:5]  # HELPER: the fake_cpython program
else:
    TP, HELPER, DUMP, VENV = sys.argv[1:5]
PROG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyframes_prog.py")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tp_check import check, failures  # noqa: E402  (tests/tp_check.py)
from tp_pythons import cpythons, version  # noqa: E402  (tests/tp_pythons.py)


def markers():
    with open(PROG, encoding="utf-8") as f:
        return {m.group(1): i + 1 for i, line in enumerate(f)
                for m in [re.search(r"# @(\w+)", line)] if m}


LINE = markers()


def expected(minor):
    """Range name -> its Python frames, innermost first: (function, line or None)."""
    q = (lambda cls, f: f"{cls}.{f}") if minor >= 11 else (lambda cls, f: f)
    deep = [("recurse", LINE["deep_push"])] + [("recurse", LINE["deep_call"])] * 40
    return {
        "held-leaf": [("leaf_held", LINE["held_push"]), ("caller_held", LINE["held_call"]),
                      ("<module>", LINE["main_held"])],
        "released-leaf": [("leaf_released", LINE["released_push"]),
                          (q("Model", "forward"), LINE["released_call"]),
                          ("<module>", LINE["main_released"])],
        "in-generator": [("gen", LINE["gen_push"]), ("consume", LINE["gen_call"]),
                         ("<module>", LINE["main_gen"])],
        "deep": deep + [("<module>", LINE["main_deep"])],
        "py-thread": [("in_thread", LINE["thread_push"]), (q("Thread", "run"), None),
                      (q("Thread", "_bootstrap_inner"), None), (q("Thread", "_bootstrap"), None)],
        "latin1-name": [("schritt_größe", LINE["latin1_push"]), ("<module>", LINE["main_latin1"])],
        "ucs2-name": [("βήμα", LINE["ucs2_push"]), ("<module>", LINE["main_ucs2"])],
        "nvtx-leaf": [("push_range", None), ("nvtx_leaf", LINE["nvtx_push"]),
                      ("<module>", LINE["main_nvtx"])],
        "nvtx-start": [("start_range", None), ("nvtx_leaf", LINE["nvtx_start"]),
                       ("<module>", LINE["main_nvtx"])],
        "fork-child": [("child_work", LINE["fork_push"]), ("fork_and_wait", LINE["fork_call"]),
                       ("<module>", LINE["main_fork"])],
        "at-exit": [("at_exit", LINE["exit_push"])],
        "callback": [("in_callback", LINE["cb_push"]), ("via_c", LINE["cb_call"]),
                     ("<module>", LINE["main_cb"])],
        "parallel": [("worker", LINE["par_push"]), (q("Thread", "run"), None),
                     (q("Thread", "_bootstrap_inner"), None), (q("Thread", "_bootstrap"), None)],
    }


def dump(trace):
    """[(range name, [("py", function, file, line) | ("native", module)])] of a trace."""
    out = subprocess.run([DUMP, trace], capture_output=True, text=True, encoding="utf-8")
    assert out.returncode == 0, out.stderr
    pushes = []
    for line in out.stdout.splitlines():
        if line.startswith("PUSH "):
            pushes.append((line.split()[1], []))
        elif line.startswith("  py "):
            func, rest = line[5:].split(" ", 1)
            file, lineno = rest.rsplit(":", 1)
            pushes[-1][1].append(("py", func, file, int(lineno)))
        elif line.startswith("  native "):
            pushes[-1][1].append(("native", line[9:].split("+")[0]))
    return pushes


def is_interpreter(module):
    return module.startswith("libpython3") or re.fullmatch(r"python3?(\.\d+)?", module)


def check_stack(label, name, frames, want):
    py = [(f[1], f[3]) for f in frames if f[0] == "py"]
    got = [(fn, ln if ln_want is not None else None) for (fn, ln), (_, ln_want) in zip(py, want)]
    if not check(len(py) == len(want) and got == want,
                 f"{label}: {name}: Python frames {py} != {want}"):
        return
    check(frames[0][0] == "native" and frames[-1][0] == "native",
          f"{label}: {name}: Python frames not inside native ones")
    for i, f in enumerate(frames):  # each group ends where its evaluation loop's frame is
        if f[0] == "py" and i + 1 < len(frames) and frames[i + 1][0] == "native":
            check(is_interpreter(frames[i + 1][1]),
                  f"{label}: {name}: Python frames followed by {frames[i + 1][1]}, "
                  "not by the interpreter's evaluation loop")
    check(all(f[2].endswith("pyframes_prog.py") for f in frames
              if f[0] == "py" and f[1] in {w[0] for w in want if w[1] is not None}),
          f"{label}: {name}: file names")


def record(python, label, tmp, extra=()):
    out = os.path.join(tmp, "main.tprof")
    r = subprocess.run([TP, "record", "--stacks", "all", "-o", out, "--", python, PROG, HELPER,
                        *extra], cwd=tmp, capture_output=True, text=True)
    check(r.returncode == 0, f"{label}: record exited {r.returncode}: {r.stderr[-2000:]}")
    children = [p for p in glob.glob(os.path.join(tmp, "*.tprof")) if p != out]
    check(len(children) == 1, f"{label}: fork child traces: {children}")
    return out, children[0] if len(children) == 1 else None


def check_supported(python, minor, label, with_nvtx=False):
    with tempfile.TemporaryDirectory() as tmp:
        main, child = record(python, label, tmp, ["nvtx"] if with_nvtx else [])
        want = expected(minor)
        pushes = dump(main) + (dump(child) if child else [])
        seen = set()
        for name, frames in pushes:
            seen.add(name)
            if name == "c-thread":
                check(frames and not any(f[0] == "py" for f in frames)
                      and frames[0] == ("native", os.path.basename(HELPER)),
                      f"{label}: a C thread got {frames}")
            elif name in want:
                check_stack(label, name, frames, want[name])
            if name == "callback":  # Python, the C function that called back, Python
                kinds = [f[1] if f[0] == "py" else f[1] == os.path.basename(HELPER)
                         for f in frames]
                check("in_callback" in kinds and "via_c" in kinds and True in kinds[
                    kinds.index("in_callback"):kinds.index("via_c")],
                      f"{label}: callback: no {os.path.basename(HELPER)} frame between the "
                      f"Python frames: {frames}")
        names = set(want) - ({"nvtx-leaf", "nvtx-start"} if not with_nvtx else set())
        check(names | {"c-thread"} <= seen, f"{label}: ranges missing: {names - seen}")
        check(sum(name == "parallel" for name, _ in pushes) == 1200,
              f"{label}: parallel pushes: {sum(name == 'parallel' for name, _ in pushes)}")
        if with_nvtx:
            check_exports(main, label)


def check_exports(trace, label):
    """The API call's stack in the SQLite export, the allocation failure's in the report."""
    db = trace + ".db"
    r = subprocess.run([TP, "export", trace, "--format", "sqlite", "-o", db],
                       capture_output=True, text=True)
    check(r.returncode == 0, f"{label}: export: {r.stderr}")
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT sp.function, sp.line, sp.file, sp.module_path FROM api a "
        "JOIN strings s ON s.id = a.name_id JOIN stacks_python sp ON sp.stack_id = a.stack_id "
        "WHERE s.text = 'tph_launch' ORDER BY sp.depth").fetchall()
    py = [(f, ln) for f, ln, _, _ in rows if f is not None]
    check(py == [("api_call", LINE["api_call"]), ("<module>", LINE["main_api"])],
          f"{label}: SQLite stack of the API call: {rows}")
    check(rows and rows[0][3] and rows[0][3].endswith(os.path.basename(HELPER)),
          f"{label}: SQLite stack does not start in the helper: {rows[:1]}")
    con.close()
    r = subprocess.run([TP, "report", trace, "--format", "json"], capture_output=True, text=True)
    check(r.returncode == 0, f"{label}: report: {r.stderr}")
    findings = json.loads(r.stdout)["ranks"][0]["findings"] if r.returncode == 0 else []
    oom = [f for f in findings if f["id"] in ("oom", "fragmentation-oom")]
    frames = [(x["function"], x["line"]) for x in oom[0]["frames"]
              if x["symbols"] == "python"] if oom else []
    check(frames == [("oom", LINE["oom_call"]), ("<module>", LINE["main_oom"])],
          f"{label}: report finding's Python frames: {oom}")
    check(oom and f"pyframes_prog.py:{LINE['oom_call']} in oom" in oom[0]["source"],
          f"{label}: finding source: {oom[0]['source'] if oom else None}")


def check_unsupported(python, label):
    with tempfile.TemporaryDirectory() as tmp:
        main, child = record(python, label, tmp)
        check_native_only(label, main, 10)
        if child:
            check_native_only(label + " fork child", child, 1)


def check_native_only(label, trace, want_ranges):
    pushes = dump(trace)
    check(len(pushes) >= want_ranges, f"{label}: only {len(pushes)} ranges")
    for name, frames in pushes:
        check(frames and all(f[0] == "native" for f in frames),
              f"{label}: {name}: expected native frames only, got {frames[:3]}")


def fake_main():
    """The stand-in: an unsupported version and a layout that does not fit."""
    for mode in ("old", "badlayout"):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "fake.tprof")
            # sampling too: a stand-in without the sampler's symbols, or with a layout that does
            # not fit, records nothing more and must not be harmed
            r = subprocess.run([TP, "record", "--stacks", "all", "--sample-hz", "1000", "-o", out,
                                "--", HELPER, mode],
                               cwd=tmp, capture_output=True, text=True)
            if r.stdout.strip() == "skip":
                print(f"{mode}: process_vm_readv refused here: not checked")
                continue
            if check(r.returncode == 0 and r.stdout.strip() == "pushed",
                     f"fake {mode}: exited {r.returncode}: {r.stdout} {r.stderr[-1000:]}"):
                check_native_only(f"fake {mode}", out, 3)
    print(f"{len(failures)} failure(s)" if failures else "all checks passed")
    return 1 if failures else 0


def main():
    if FAKE:
        return fake_main()
    venv_python = os.path.join(VENV, "bin", "python")
    if not os.access(venv_python, os.X_OK) or subprocess.run(
            [venv_python, "-c", "import nvtx"], capture_output=True).returncode != 0:
        print(f"no venv with the nvtx package at {VENV} (scripts/install-deps.sh makes it)")
        return 1 if os.environ.get("CI") == "true" else 77
    v = version(venv_python)
    check_supported(venv_python, v[1], f"venv {v[0]}.{v[1]}", with_nvtx=True)
    tested = [f"{v[0]}.{v[1]} (venv, nvtx)"]
    for python in cpythons():
        v = version(python)
        if not v or v[0] != 3:
            continue
        label = f"{python} ({v[0]}.{v[1]})"
        if 8 <= v[1] <= 14:
            check_supported(python, v[1], label)
        else:
            check_unsupported(python, label)
        tested.append(label)
    print("tested:", ", ".join(tested))
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("all checks passed")
    return 0


sys.exit(main())
