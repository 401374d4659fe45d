#!/usr/bin/env python3
"""Synthetic 4-rank jobs from the trainer: `trainprof record` of four trainer processes with
RANK=0..3, run together as a launcher would.

usage: test_trainer_ranks.py TRAINPROF TRAINER
(a) one command line for every rank with --slow-rank 2 --slow-factor 4: rank 2's input
    takes four times as long to arrive (--read-latency 100 ms per batch on the others, 400 ms
    on rank 2) -> the cross-rank straggler and input-straggler findings name rank 2 (its step
    is long, and its data loading is what makes it so) and no other finding is made.
    The steps are waits for input, not CPU work (augmentation off, a tiny model), so a loaded
    machine adds only its wake-up latency, a few ms against a 100 ms step and a 1.2x rule:
    load can neither hide rank 2 nor make a healthy rank look 20 % slower;
(b) the same job without --slow-rank: no cross-rank finding;
(c) the ranks are on one clock: each rank's shift is its first CLOCK_SYNC pair's offset minus
    rank 0's, recomputed here from each trace's Chrome export (baseTimeNanoseconds), and the
    residual comes from the last pairs (a number, never missing);
(d) the report is the same bytes loaded on 1 and 4 threads (TRAINPROF_LOAD_WORKERS)."""
import json
import os
import subprocess
import sys
import tempfile

TP, TRAINER = sys.argv[1:3]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def record_job(d, extra):
    procs = []
    for k in range(4):
        env = dict(os.environ, RANK=str(k), WORLD_SIZE="4", LOCAL_RANK=str(k))
        cmd = [TP, "record", "-o", os.path.join(d, "rank%d.tprof" % k), "--", TRAINER,
               "--device", "cpu", "--model", "mlp", "--mlp-depth", "1", "--mlp-width", "32",
               "--workers", "0", "--transform-cost", "0", "--read-latency", "100", "--batch", "8",
               "--steps", "20"] + extra
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE))
    for p in procs:
        _, err = p.communicate()
        assert p.returncode == 0, err


def report(path, workers=None):
    env = dict(os.environ)
    if workers:
        env["TRAINPROF_LOAD_WORKERS"] = str(workers)
    r = subprocess.run([TP, "report", "--format", "json", path], capture_output=True, text=True,
                       env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout if workers else json.loads(r.stdout)


with tempfile.TemporaryDirectory() as tmp:
    slow = os.path.join(tmp, "slow")
    record_job(slow, ["--slow-rank", "2", "--slow-factor", "4"])
    rep = report(slow)
    x = rep["cross_rank"]
    check(sorted(r["rank"] for r in x["ranks"]) == [0, 1, 2, 3] and
          all(r["steps"] == 20 for r in x["ranks"]), "slow job: ranks 0-3, 20 steps each")
    check(sorted((f["id"], f["rank"]) for f in x["findings"]) ==
          [("input-straggler", 2), ("straggler", 2)],
          "slow job: straggler and input-straggler rank 2, nothing else (%s)"
          % [(f["id"], f["rank"]) for f in x["findings"]])

    check(report(slow, 1) == report(slow, 4), "native traces: the same report loaded on 1 and 4 "
          "threads")

    healthy = os.path.join(tmp, "healthy")
    record_job(healthy, [])
    x = report(healthy)["cross_rank"]
    check(x["findings"] == [], "healthy job: no cross-rank finding (%s)" % x["findings"])

    # (c) the clock, against each trace's own first pair
    base = {}
    for k in range(4):
        out = os.path.join(tmp, "r%d.json" % k)
        subprocess.run([TP, "export", "--format", "chrome", "-o", out,
                        os.path.join(slow, "rank%d.tprof" % k)], check=True, capture_output=True)
        with open(out) as f:
            base[k] = json.load(f)["baseTimeNanoseconds"]
    for rk in rep["ranks"]:
        c, k = rk["clock"], rk["rank"]
        if k == 0:
            check(c["source"] == "reference" and c["shift_ns"] == 0, "rank 0: the reference")
            continue
        check(c["source"] == "clock_sync" and c["shift_ns"] == base[k] - base[0],
              "rank %d: shift %d = its first pair's offset - rank 0's (%s)"
              % (k, base[k] - base[0], c["shift_ns"]))
        check(c["residual_method"] == "sync_pairs" and isinstance(c["residual_ns"], int)
              and c["residual_ns"] >= 0, "rank %d: residual from the last pairs (%s)"
              % (k, c["residual_ns"]))

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
