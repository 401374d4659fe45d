#!/usr/bin/env python3
"""gpu_proof_compare: trainprof's trace of a training run against torch.profiler's trace of
the same program (scripts/gpu-proof.sh, step d). Two runs, never one (CUPTI has one
subscriber), so kernel *counts* must match exactly and kernel *times* within a goal of 1 %.

Ours is read through `trainprof export --format sqlite` (kernels, copies, API calls with their
stacks and Python frames), cut to the NVTX range --range (the measured steps, which is what
torch.profiler wrapped); Kineto's JSON directly (cat kernel / gpu_memcpy). Checks, each into
the JSON written to --out:
  kernels       per kernel name (demangled alike): count equal, total time within --tolerance
  copies        count per copy kind (HtoD, DtoH, DtoD, ...) equal
  stacks        every kernel in the range has a launching API call whose stack holds Python
                frames (--no-python-frames for a C program)
  reports       `trainprof report --format json` of both traces: per kernel name, the Kineto
                report's count equals ours less what ran outside the range
  overhead      median step time of each tool against the plain run (--steps-* summaries)
Exit status 0 when every check holds (the time goal is reported, not required), 1 otherwise."""
import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
from collections import Counter, defaultdict


def demangler():
    filt = shutil.which("c++filt")
    cache = {}

    def dm(name):
        if not name.startswith("_Z") or not filt:
            return name
        if name not in cache:
            r = subprocess.run([filt, name], capture_output=True, text=True)
            cache[name] = r.stdout.strip() or name
        return cache[name]
    return dm


DM = demangler()


def ours_facts(tp, trace, work, range_name):
    db = os.path.join(work, "ours.sqlite")
    if os.path.exists(db):
        os.unlink(db)
    subprocess.run([tp, "export", trace, "--format", "sqlite", "-o", db], check=True,
                   capture_output=True)
    c = sqlite3.connect(db)
    win = None
    if range_name:
        win = c.execute("select min(start), max(end) from nvtx_ranges_named where name = ?",
                        (range_name,)).fetchone()
        if win[0] is None:
            win = None
    api = {}
    for corr, start, stack, tid in c.execute("select correlation, start, stack_id, tid from api"):
        api.setdefault(corr, (start, stack, tid))
    py = {r[0] for r in c.execute("select distinct stack_id from stacks where module_id = 65534")}
    inside = lambda t: win is None or win[0] <= t <= win[1]  # noqa: E731
    k_in, k_out, no_launch = defaultdict(list), Counter(), 0
    no_py = Counter()  # launching thread -> kernels whose launch stack has no Python frame
    py_threads = set()  # threads with at least one launch from Python
    for start, end, corr, name in c.execute(
            "select k.start, k.end, k.correlation, s.text from kernels k "
            "join strings s on s.id = k.name_id"):
        name = DM(name)
        a = api.get(corr)
        t = a[0] if a else start
        if not inside(t):
            k_out[name] += 1
            continue
        k_in[name].append(end - start)
        if not a:
            no_launch += 1
        elif a[1] not in py:
            no_py[a[2]] += 1
        else:
            py_threads.add(a[2])
    # PyTorch's autograd engine launches the backward pass from its own C++ threads
    # (pt_autograd_N), which hold no Python frame: only a Python thread's launch must have one.
    names = dict(c.execute("select tid, name from threads"))
    no_py = {"python_threads": sum(n for t, n in no_py.items() if t in py_threads),
             "other_threads": {"%s (%d)" % (names.get(t, "?"), t): n
                               for t, n in no_py.items() if t not in py_threads}}
    # Copies and memsets are rows of the report's kernel table too ("Memcpy HtoD (Pinned ->
    # Device)", "Memset (Device)"): the ones outside the range are left out of it like kernels.
    copies = Counter()
    for corr, start, kind, name in c.execute(
            "select correlation, start, copy_kind, name from memcpy_named"):
        a = api.get(corr)
        if inside(a[0] if a else start):
            copies[kind] += 1
        else:
            k_out[name] += 1
    for corr, start, kind in c.execute("select correlation, start, mem_kind from memset"):
        a = api.get(corr)
        if not inside(a[0] if a else start):
            k_out["Memset (%s)" % kind] += 1
    return k_in, k_out, copies, no_launch, no_py, win


def kineto_facts(path):
    with open(path) as f:
        doc = json.load(f)
    ev = doc["traceEvents"] if isinstance(doc, dict) else doc
    k, copies = defaultdict(list), Counter()
    for e in ev:
        if e.get("ph") != "X":
            continue
        if e.get("cat") == "kernel":
            k[DM(e["name"])].append(float(e.get("dur", 0)) * 1000.0)
        elif e.get("cat") == "gpu_memcpy":
            parts = e["name"].split()
            copies[parts[1] if len(parts) > 1 else "?"] += 1
    return k, copies


def report_counts(tp, trace):
    r = subprocess.run([tp, "report", "--format", "json", trace], capture_output=True,
                       text=True)
    if r.returncode != 0:
        return None
    counts = Counter()
    for rank in json.loads(r.stdout)["ranks"]:
        for k in rank.get("kernels", []):
            counts[DM(k["name"])] += k["count"]
    return counts


def median_ms(path):
    if not path or not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)["median_step_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trainprof", required=True)
    ap.add_argument("--ours", required=True)
    ap.add_argument("--kineto", required=True)
    ap.add_argument("--range", default="train")
    ap.add_argument("--tolerance", type=float, default=0.01)
    ap.add_argument("--no-python-frames", action="store_true")
    ap.add_argument("--allow-empty", action="store_true",
                    help="no kernels is no failure (a CPU run of the PyTorch script)")
    ap.add_argument("--steps-base")
    ap.add_argument("--steps-ours")
    ap.add_argument("--steps-torch")
    ap.add_argument("--steps-ours-nostacks", help="our recording with --stacks none")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    work = os.path.dirname(os.path.abspath(a.out))
    k_ours, k_out, c_ours, no_launch, no_py, win = ours_facts(a.trainprof, a.ours, work, a.range)
    k_kin, c_kin = kineto_facts(a.kineto)
    res = {"range": a.range if win else None, "kernels": [], "failures": []}
    fail = res["failures"]
    tot_o = tot_k = 0.0
    for name in sorted(set(k_ours) | set(k_kin)):
        o, k = k_ours.get(name, []), k_kin.get(name, [])
        so, sk = sum(o), sum(k)
        tot_o += so
        tot_k += sk
        res["kernels"].append({"name": name, "count_ours": len(o), "count_torch": len(k),
                               "ns_ours": so, "ns_torch": sk,
                               "time_ratio": so / sk if sk else None})
        if len(o) != len(k):
            fail.append("kernel count differs for %s: ours %d, torch.profiler %d"
                        % (name[:80], len(o), len(k)))
    n_o = sum(len(v) for v in k_ours.values())
    n_k = sum(len(v) for v in k_kin.values())
    ratio = tot_o / tot_k if tot_k else None
    res["totals"] = {"kernels_ours": n_o, "kernels_torch": n_k, "ns_ours": tot_o,
                     "ns_torch": tot_k, "time_ratio": ratio,
                     "time_goal_met": ratio is not None and abs(ratio - 1) <= a.tolerance}
    if n_o == 0 and not a.allow_empty:
        fail.append("no kernels in our trace's range")
    res["copies"] = {"ours": dict(c_ours), "torch": dict(c_kin)}
    if dict(c_ours) != dict(c_kin):
        fail.append("copies by kind differ: ours %s, torch.profiler %s"
                    % (dict(c_ours), dict(c_kin)))
    res["stacks"] = {"kernels": n_o, "without_launch": no_launch,
                     "without_python_frames": no_py}
    if no_launch:
        fail.append("%d kernels have no launching API call" % no_launch)
    if no_py["python_threads"] and not a.no_python_frames:
        fail.append("%d kernels launched from Python threads have no Python frames"
                    % no_py["python_threads"])
    r_o, r_k = report_counts(a.trainprof, a.ours), report_counts(a.trainprof, a.kineto)
    if r_o is None or r_k is None:
        fail.append("trainprof report failed on %s" % ("our trace" if r_o is None else
                                                       "torch.profiler's JSON"))
    else:
        diff = {n: (r_o.get(n, 0) - k_out.get(n, 0), r_k.get(n, 0))
                for n in set(r_o) | set(r_k) if r_o.get(n, 0) - k_out.get(n, 0) != r_k.get(n, 0)}
        res["reports"] = {"names": len(set(r_o) | set(r_k)), "disagree": len(diff)}
        for n, (o, k) in sorted(diff.items())[:10]:
            fail.append("reports disagree on %s: ours %d, torch.profiler %d" % (n[:80], o, k))
    base, ours, torch = (median_ms(a.steps_base), median_ms(a.steps_ours),
                         median_ms(a.steps_torch))
    nostacks = median_ms(a.steps_ours_nostacks)
    res["step_ms"] = {"plain": base, "trainprof": ours, "torch_profiler": torch,
                      "trainprof_no_stacks": nostacks}
    if base:
        res["overhead_pct"] = {t: (v / base - 1) * 100 if v else None
                               for t, v in (("trainprof", ours), ("torch_profiler", torch),
                                            ("trainprof_no_stacks", nostacks))}
    res["ok"] = not fail
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    t = res["totals"]
    print("kernels: ours %d, torch.profiler %d; total time ratio %s (goal 1 +- %.0f%%: %s)"
          % (t["kernels_ours"], t["kernels_torch"],
             "%.4f" % ratio if ratio else "-", a.tolerance * 100,
             "met" if t["time_goal_met"] else "not met"))
    print("copies: ours %s, torch.profiler %s" % (dict(c_ours), dict(c_kin)))
    print("stacks: %d kernels without launch; without Python frames: %d from Python threads, "
          "from other threads %s" % (no_launch, no_py["python_threads"], no_py["other_threads"]))
    if "overhead_pct" in res:
        print("step time (median ms): %s" % ", ".join(
            "%s %.3f" % (k, v) for k, v in res["step_ms"].items() if v))
        print("overhead: %s" % ", ".join(
            "%s %+.1f%%" % (k, v) for k, v in res["overhead_pct"].items() if v is not None))
    for x in fail:
        print("FAIL:", x)
    sys.exit(0 if res["ok"] else 1)


main()
