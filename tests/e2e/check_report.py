"""Assertions for e2e_trainer_report.sh on the real traces and reports it produced.

Only what holds by construction is asserted (counts, sums that must add up, and time the
device provably spent idle); utilization figures are printed, not judged, because a loaded
machine moves them."""
import json
import os
import sys

d = sys.argv[1]
failures = []
STEPS = 30
DEVICE_OPS = ("KERNEL", "MEMCPY", "MEMSET")


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def load(name):
    with open(os.path.join(d, name)) as f:
        return json.load(f)


def rank0(scenario):
    rep = load(scenario + ".report.json")
    check(rep["schema"] == "trainprof-report/v1", scenario + ": report schema")
    return rep["ranks"][0]


def idle_split(rank):
    by = {"host_wait": 0, "kernel_wait": 0, "other": 0}
    gaps = 0
    for stream in rank["idle"]:
        for cause in by:
            by[cause] += stream[cause]["idle_ns"]
        gaps += stream["host_wait"]["gaps_ns"]["count"]
    return by, gaps


def check_counts(sc, info, r):
    recs = info["records"]
    check(recs.get("KERNEL", 0) > 0 and recs.get("NVTX_PUSH", 0) > 0,
          sc + ": trace holds kernels and NVTX ranges")
    check(info["dropped_total"] == 0, sc + ": nothing dropped")
    check(recs["NVTX_PUSH"] == recs["NVTX_POP"], sc + ": every push popped")
    ops = sum(recs.get(k, 0) for k in DEVICE_OPS)
    check(sum(k["count"] for k in r["kernels"]) == ops,
          sc + f": every device op of the trace reported ({ops})")
    check(r["launch"]["n_pairs"] == ops, sc + ": every device op paired with its launch API")
    names = {k["name"] for k in r["kernels"]}
    check("conv3x3_fwd" in names, sc + ": conv kernels reported by name")
    ranges = {x["name"]: x for x in r["ranges"]}
    check("step" in ranges and ranges["step"]["count"] == STEPS, sc + ": 30 'step' NVTX ranges")
    check("dataloader wait" in ranges and ranges["dataloader wait"]["count"] == STEPS,
          sc + ": 30 'dataloader wait' ranges")
    return ranges


def check_breakdowns(sc, r):
    t = r["temporal"]
    check(r["has_gpu"] and 0 < t["busy_ns"] < t["span_ns"], sc + ": device busy part of the span")
    check(t["busy_ns"] + t["idle_ns"] == t["span_ns"], sc + ": busy + idle == span")
    check(t["compute_ns"] + t["non_compute_ns"] == t["busy_ns"], sc + ": compute + other == busy")
    causes = ("host_wait", "kernel_wait", "other")
    for s in r["idle"]:
        parts = [s[c]["idle_ns"] for c in causes]
        ratios = sum(s[c]["ratio"] for c in causes)
        check(min(parts) >= 0 and (sum(parts) == 0 or abs(ratios - 1) < 1e-9),
              sc + f": stream {s['stream']}: idle causes add up")
    if len(r["idle"]) == 1:  # one in-order stream: its gaps are the device's idle time
        gaps = sum(r["idle"][0][c]["idle_ns"] for c in causes)
        check(abs(gaps - t["idle_ns"]) <= t["span_ns"] // 1000,
              sc + ": the idle breakdown covers the device's idle time")


for sc in ("healthy", "input-bound"):
    info = load(sc + ".info.json")
    r = rank0(sc)
    ranges = check_counts(sc, info, r)
    check_breakdowns(sc, r)
    split, host_gaps = idle_split(r)
    t = r["temporal"]
    print(f"     {sc}: utilization {t['busy_ns'] / t['span_ns']:.3f}, idle {t['idle_ns']} ns, "
          f"host wait {split['host_wait']} ns in {host_gaps} gaps")
    if sc == "input-bound":
        wait = ranges["dataloader wait"]
        # Every data wait but the first lies inside a device-idle gap whose next op was
        # launched after it: host-wait idle by construction, whatever the machine's load.
        check(split["host_wait"] >= wait["total_ns"] - wait["max_ns"],
              "input-bound: the data waits (all but the first) are host-wait idle")
        check(host_gaps >= STEPS - 1, "input-bound: a host-wait gap before every step but the first")
        summary = load(sc + ".summary.json")
        check(summary["data_wait_s"] > 0, "input-bound: trainer's own data-wait figure agrees")
        check(summary["syncs"] >= STEPS, "input-bound: synced every step")

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
