#!/usr/bin/env python3
"""Per-rank loading on several threads (tp_load: TRAINPROF_LOAD_WORKERS, default one per core)
gives exactly what loading on one gives.

usage: test_load_workers.py TRAINPROF PEER_DIR
(a) a synthetic 12-rank job of PyTorch-profiler traces (different names per rank, so the
    string pool grows with every file, and rank 5 with a NUL inside a kernel's name, which the
    move between string pools must keep whole): the JSON and text
    reports are byte-identical with 1, 3 and 8 workers, and the ranks come out in rank order
    with their own names;
    strace -f sees 4 parsing threads with 4 workers, none with 1;
(b) a job where the 7th file is damaged: the same one-line error, naming that file, with 1 and
    8 workers;
(c) the peer set param_dlrm_8rank (skipped without ../shared, failed under CI=true): the same
    bytes with 1 and 8 workers."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

TP, PEER = sys.argv[1:3]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(workers, *args):
    env = dict(os.environ, TRAINPROF_LOAD_WORKERS=str(workers))
    return subprocess.run([TP, *args], capture_output=True, env=env)


def trace(k):
    ev = []
    for i in range(20):
        t = 1000.0 + i * 300
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % i, "pid": 1,
                   "tid": 1, "ts": t, "dur": 250})
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::op_r%d_%d" % (k, i % 5), "pid": 1,
                   "tid": 1, "ts": t + 1, "dur": 20})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                   "tid": 1, "ts": t + 30, "dur": 5, "args": {"correlation": i + 1}})
        ev.append({"ph": "X", "cat": "kernel", "name": "kernel_%s_%d" % ("\u0000x" if k == 5 else "", k),
                   "pid": 0, "tid": 7, "ts": t + 40, "dur": 100 + k,
                   "args": {"stream": 7, "device": 0, "correlation": i + 1}})
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU-%d" % k}],
            "distributedInfo": {"backend": "nccl", "rank": k, "world_size": 12},
            "traceEvents": ev}


with tempfile.TemporaryDirectory() as tmp:
    d = os.path.join(tmp, "job")
    os.mkdir(d)
    for k in range(12):
        with open(os.path.join(d, "r%02d.json" % (11 - k)), "w") as f:  # names not in rank order
            json.dump(trace(k), f)
    outs = {w: (run(w, "report", "--format", "json", d), run(w, "report", d)) for w in (1, 3, 8)}
    check(all(j.returncode == 0 and t.returncode == 0 for j, t in outs.values()), "reports ran")
    check(outs[1][0].stdout == outs[3][0].stdout == outs[8][0].stdout,
          "JSON report: the same bytes with 1, 3 and 8 workers")
    check(outs[1][1].stdout == outs[3][1].stdout == outs[8][1].stdout,
          "text report: the same bytes with 1, 3 and 8 workers")
    rep = json.loads(outs[8][0].stdout)
    check([r["rank"] for r in rep["ranks"]] == list(range(12)), "ranks in rank order")
    check(all((r["rank"] == 5 or any(k["name"].endswith("_%d" % r["rank"]) for k in r["kernels"])) and
              all(o["name"].startswith("aten::op_r%d_" % r["rank"]) for o in r["cpu_ops"]["ops"]
                  if o["name"].startswith("aten::op_r"))
              for r in rep["ranks"]), "each rank keeps its own names")

    # the threads are really there: strace -f sees the parsing threads (skipped without strace)
    if shutil.which("strace"):
        def threads(w):
            log = os.path.join(tmp, "strace%d" % w)
            # --quiet: no progress ticker thread; one import thread per file; the analyses on
            # this thread alone (TP_ANALYSIS_THREADS=1: else a second one per rank)
            subprocess.run(["strace", "-f", "-qq", "-o", log, TP, "report", "--quiet", "--format",
                            "json", d],
                           # LeakSanitizer cannot run under ptrace (the ASan build's tests)
                           env=dict(os.environ, TRAINPROF_LOAD_WORKERS=str(w), TP_IMPORT_THREADS="1",
                                    TP_ANALYSIS_THREADS="1",
                                    ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") +
                                    ":detect_leaks=0"),
                           capture_output=True, check=True)
            return len({line.split()[0] for line in open(log) if line.strip()})
        n1, n4 = threads(1), threads(4)
        check(n1 == 1 and n4 == 5, "1 worker: no thread; 4 workers: 4 parsing threads (%d, %d)"
              % (n1, n4))
    else:
        print("skip: no strace")

    bad = os.path.join(tmp, "bad")
    os.mkdir(bad)
    for k in range(12):
        with open(os.path.join(bad, "r%02d.json" % k), "w") as f:
            f.write(json.dumps(trace(k))[:-40] if k == 6 else json.dumps(trace(k)))
    e1, e8 = run(1, "report", bad), run(8, "report", bad)
    check(e1.returncode != 0 and e1.returncode == e8.returncode and e1.stderr == e8.stderr and
          b"r06.json" in e1.stderr and len(e1.stderr.strip().splitlines()) == 1,
          "a damaged 7th file: the same one-line error with 1 and 8 workers (%r)" % e8.stderr)

dlrm = os.path.join(PEER, "param_dlrm_8rank")
if os.path.isdir(dlrm):
    a, b = run(1, "report", "--format", "json", dlrm), run(8, "report", "--format", "json", dlrm)
    check(a.returncode == 0 and a.stdout == b.stdout, "dlrm: the same bytes with 1 and 8 workers")
elif os.environ.get("CI") == "true":
    check(False, "peer traces missing under CI")
else:
    print("skip: no peer traces")

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
