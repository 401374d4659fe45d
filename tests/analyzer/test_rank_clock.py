#!/usr/bin/env python3
"""Ranks on one clock: the report's per-rank "clock" section (model/tp_align).

usage: test_rank_clock.py TRAINPROF PEER_DIR
(a) synthetic 4-rank PyTorch-profiler traces whose baseTimeNanoseconds differ (each rank's ts
    relative to its own base, as Kineto writes them): every shift is exactly the difference
    of the bases; rank 2's clock is 300 us off the others', which the matched all-reduce ends
    show (residual exactly 300 us, above the limit), the others' residual is 0;
(b) a rank with a different number of collectives and no clock pair: no residual estimate
    (null), never a made-up one;
(c) one rank alone: no clock section;
(d) the peer set param_dlrm_8rank (skipped without ../shared, failed under CI=true): wall-clock
    ts, shift 0, and each rank's residual equals the median of its NCCL kernels' ends minus
    rank 0's, recomputed here from the JSON."""
import json
import os
import subprocess
import sys
import tempfile

TP, PEER = sys.argv[1:3]
failures = []
BASE = 1751410836000000000


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def trace(k, base_ns, skew_ns, n_coll=10):
    """Events at real time T (ns past BASE) written as ts = (T - base + skew) / 1000 us."""
    ev = []
    for i in range(n_coll):
        real = 200000000 + i * 2000000  # ns past BASE (every ts stays positive)
        ts = (real + BASE - base_ns + skew_ns) / 1000.0
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % i, "pid": 1,
                   "tid": 1, "ts": ts, "dur": 1900})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                   "tid": 1, "ts": ts + 1, "dur": 5, "args": {"correlation": i + 1}})
        ev.append({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                   "pid": 0, "tid": 8, "ts": ts + 100, "dur": 500,
                   "args": {"stream": 8, "device": 0, "correlation": i + 1}})
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "H200"}],
            "distributedInfo": {"backend": "nccl", "rank": k, "world_size": 4},
            "baseTimeNanoseconds": base_ns, "traceEvents": ev}


def report(path):
    r = subprocess.run([TP, "report", "--format", "json", path], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def text(path):
    r = subprocess.run([TP, "report", path], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


with tempfile.TemporaryDirectory() as tmp:
    d = os.path.join(tmp, "job")
    os.mkdir(d)
    bases = [BASE, BASE + 5000000, BASE - 7000000, BASE + 123456000]
    skews = [0, 0, 300000, 0]
    for k in range(4):
        with open(os.path.join(d, "rank%d.json" % k), "w") as f:
            json.dump(trace(k, bases[k], skews[k]), f)
    rep = report(d)
    clk = {rk["rank"]: rk.get("clock") for rk in rep["ranks"]}
    check(clk[0] and clk[0]["source"] == "reference" and clk[0]["residual_ns"] == 0,
          "rank 0 is the reference (%s)" % clk[0])
    for k in (1, 2, 3):
        c = clk[k] or {}
        check(c.get("source") == "kineto_base" and c.get("shift_ns") == bases[k] - BASE,
              "rank %d: shift = its base - rank 0's = %d (%s)" % (k, bases[k] - BASE, c))
        check(c.get("residual_method") == "collectives" and c.get("matched_collectives") == 10,
              "rank %d: residual from 10 matched collectives" % k)
        check(c.get("residual_ns") == skews[k], "rank %d: residual %d ns (%s)"
              % (k, skews[k], c.get("residual_ns")))
        check(c.get("residual_above_limit") == (skews[k] > 100000),
              "rank %d: above the 100 us limit only when skewed" % k)
    t = text(d)
    check("Clock\n  shift to rank 0's clock  +5.00 ms (by baseTimeNanoseconds)" in t,
          "text: rank 1's shift")
    check("residual offset          300.00 µs (median over 10 communication kernels' ends)" in t
          and "above 100.00 µs" in t, "text: rank 2's residual, flagged above the limit")
    check(t.count("above 100.00 µs") == 1, "text: only rank 2 flagged")

    # (b) a rank with 9 collectives and no base: no estimate
    d2 = os.path.join(tmp, "odd")
    os.mkdir(d2)
    for k in range(2):
        tr = trace(k, BASE, 0, 10 if k == 0 else 9)
        with open(os.path.join(d2, "rank%d.json" % k), "w") as f:
            json.dump(tr, f)
    c = {rk["rank"]: rk.get("clock") for rk in report(d2)["ranks"]}[1]
    check(c["residual_method"] == "none" and c["residual_ns"] is None
          and c["matched_collectives"] == 0, "unmatched collectives: residual unknown (%s)" % c)
    check("residual offset          unknown" in text(d2), "text: unknown residual")

    # (c) one rank: no clock section
    one = report(os.path.join(d, "rank1.json"))
    check("clock" not in one["ranks"][0], "one rank: no clock section")


def nccl_ends(path):
    with open(path) as f:
        ev = json.load(f)["traceEvents"]
    return sorted(round(e["ts"] * 1000) + round(e["dur"] * 1000) for e in ev
                  if e.get("ph") == "X" and e.get("cat") == "kernel" and "nccl" in e.get("name", ""))


def c_half(v):  # C's v / 2 on int64 (truncation toward zero)
    return -((-v) // 2) if v < 0 else v // 2


dlrm = os.path.join(PEER, "param_dlrm_8rank")
if not os.path.isdir(dlrm):
    if os.environ.get("CI") == "true":
        check(False, "peer traces missing under CI")
    else:
        print("skip: no peer traces")
else:
    rep = report(dlrm)
    files = sorted(os.listdir(dlrm))
    ends = [nccl_ends(os.path.join(dlrm, f)) for f in files]
    for rk in rep["ranks"]:
        k, c = rk["rank"], rk["clock"]
        if k == 0:
            check(c["source"] == "reference", "dlrm: rank 0 is the reference")
            continue
        d = sorted(a - b for a, b in zip(ends[k], ends[0]))
        n = len(d)
        med = d[n // 2] if n % 2 else c_half(d[n // 2 - 1]) + c_half(d[n // 2])
        check(c["source"] == "as_recorded" and c["shift_ns"] == 0 and
              c["matched_collectives"] == n and c["residual_ns"] == abs(med),
              "dlrm rank %d: residual %d ns over %d collectives (%s)" % (k, abs(med), n, c))

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
