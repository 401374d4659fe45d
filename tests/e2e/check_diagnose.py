"""Assertions for e2e_diagnose.sh: the diagnosis of each real trainer scenario."""
# (ids of the finding each scenario must produce)
import json
import os
import sys

d = sys.argv[1]
failures = []

EXPECTED_TOP = {
    "input-bound": "input-bound",
    "pageable-copies": "pageable-h2d",
    "sync-every-step": "sync-stall",
    "launch-bound": "launch-bound",
    "fragmentation-oom": "fragmentation-oom",
}


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def load(name):
    with open(os.path.join(d, name)) as f:
        return json.load(f)


def findings(scenario):
    rep = load(scenario + ".report.json")
    r = rep["ranks"][0]
    fs = r["findings"]
    print("     %s: %s" % (scenario, ", ".join("%s %.3f" % (f["id"], f["severity"]) for f in fs)))
    for f in fs:
        ok = (0 <= f["severity"] <= 1 and f["level"] in ("high", "medium", "low")
              and f["title"].startswith(f["id"] + ":") and f["evidence"] and f["advice"])
        check(ok, "%s: finding %s is complete" % (scenario, f["id"]))
    sev = [f["severity"] for f in fs]
    check(sev == sorted(sev, reverse=True), scenario + ": findings ranked by severity")
    return fs


def metric(f, key):
    """A finding's metric; NaN (failing every comparison) when the finding lacks it, so one
    missing finding is one failed check, not the end of the run."""
    return f["metrics"].get(key, float("nan"))


for sc in ["healthy"] + list(EXPECTED_TOP):
    fs = findings(sc)
    text = open(os.path.join(d, sc + ".report.txt")).read()
    check(0 <= text.find("Diagnosis") < text.find("Summary"), sc + ": Diagnosis comes first")
    if sc == "healthy":
        # step-spikes judges the steps' times, which a loaded machine's preemptions move as
        # much as the program (a healthy run at load 4 on 2 cores: 0.41); tests/analyzer's
        # test_step_spikes checks the rule itself. No other high finding may come.
        high = [f["id"] for f in fs if f["level"] == "high" and f["id"] != "step-spikes"]
        check(not high, "healthy: no high-severity finding but step-spikes (got %s)" % high)
        continue
    # The scenario's problem must be found, at high severity, and ranked first or second: on
    # a loaded 2-core machine the trainer's loader threads compete with the launching thread
    # for the cores, so a second finding (input-bound at 4-27 % in launch-bound runs at load
    # 6-25) may come close; what the scenario is about must still stand out.
    # (step-spikes, which the load's preemptions can raise in any run, takes no place here)
    fs = [x for x in fs if x["id"] != "step-spikes"]
    ids = [x["id"] for x in fs]
    want = EXPECTED_TOP[sc]
    rank = ids.index(want) if want in ids else None
    check(rank is not None and rank <= 1 and fs[rank]["level"] == "high",
          "%s: %s found, high, ranked 1st or 2nd (got %s)" % (sc, want, ids))
    f = fs[rank] if rank is not None else {"metrics": {}, "source": "", "severity": 0}
    summary = load(sc + ".summary.json")
    if sc == "input-bound":
        check(f["severity"] >= 0.4, "input-bound: explains >= 40% of step time")
        check("dataloader wait" in f["source"], "input-bound: source is the 'dataloader wait' range")
    elif sc == "pageable-copies":
        # The trainer times its own copy calls (h2d_s); the finding's host time must agree.
        host_s = metric(f, "host_blocked_ns") / 1e9
        check(0.5 * summary["h2d_s"] <= host_s <= 1.1 * summary["h2d_s"],
              "pageable-copies: host blocked %.3f s vs trainer h2d_s %.3f s" % (host_s, summary["h2d_s"]))
        check("host-to-device copy" in f["source"], "pageable-copies: source is the copy range")
    elif sc == "sync-every-step":
        check(abs(metric(f, "syncs_per_step") - 1.0) < 0.2, "sync-every-step: ~1 sync per step")
        check("read loss" in f["source"], "sync-every-step: source is the 'read loss' range")
        check(f["severity"] >= 0.5, "sync-every-step: host blocked most of the step")
    elif sc == "launch-bound":
        check(metric(f, "median_kernel_ns") < metric(f, "host_ns_per_launch"),
              "launch-bound: kernels shorter than the host's time per launch")
    elif sc == "fragmentation-oom":
        check(summary["exit_reason"] == "oom", "fragmentation-oom: trainer reports oom")
        for key in ("requested", "reserved", "free", "largest_free"):
            check(metric(f, key + "_bytes") == summary["oom_%s_bytes" % key],
                  "fragmentation-oom: %s bytes %d match the trainer's %d"
                  % (key, metric(f, key + "_bytes"), summary["oom_%s_bytes" % key]))
        # Symbolized offline from the trainer binary: the allocator call and its callers.
        funcs = [fr["function"] for fr in f.get("frames", [])]
        check("tp_alloc_malloc" in funcs and "tp_net_train_step" in funcs,
              "fragmentation-oom: failing stack symbolized (got %s)" % funcs)
        alloc = [fr for fr in f.get("frames", []) if fr["function"] == "tp_alloc_malloc"]
        check(bool(alloc) and alloc[0]["file"].endswith("tp_alloc.c") and alloc[0]["line"] > 0
              and alloc[0]["module"] == "trainprof-trainer" and alloc[0]["symbols"] == "ok",
              "fragmentation-oom: frame tp_alloc_malloc has tp_alloc.c:line")
        check("tp_alloc_malloc (tp_alloc.c:" in f["source"],
              "fragmentation-oom: source shows func (file:line)")
        raw = [x for x in load(sc + ".nosym.report.json")["ranks"][0]["findings"]
               if x["id"] == "fragmentation-oom"]
        check(bool(raw) and "trainprof-trainer+0x" in raw[0]["source"]
              and all(fr["function"] == "" and fr["symbols"] == "off" for fr in raw[0]["frames"]),
              "fragmentation-oom: --no-symbols keeps module+offset")

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
