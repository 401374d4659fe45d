#!/usr/bin/env python3
"""The report's cross-rank section and the exposed-comm finding.

usage: test_cross_rank.py TRAINPROF PEER_DIR
(a) synthetic 4-rank PyTorch-profiler traces (written here, exact times): rank 2 does 3x the
    computation and the others wait for it in the all-reduce -> `straggler` and
    `collective-wait` both name rank 2, the rows carry the exact step and communication times,
    every rank of the waiting three has an exposed-comm finding of the exact share;
(b) four identical ranks -> no cross-rank finding; without collectives, a rank with 2x the
    step -> straggler names it and no collective-wait;
(d) every rank's step 3.3 ms, but rank 1 spends 2 ms of each in a DataLoader __next__ range
    where the others spend 0.2 ms: `input-straggler` names rank 1 (with and without
    collectives, and the same through `trainprof merge` of per-rank JSON reports), the rows
    carry the exact data time; equal data loading on every rank names nobody;
(c) the peer set param_dlrm_8rank (skipped without ../shared, failed under CI=true): exposed
    communication is found on its ranks, and each row's communication and exposed time are
    the rank's own overlap figures (comm_ns, comm_ns - overlap_ns)."""
import json
import os
import subprocess
import sys
import tempfile

TP, PEER = sys.argv[1:3]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def trace(k, world, step_us, comp_us, nccl_us, data_us=0):
    ev, t = [], 1000.0
    for i in range(10):
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % i, "pid": 1,
                   "tid": 1, "ts": t, "dur": step_us})
        if data_us:
            ev.append({"ph": "X", "cat": "user_annotation",
                       "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                       "pid": 1, "tid": 1, "ts": t + 0.5, "dur": data_us})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                   "ts": t + 1, "dur": 5, "args": {"correlation": 2 * i + 1}})
        ev.append({"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7,
                   "ts": t + 10, "dur": comp_us, "args": {"stream": 7, "device": 0,
                                                           "correlation": 2 * i + 1}})
        if nccl_us:
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                       "tid": 1, "ts": t + 6, "dur": 5, "args": {"correlation": 2 * i + 2}})
            ev.append({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                       "pid": 0, "tid": 8, "ts": t + 20 + comp_us, "dur": nccl_us,
                       "args": {"stream": 8, "device": 0, "correlation": 2 * i + 2}})
        t += step_us + 10
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "H200"}],
            "distributedInfo": {"backend": "nccl", "rank": k, "world_size": world},
            "traceEvents": ev}


def job(tmp, name, specs, merged=None):
    """The report of a job of one trace per spec (step, comp, nccl[, data]); with `merged` a
    list, the cross_rank object `trainprof merge` gives from the ranks' own reports is
    appended to it."""
    d = os.path.join(tmp, name)
    os.mkdir(d)
    for k, spec in enumerate(specs):
        with open(os.path.join(d, "rank%d.json" % k), "w") as f:
            json.dump(trace(k, len(specs), *spec), f)
    r = subprocess.run([TP, "report", "--format", "json", d], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    if merged is not None:
        outs = []
        for k in range(len(specs)):
            out = os.path.join(tmp, "%s-rank%d.report.json" % (name, k))
            p = subprocess.run([TP, "report", "--format", "json", "-o", out,
                                os.path.join(d, "rank%d.json" % k)], capture_output=True, text=True)
            assert p.returncode == 0, p.stderr
            outs.append(out)
        p = subprocess.run([TP, "merge", "--format", "json"] + outs, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        merged.append(json.loads(p.stdout)["cross_rank"])
    return json.loads(r.stdout)


with tempfile.TemporaryDirectory() as tmp:
    # (a) rank 2 computes 3 ms, the others 1 ms and wait 2.2 ms in the all-reduce
    rep = job(tmp, "straggler", [(3300, 1000, 2200)] * 2 + [(3300, 3000, 200)] + [(3300, 1000, 2200)])
    x = rep["cross_rank"]
    ids = {f["id"]: f for f in x["findings"]}
    check(ids.get("straggler", {}).get("rank") == 2, "straggler names rank 2 (%s)" % x["findings"])
    check(ids.get("collective-wait", {}).get("rank") == 2, "collective-wait names rank 2")
    check("ranks 0, 1, 3 wait" in ids.get("collective-wait", {}).get("title", ""),
          "collective-wait: ranks 0, 1, 3 wait")
    rows = {r["rank"]: r for r in x["ranks"]}
    check(all(rows[k]["step_p50_ns"] == 3300000 and rows[k]["steps"] == 10 for k in range(4)),
          "rows: 10 steps of exactly 3.3 ms on every rank")
    check(rows[2]["exposed_comm_ns"] == 2000000 and rows[0]["exposed_comm_ns"] == 22000000,
          "rows: exposed communication 10 x 0.2 ms on rank 2, 10 x 2.2 ms on the others")
    check(rows[2]["own_p50_ns"] == 3100000 and x["median_own_p50_ns"] == 1100000,
          "rows: own work 3.1 ms on rank 2, median 1.1 ms")
    for rk in rep["ranks"]:
        f = [f for f in rk["findings"] if f["id"] == "exposed-comm"]
        # the window: 10 steps of 3.3 ms, 10 us apart
        want = rows[rk["rank"]]["exposed_comm_ns"] / (10 * 3300000.0 + 9 * 10000)
        check(bool(f) and abs(f[0]["severity"] - want) < 1e-3,
              "rank %d: exposed-comm severity %.3f (%s)" % (rk["rank"], want,
                                                           f[0]["severity"] if f else None))
    # (b) balanced; and without collectives
    x = job(tmp, "balanced", [(3300, 1000, 2200)] * 4)["cross_rank"]
    check(x["findings"] == [], "four identical ranks: no cross-rank finding")
    x = job(tmp, "nocomm", [(1000, 900, 0), (2000, 1900, 0), (1000, 900, 0), (1000, 900, 0)])["cross_rank"]
    check([(f["id"], f["rank"]) for f in x["findings"]] == [("straggler", 1)],
          "no collectives, rank 1 twice as slow: straggler rank 1 only (%s)" % x["findings"])

    # (d) rank 1 loads its data for 2 ms a step, the others 0.2 ms; the steps are 3.3 ms on all
    for name, nccl in (("input", 2200), ("input-nocomm", 0)):
        merged = []
        specs = [(3300, 1000, nccl, 200), (3300, 1000, nccl, 2000), (3300, 1000, nccl, 200),
                 (3300, 1000, nccl, 200)]
        x = job(tmp, name, specs, merged)["cross_rank"]
        f = [g for g in x["findings"] if g["id"] == "input-straggler"]
        check([g["rank"] for g in f] == [1], "%s: input-straggler names rank 1 (%s)"
              % (name, x["findings"]))
        check(bool(f) and "rank 1 loads its data for 2.00 ms a step against 200.00 us" in
              f[0]["title"].replace("\u00b5", "u").replace("µ", "u"), "%s: title %s"
              % (name, f[0]["title"] if f else None))
        check(bool(f) and abs(f[0]["severity"] - 1.8 / 3.3) < 1e-6,
              "%s: severity 1.8 / 3.3 ms (%s)" % (name, f[0]["severity"] if f else None))
        rows = {r["rank"]: r for r in x["ranks"]}
        check(rows[1]["data_wait_ns"] == 20000000 and rows[0]["data_wait_ns"] == 2000000,
              "%s: rows: data loading 10 x 2 ms on rank 1, 10 x 0.2 ms on rank 0" % name)
        check(merged and sorted((g["id"], g["rank"]) for g in merged[0]["findings"]) ==
              sorted((g["id"], g["rank"]) for g in x["findings"]),
              "%s: merge of the ranks' reports finds the same (%s)" % (name, merged))
    x = job(tmp, "input-even", [(3300, 1000, 0, 2000)] * 4)["cross_rank"]
    check(x["findings"] == [], "equal data loading on every rank: no finding (%s)" % x["findings"])

# (c) the peer DLRM job
dlrm = os.path.join(PEER, "param_dlrm_8rank")
if not os.path.isdir(dlrm):
    if os.environ.get("CI") == "true":
        check(False, "peer traces missing under CI")
    else:
        print("skip: no peer traces")
else:
    r = subprocess.run([TP, "report", "--format", "json", dlrm], capture_output=True, text=True)
    rep = json.loads(r.stdout)
    rows = {row["rank"]: row for row in rep["cross_rank"]["ranks"]}
    check(len(rows) == 8, "dlrm: 8 ranks in the cross-rank table")
    exposed = [rk["rank"] for rk in rep["ranks"] if any(f["id"] == "exposed-comm" for f in rk["findings"])]
    check(len(exposed) == 8, "dlrm: exposed communication found on every rank (%s)" % exposed)
    check(all(rows[rk["rank"]]["comm_ns"] == rk["overlap"]["comm_ns"] and
              rows[rk["rank"]]["exposed_comm_ns"] == rk["overlap"]["comm_ns"] - rk["overlap"]["overlap_ns"]
              for rk in rep["ranks"]), "dlrm: rows are each rank's own overlap figures")

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
