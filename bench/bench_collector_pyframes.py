#!/usr/bin/env python3
"""bench_collector_pyframes: what a call stack with Python frames costs a CPython program.

An NVTX push+pop pair at the bottom of DEPTH Python frames (default 30), timed side by side
in fresh processes: no collector / `trainprof record --stacks none` / `--stacks all` (a
stack at every push: the native unwind plus the walk of the thread's Python frames, then
the thread's stack cache). The difference between the last two is the price of one captured
stack; goal <= 2000 ns at 30 Python frames. A fourth setup pushes from 512 distinct lines,
so no stack is ever in the thread's 256-slot cache: every capture takes the locked slow path
(codes and lines from the tables, the merge with the native frames, the writer's stack
table). Each setup: 100 batches of 2000 pairs, a pause between batches so the writer drains;
reported: the median and best batch, ns per pair; the parent checks each trace (every push
written, none dropped: a dropped record is cheaper and would flatter the figure).

Inside the interpreter, without the rest of the hook or NVTX, with CAPTURE_LIB (bench/
bench_pyframes_capture.c, build/bench/libbench_pyframes_capture.so) loaded by the child at
the same depth: the Python walk alone, and a whole capture (native unwind + walk + hash +
cache hit), best of 5 rounds of 100000 calls each: the figures least disturbed by a busy
machine.

usage: bench_collector_pyframes.py TRAINPROF PYTHON [nvtx|ctypes:HELPER.so] [DEPTH]
                                   [CAPTURE_LIB]
  nvtx (default): pushes through the nvtx PyPI package (PYTHON must have it)
  ctypes:HELPER.so: through ctypes.PyDLL into tests/collector/pyframes_helper.c
    (build/tests/collector/libtp_pyhelper.so), for interpreters without the package"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

BATCH, BATCHES = 2000, 100


def pushers(how):
    if how == "nvtx":
        import nvtx

        return nvtx.push_range, nvtx.pop_range, "bench"
    import ctypes

    lib = ctypes.PyDLL(how.split(":", 1)[1])
    lib.tph_push.argtypes = [ctypes.c_char_p]
    return lib.tph_push, lib.tph_pop, b"bench"


def distinct_sites(push, pop, name, n=512):
    """One function with `n` push lines: every push a different (code, offset), so a
    different stack."""
    src = "def sites(push, pop, name):\n" + "    push(name); pop()\n" * n
    ns = {}
    exec(compile(src, "<bench-distinct-sites>", "exec"), ns)
    return lambda: ns["sites"](push, pop, name), n


def measure(how, distinct):
    push, pop, name = pushers(how)
    if distinct:
        run, per = distinct_sites(push, pop, name)
    else:
        def run():
            for _ in range(BATCH):
                push(name)
                pop()
        per = BATCH
    for _ in range(3):
        run()
    time.sleep(0.05)
    out = []
    for _ in range(BATCHES if not distinct else BATCHES // 2):
        reps = max(1, BATCH // per)
        t0 = time.perf_counter_ns()
        for _ in range(reps):
            run()
        out.append((time.perf_counter_ns() - t0) / (reps * per))
        time.sleep(0.003)  # let the writer drain the ring
    print(f"{statistics.median(out):.1f} {min(out):.1f}")


def in_process(lib_path):
    import ctypes

    lib = ctypes.PyDLL(lib_path)
    lib.bench_walk.restype = lib.bench_capture.restype = ctypes.c_double
    print(f"{lib.bench_frames()} {lib.bench_walk(100000):.1f} {lib.bench_capture(100000):.1f}")


def down(n, how, distinct):
    if n <= 2:  # this frame and <module> make the last two
        return in_process(how[7:]) if how.startswith("inproc:") else measure(how, distinct)
    return down(n - 1, how, distinct) or 0  # not a tail position: keeps the frame


def run_child(tp, python, how, depth, stacks, distinct, trace):
    cmd = [python, os.path.abspath(__file__), "--child", how, str(depth), str(int(distinct))]
    if stacks:
        cmd = [tp, "record", "--force", "--stacks", stacks, "-o", trace, "--"] + cmd  # one file, reused
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench_collector_pyframes: child failed: {r.stderr[-2000:]}")
    med, best = (float(x) for x in r.stdout.split()[:2])
    pushes = dropped = 0
    if stacks:
        info = json.loads(subprocess.run([tp, "info", "--json", trace], capture_output=True,
                                         text=True).stdout)
        pushes, dropped = info["records"].get("NVTX_PUSH", 0), info["dropped_total"]
    return med, best, pushes, dropped


def main():
    if sys.argv[1] == "--child":
        return down(int(sys.argv[3]), sys.argv[2], sys.argv[4] == "1")
    tp, python = sys.argv[1], sys.argv[2]
    how = sys.argv[3] if len(sys.argv) > 3 else "nvtx"
    depth = int(sys.argv[4]) if len(sys.argv) > 4 else 30
    version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                             capture_output=True, text=True).stdout.strip()
    print(f"CPython {version}, pushes through {how.split(':')[0]}, {depth} Python frames, "
          f"{BATCHES} batches of {BATCH} pairs")
    print(f"{'setup':44} {'median ns':>10} {'best ns':>9} {'pushes':>9} {'dropped':>8}")
    setups = [("no collector", None, 0), ("collector, no stacks", "none", 0),
              ("collector, --stacks all", "all", 0),
              ("collector, --stacks all, 512 call sites", "all", 1)]
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, stacks, distinct in setups:
            res[label] = run_child(tp, python, how, depth, stacks, distinct,
                                   os.path.join(tmp, "b.tprof"))
            med, best, pushes, dropped = res[label]
            print(f"{label:44} {med:10.1f} {best:9.1f} {pushes:9d} {dropped:8d}")
    cost = res["collector, --stacks all"][0] - res["collector, no stacks"][0]
    print(f"one captured stack with {depth} Python frames, difference of medians: {cost:.0f} ns "
          "(goal <= 2000)")
    if len(sys.argv) > 5:
        r = subprocess.run([python, os.path.abspath(__file__), "--child",
                            "inproc:" + os.path.abspath(sys.argv[5]), str(depth), "0"],
                           capture_output=True, text=True)
        frames, walk, capture = r.stdout.split()
        print(f"in the interpreter ({frames} Python frames seen): walk {walk} ns, whole capture "
              f"{capture} ns (best of 5 x 100000)")
        cost = float(capture)
    return 0 if cost <= 2000 and all(r[3] == 0 for r in res.values()) else 1


sys.exit(main())
