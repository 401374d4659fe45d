#!/usr/bin/env python3
"""trainprof diff, end to end on the committed sample traces.

usage: test_diff.py TRAINPROF SAMPLES_DIR
(a) a run against itself: every change 0, every finding kept, a tight gate passes (exit 0);
(b) input-bound vs pageable-copies: each side's figures are the report's own (span, busy,
    idle, compute; device ops and ranges per name), changes are new - base, relative changes
    (new - base) / base; findings new/gone/kept are the set differences of the two reports;
    GPU time by launching stack per group of frames (their text), each side its report's;
(c) gates: a crossed threshold, an appeared finding, a gate in the other direction; exit 1
    only when one fails; text output says FAIL/ok per gate;
(d) bad use: one trace, an unknown figure, a malformed expression (exit 2, one line), a
    missing trace (exit 1), a rank in neither run (exit 3);
(e) memory and the host: peak allocated and reserved, data loading (total, per step) are the
    reports' memory_use and host figures, a gate on them; two PyTorch-profiler traces (the
    H200 sample, and a copy without one operator and with another made slower): the CPU
    operators table per name is each report's framework-op rows (self time, count); figures a
    run cannot measure are null."""
import gzip
import json
import math
import os
import sqlite3
import subprocess
import sys
import tempfile

TP, SAMPLES = sys.argv[1:3]
A = os.path.join(SAMPLES, "cpu-trainer-input-bound.tprof")
B = os.path.join(SAMPLES, "cpu-trainer-pageable-copies.tprof")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(*args):
    return subprocess.run([TP, *args], capture_output=True, text=True)


def diff_json(base, new, *gates):
    r = run("diff", base, new, "--format", "json", *[x for g in gates for x in ("--fail-if", g)])
    return r.returncode, json.loads(r.stdout), r.stderr


def report(path):
    r = run("report", "--format", "json", path)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["ranks"][0]


def close(a, b):
    return (a is None and b is None) or (a is not None and b is not None
                                         and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6))


# (a) a run against itself
rc, d, err = diff_json(A, A, "step_time>+0.001%", "utilization<-0.001")
rank = d["ranks"][0]
check(rc == 0 and d["schema"] == "trainprof-diff/v1" and d["gates_failed"] == 0,
      "self: exit 0, no gate failed (%d, %s)" % (rc, err.strip()))
check(all(f["change"] in (0, None) for f in rank["figures"].values()), "self: every change is 0")
check(all(x["status"] == "kept" for x in rank["findings"]) and rank["findings"],
      "self: every finding kept")
check(all(k["base"] == k["new"] and k["count_base"] == k["count_new"] for k in rank["kernels"]),
      "self: every device op unchanged")

# (b) two different runs: the report's own numbers
rc, d, err = diff_json(A, B)
rank, ra, rb = d["ranks"][0], report(A), report(B)
fig = rank["figures"]
for key, rkey in (("span", "span_ns"), ("busy", "busy_ns"), ("idle", "idle_ns"),
                  ("compute", "compute_ns"), ("non_compute", "non_compute_ns")):
    check(fig[key]["base"] == ra["temporal"][rkey] and fig[key]["new"] == rb["temporal"][rkey],
          "figure %s is the report's temporal %s" % (key, rkey))
    check(close(fig[key]["change"], fig[key]["new"] - fig[key]["base"]), "%s: change = new - base" % key)
    check(close(fig[key]["change_pct"], 100 * (fig[key]["new"] - fig[key]["base"]) / fig[key]["base"]),
          "%s: relative change = (new - base) / base" % key)
for key, rkey in (("step_time", "mean_ns"), ("step_p50", "p50_ns"), ("step_p90", "p90_ns"),
                  ("steps", "count")):
    check(close(fig[key]["base"], ra["steps"][rkey]) and close(fig[key]["new"], rb["steps"][rkey]),
          "figure %s is the report's steps %s" % (key, rkey))
check(close(fig["utilization"]["base"], 100 * ra["temporal"]["busy_ns"] / ra["temporal"]["span_ns"]),
      "utilization is busy / span")
kern = {k["name"]: k for k in rank["kernels"]}
check(all(kern[k["name"]]["base"] == k["sum_ns"] and kern[k["name"]]["count_base"] == k["count"]
          for k in ra["kernels"]), "device ops per name: base side is BASE's report")
check(all(kern[k["name"]]["new"] == k["sum_ns"] and kern[k["name"]]["count_new"] == k["count"]
          for k in rb["kernels"]), "device ops per name: new side is NEW's report")
rng = {x["name"]: x for x in rank["ranges"]}
check(all(rng[x["name"]]["new"] == x["total_ns"] for x in rb["ranges"]),
      "ranges per name: new side is NEW's report")
changes = [abs((k["new"] or 0) - (k["base"] or 0)) for k in rank["kernels"]]
check(changes == sorted(changes, reverse=True), "device ops sorted by the size of their change")
# launching stacks: each run's groups as its report has them, matched by their frames' text


def stack_line(frames):
    out = ""
    for i, fr in enumerate(frames):
        out += ("" if not i else " < ... < " if fr["skipped"] else " < ") + fr["label"]
    return out


stk = {x["name"]: x for x in rank["launch_stacks"]}
for side, rep_, cnt in (("base", ra, "count_base"), ("new", rb, "count_new")):
    groups = rep_["launch_stacks"]["stacks"]
    want = {}
    for g in groups:
        w = want.setdefault(stack_line(g["frames"]), [0, 0])
        w[0] += g["gpu_ns"]
        w[1] += g["count"]
    check(groups and all(stk.get(k, {}).get(side) == v[0] and stk[k][cnt] == v[1]
                         for k, v in want.items())
          and sum(x[cnt] for x in stk.values()) == sum(g["count"] for g in groups),
          "launching stacks: the %s side is its report's groups (%d), by their frames' text"
          % (side, len(groups)))
text = run("diff", A, B).stdout
check("GPU time by launching stack (top " in text, "diff text: the launching-stack table")
ida, idb = {f["id"] for f in ra["findings"]}, {f["id"] for f in rb["findings"]}
st = {x["id"]: x["status"] for x in rank["findings"]}
check({i for i, s in st.items() if s == "new"} == idb - ida
      and {i for i, s in st.items() if s == "gone"} == ida - idb
      and {i for i, s in st.items() if s == "kept"} == ida & idb,
      "findings new/gone/kept are the reports' set differences (%s)" % st)

# The step statistics themselves, recomputed from the trace's own 'step' ranges (SQLite export):
# mean, and numpy's linear percentiles.
def pct(v, q):
    v = sorted(v)
    k = (len(v) - 1) * q / 100.0
    lo = int(math.floor(k))
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


with tempfile.TemporaryDirectory() as tmp:
    db = os.path.join(tmp, "a.sqlite")
    assert run("export", A, "--format", "sqlite", "-o", db).returncode == 0
    con = sqlite3.connect(db)
    rows = list(con.execute("select r.start, r.end from nvtx_ranges r join strings t "
                            "on t.id = r.name_id where t.text = 'step' order by r.start"))
    dur = [e - s for s, e in rows]
    con.close()
check(ra["steps"]["count"] == len(dur) and close(ra["steps"]["mean_ns"], sum(dur) / len(dur))
      and close(ra["steps"]["p50_ns"], pct(dur, 50)) and close(ra["steps"]["p90_ns"], pct(dur, 90)),
      "report steps (count, mean, p50, p90) = the 'step' ranges' own (%d steps)" % len(dur))
check(close(fig["step_period"]["base"], (rows[-1][0] - rows[0][0]) / (len(rows) - 1)),
      "figure step_period is the steps' mean start-to-start time (%s)" % fig["step_period"])

# (c) gates
span_pct = fig["span"]["change_pct"]
up, down = ("span>%+g%%" % (span_pct - 1), "span<%+g%%" % (span_pct - 1))
rc, d, err = diff_json(A, B, up)
check(rc == 1 and d["gates_failed"] == 1, "gate %s fails (change %+.1f %%), exit 1" % (up, span_pct))
rc, d, err = diff_json(A, B, down)
check(rc == 0 and d["gates_failed"] == 0, "gate %s passes, exit 0" % down)
appeared = sorted(idb - ida)
gone = sorted(ida - idb)
if appeared:
    rc, d, err = diff_json(A, B, "finding:" + appeared[0])
    check(rc == 1, "finding:%s (new in NEW) fails" % appeared[0])
if gone or ida & idb:
    fid = (gone or sorted(ida & idb))[0]
    rc, d, err = diff_json(A, B, "finding:" + fid)
    check(rc == 0, "finding:%s (not new in NEW) passes" % fid)
r = run("diff", A, B, "--fail-if", up, "--fail-if", down)
check(r.returncode == 1 and "FAIL" in r.stdout and "ok  " in r.stdout
      and "1 of 2 gate check(s) failed" in r.stdout, "text: one FAIL, one ok, the verdict")

# (d) bad use
r = run("diff", A)
check(r.returncode == 2 and "takes exactly two traces" in r.stderr, "one trace: exit 2")
r = run("diff", A, B, "--fail-if", "nosuch>+5%")
check(r.returncode == 2 and "unknown figure 'nosuch'" in r.stderr, "unknown figure: exit 2")
r = run("diff", A, B, "--fail-if", "step_time>+5x")
check(r.returncode == 2 and "unexpected" in r.stderr, "malformed expression: exit 2")
r = run("diff", A, "/nonexistent/x.tprof")
check(r.returncode == 1 and r.stdout == "", "missing trace: exit 1, nothing on stdout")
r = run("diff", A, B, "--rank", "7")
check(r.returncode == 3 and "rank 7 is not in both runs" in r.stderr, "absent rank: exit 3")

# (e) memory, the host, CPU operators
rc, d, err = diff_json(A, B, "mem_peak>+100%", "data_per_step<-50%")
rank = d["ranks"][0]
fig = rank["figures"]
for key, sect, rkey in (("mem_peak", "memory_use", "peak_allocated_bytes"),
                        ("mem_reserved_peak", "memory_use", "peak_reserved_bytes"),
                        ("data_loading", "host", "data_ns")):
    check(fig[key]["base"] == ra[sect][rkey] and fig[key]["new"] == rb[sect][rkey]
          and fig[key]["base"] > 0 and fig[key]["new"] > 0,
          "figure %s is the report's %s.%s (%s -> %s)" % (key, sect, rkey, fig[key]["base"],
                                                         fig[key]["new"]))
check(close(fig["data_per_step"]["base"], ra["host"]["data_ns"] / ra["steps"]["count"])
      and close(fig["data_per_step"]["new"], rb["host"]["data_ns"] / rb["steps"]["count"]),
      "figure data_per_step is host.data_ns over the steps")
check(fig["cpu_ops"]["base"] is None and fig["cpu_ops"]["new"] is None,
      "cpu_ops: null for recordings without framework ops")
want_fail = (fig["mem_peak"]["change_pct"] > 100) + (fig["data_per_step"]["change_pct"] < -50)
check(rc == (1 if want_fail else 0) and d["gates_failed"] == want_fail and want_fail == 2,
      "gates on mem_peak (%+.1f %%) and data_per_step (%+.1f %%) fail" %
      (fig["mem_peak"]["change_pct"], fig["data_per_step"]["change_pct"]))
text = run("diff", A, B).stdout
check("peak device memory" in text and "data loading per step" in text,
      "diff text: the memory and data-loading rows")
K = os.path.join(SAMPLES, "gpu-h200-torch-profiler.json.gz")
with gzip.open(K, "rt") as fh:
    trace = json.load(fh)
ops = {}
for e in trace["traceEvents"]:
    if e.get("cat") == "cpu_op" and e.get("ph") == "X":
        ops[e["name"]] = ops.get(e["name"], 0) + 1
dropped = "aten::zero_"
slower = max((n for n in ops if n != dropped), key=lambda n: ops[n])
check(dropped in ops, "the profiler trace has %s (%d ops)" % (dropped, len(ops)))
for e in trace["traceEvents"]:
    if e.get("cat") == "cpu_op" and e.get("name") == slower:
        e["dur"] = e["dur"] * 3
trace["traceEvents"] = [e for e in trace["traceEvents"]
                        if not (e.get("cat") == "cpu_op" and e.get("name") == dropped)]
with tempfile.TemporaryDirectory() as tmp:
    K2 = os.path.join(tmp, "changed.json")
    with open(K2, "w") as fh:
        json.dump(trace, fh)
    rc, d, err = diff_json(K, K2)
    rk, rk2 = report(K), report(K2)
    text = run("diff", K, K2).stdout
rank = d["ranks"][0]
tab = {x["name"]: x for x in rank["cpu_ops"]}
for side, rep_, cnt in (("base", rk, "count_base"), ("new", rk2, "count_new")):
    want = {}
    for op in rep_["cpu_ops"]["ops"]:
        if op["kind"] == "op":
            w = want.setdefault(op["name"], [0, 0])
            w[0] += op["self_ns"]
            w[1] += op["count"]
    check(want and all(tab.get(k, {}).get(side) == v[0] and tab[k][cnt] == v[1]
                       for k, v in want.items())
          and sum(x[cnt] for x in tab.values()) == sum(v[1] for v in want.values()),
          "CPU operators: the %s side is its report's framework ops (%d names)" % (side, len(want)))
check(tab[dropped]["new"] is None and tab[dropped]["count_new"] == 0,
      "CPU operators: %s gone in the changed copy" % dropped)
check(tab[slower]["new"] > tab[slower]["base"], "CPU operators: %s slower" % slower)
check(rank["figures"]["cpu_ops"]["base"] == rk["host"]["ops_ns"]
      and rank["figures"]["cpu_ops"]["new"] == rk2["host"]["ops_ns"]
      and rank["figures"]["mem_peak"]["base"] is None,
      "figure cpu_ops is the report's host.ops_ns; mem_peak null without memory events")
check("CPU operators by self time (top 10 of" in text and dropped in text,
      "diff text: the CPU operators table")

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
