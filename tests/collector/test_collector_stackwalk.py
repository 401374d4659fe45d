#!/usr/bin/env python3
"""The collector's verified stack walks, end to end (see tests/collector/stackwalk_app.c).

usage: test_collector_stackwalk.py TRAINPROF STACKWALK_APP

`trainprof record --stacks all` runs stackwalk_app with TRAINPROF_STACKS_VERIFY=1, which makes
the collector unwind every stack it took from its walk cache a second time, in full, and
count the differences. Checked: no difference, and most pushes served by the cache (else the
check proves nothing); then, from the SQLite export's symbolized frames, every push's stack
is the path that pushed it: via_f never shows path_g (nor the reverse), deepK has exactly
K + 1 path_deep frames, and so on.
"""
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

N = 300
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print(f"FAIL: {what}")


def main():
    trainprof, app = sys.argv[1:3]
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "t.tprof")
        env = dict(os.environ, TRAINPROF_STACKS_VERIFY="1")
        r = subprocess.run([trainprof, "record", "--stacks", "all", "-o", trace, "--", app],
                           env=env, capture_output=True, text=True, timeout=100)
        check(r.returncode == 0, f"record exit {r.returncode}: {r.stderr[-500:]}")
        m = re.search(r"stack walks verified: (\d+) cached, (\d+) differed", r.stderr)
        check(m is not None, f"no verification line in: {r.stderr[-500:]}")
        if m:
            cached, differed = int(m.group(1)), int(m.group(2))
            check(differed == 0, f"{differed} cached walks differed from a full unwind")
            # 7,206 pushes; the first captures of each path and thread are full walks, and
            # the signal's and the coroutine's are never cached (not on the thread's stack)
            # (5,307-5,308 in RelWithDebInfo; 4,711 when a walk never cached, tagged in the
            # collector's frames, took the far_* pushes that share its stack pointer. The
            # asan preset (-O0, a saved rbp in every frame) gives 5,002: far_*'s 16+ saved
            # rbps are more than a walk keeps, so those are never cached there)
            check(cached >= 4800, f"only {cached} pushes served by the walk cache")
        db = os.path.join(tmp, "t.sqlite")
        r = subprocess.run([trainprof, "export", "--format", "sqlite", "-o", db, trace],
                           capture_output=True, text=True, timeout=100)
        check(r.returncode == 0, f"export exit {r.returncode}: {r.stderr}")
        con = sqlite3.connect(db)
        funcs = {}
        for sid, fn in con.execute(
                "SELECT stack_id, function FROM frames WHERE inline_depth = 0 "
                "ORDER BY stack_id, depth"):
            funcs.setdefault(sid, []).append((fn or "?").split(".")[0])  # path_g.constprop.0
        pushes = {}
        for name, sid in con.execute(
                "SELECT s.text, r.stack_id FROM nvtx_ranges r JOIN strings s ON s.id = r.name_id"):
            pushes.setdefault(name, []).append(funcs.get(sid, []))

    want = {
        "via_f": lambda f: "path_f" in f and "path_g" not in f and "main" in f,
        "via_g": lambda f: "path_g" in f and "path_f" not in f and "main" in f,
        "alloca": lambda f: "path_alloca" in f and "main" in f,
        "realigned": lambda f: "path_realigned" in f and "main" in f,
        "thread_f": lambda f: "path_f" in f and "thread_main" in f and "main" not in f,
        "signal": lambda f: "on_signal" in f,
        "jump_a": lambda f: "jump_deeper" in f and "jump_a" in f and "jump_b" not in f and "main" in f,
        "jump_b": lambda f: "jump_b" in f and "jump_a" not in f and "jump_deeper" not in f and "main" in f,
        "reuse_f": lambda f: "path_f" in f and "path_g" not in f and "reuse_main" in f,
        "reuse_g": lambda f: "path_g" in f and "path_f" not in f and "reuse_main" in f,
        "coroutine": lambda f: "path_f" in f and "coroutine" in f and "main" not in f,
        "far_a": lambda f: f.count("chain") == 16 and "far_a" in f and "far_b" not in f and "main" in f,
        "far_b": lambda f: f.count("chain") == 16 and "far_b" in f and "far_a" not in f and "main" in f,
    }
    for x, y in ("ac", "ad", "bc", "bd"):
        want[f"pair_{x}{y}"] = (lambda x, y: lambda f: (
            f"outer_{x}" in f and f"inner_{y}" in f and
            f"outer_{'b' if x == 'a' else 'a'}" not in f and
            f"inner_{'d' if y == 'c' else 'c'}" not in f and "main" in f))(x, y)
    for k in range(4):
        want[f"deep{k}"] = (lambda k: lambda f: f.count("path_deep") == k + 1 and "main" in f)(k)
    for name, ok in want.items():
        stacks = pushes.get(name, [])
        n = 6 if name == "signal" else N
        check(len(stacks) == n, f"{name}: {len(stacks)} pushes, want {n}")
        bad = [s for s in stacks if not ok(s)]
        check(not bad, f"{name}: {len(bad)} of {len(stacks)} stacks wrong, e.g. {bad[:1]}")
    print("ok" if not failures else f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
