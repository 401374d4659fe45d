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
(d) the report is the same bytes loaded on 1 and 4 threads (TRAINPROF_LOAD_WORKERS);
(e) `trainprof tui DIR --snapshot --view ranks`: a row per rank, rank 2's naming both findings
    and showing the report's steps and step p50, the findings' titles; the healthy job's view
    says what the report's "Cross-rank findings" says."""
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


def tui_ranks(path):
    r = subprocess.run([TP, "tui", path, "--snapshot", "--view", "ranks", "--width", "160",
                        "--height", "50"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def units_ms(ns):
    return "%.2f ms" % (ns / 1e6)


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

    # (e) the TUI's Ranks view of the job's folder: the report's rows and findings
    tui = tui_ranks(slow)
    rows = {int(ln.split()[1] if ln.startswith(">") else ln.split()[0]): ln
            for ln in tui.splitlines()[3:7]}
    check(sorted(rows) == [0, 1, 2, 3] and tui.splitlines()[3].startswith(">      0"),
          "TUI Ranks: a row per rank, the shown rank (0) selected (%s)" % tui)
    ids2 = rows.get(2, "").split()[1:3] if rows.get(2, "").startswith(" ") else []
    check(sorted(i.strip(",") for i in ids2) == ["input-straggler", "straggler"] and
          not any("straggler" in rows.get(k, "") for k in (0, 1, 3)),
          "TUI Ranks: rank 2's row names both findings, no other row any\n%s" % tui)
    for f in x["findings"]:
        check("] %s" % f["title"][:100] in tui, "TUI Ranks: finding '%s' shown" % f["title"])
    check(" 20 " in rows.get(2, "") and units_ms(x["ranks"][2]["step_p50_ns"]) in rows.get(2, ""),
          "TUI Ranks: rank 2's steps and step p50 as the report's (%s)" % rows.get(2))

    healthy = os.path.join(tmp, "healthy")
    record_job(healthy, [])
    x = report(healthy)["cross_rank"]
    check(x["findings"] == [], "healthy job: no cross-rank finding (%s)" % x["findings"])
    quiet = subprocess.run([TP, "report", healthy], capture_output=True, text=True).stdout
    quiet = quiet.split("Cross-rank findings\n", 1)[-1].split("\n", 1)[0].strip()
    tui = tui_ranks(healthy)
    check(quiet and quiet in tui and "1. [" not in tui,
          "healthy job: the TUI's Ranks view says what the report says (%r)" % quiet)

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
