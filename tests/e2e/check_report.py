"""Assertions for e2e_trainer_report.sh on the real traces and reports it produced."""
import json
import os
import sys

d = sys.argv[1]
failures = []


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
    for stream in rank["idle"]:
        for cause in by:
            by[cause] += stream[cause]["idle_ns"]
    return by


util = {}
for sc in ("healthy", "input-bound"):
    info = load(sc + ".info.json")
    text = json.dumps(info)
    check('"KERNEL"' in text and '"NVTX_PUSH"' in text, sc + ": trace holds kernels and NVTX ranges")
    r = rank0(sc)
    t = r["temporal"]
    check(r["has_gpu"] and t["span_ns"] > 0, sc + ": device activity found")
    util[sc] = t["busy_ns"] / t["span_ns"]
    split = idle_split(r)
    total_idle = sum(split.values())
    share = split["host_wait"] / total_idle if total_idle else 0.0
    print(f"     {sc}: utilization {util[sc]:.3f}, idle {t['idle_ns']} ns, host-wait share {share:.3f}")
    names = {k["name"] for k in r["kernels"]}
    check("conv3x3_fwd" in names, sc + ": conv kernels reported by name")
    ranges = {x["name"]: x for x in r["ranges"]}
    check("step" in ranges and ranges["step"]["count"] == 30, sc + ": 30 'step' NVTX ranges")
    check("dataloader wait" in ranges, sc + ": 'dataloader wait' range present")
    if sc == "input-bound":
        check(share >= 0.8, "input-bound: device idle is dominated by host wait (>= 80%)")
        check(t["idle_pct"] >= 40, "input-bound: device idle at least 40% of the span")
        summary = load(sc + ".summary.json")
        check(ranges["dataloader wait"]["total_ns"] > 0.5 * ranges["step"]["total_ns"],
              "input-bound: dataloader wait is most of each step")
        check(summary["data_wait_s"] > 0, "input-bound: trainer's own data-wait figure agrees")

check(util["healthy"] >= util["input-bound"] + 0.25,
      "healthy keeps the device far busier than input-bound (+25 points)")
check(util["healthy"] >= 1.8 * util["input-bound"], "healthy utilization >= 1.8x input-bound")

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
