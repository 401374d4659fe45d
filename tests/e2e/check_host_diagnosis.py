#!/usr/bin/env python3
"""A diagnosis without a GPU (issue 10): real CPython programs (tests/e2e/host_prog.py,
through the nvtx package) recorded by `trainprof record`, then `trainprof report`.

- input-bound (a "data" range inside each step) and input-bound-next (a DataLoader __next__
  range before each step) are diagnosed host-input-bound with a data share >= 30 %;
- gaps (the batch fetched before each step with no range open: a loop that annotates only
  its steps) is diagnosed host-step-gaps, from the time with no range open (>= 30 %), and not
  host-input-bound;
- healthy is neither;
- every one gets the full text report of a CPU-only rank: the diagnosis says what it cannot
  judge without device activity, then Steps, Step time on the host, Annotation ranges, CPU
  operators and Threads.
The programs sleep 10x longer for data than they compute (or 1/50 as long), so only the
structure is asserted, never a duration.

usage: check_host_diagnosis.py TRAINPROF PYTHON PROGRAM
Exit 0 pass, 1 fail, 77 skip (no .deps/pyenv with the nvtx package; a failure under CI=true).
"""
import json
import os
import subprocess
import sys
import tempfile

FAILS = []


def gaps_step_line(prog):
    """host_prog.py's line that opens the step range in gaps mode (after the bare fetch)."""
    lines = open(prog).read().splitlines()
    return next(i + 1 for i, line in enumerate(lines)
                if 'annotate("step")' in line and "time.sleep(DATA_S)" in lines[i - 1])


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    return p.stdout


def main():
    tp, python, prog = sys.argv[1:4]
    if not os.path.exists(python):  # scripts/install-deps.sh makes .deps/pyenv
        if os.environ.get("CI") == "true":
            print("FAIL: %s missing and CI=true" % python)
            return 1
        print("SKIP: %s missing (scripts/install-deps.sh)" % python)
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("input-bound", "input-bound-next", "gaps", "healthy"):
            trace = os.path.join(tmp, mode + ".tprof")
            run([tp, "record", "-o", trace, "--", python, prog, mode])
            rank = json.loads(run([tp, "report", "--format", "json", trace]))["ranks"][0]
            text = run([tp, "report", trace])
            check(not rank["has_gpu"], "%s: recorded device activity" % mode)
            ids = [f["id"] for f in rank["findings"]]
            host = rank["host"]
            check(host["n_steps"] == 8, "%s: %d steps, expected 8" % (mode, host["n_steps"]))
            share = host["data_ns"] / host["window_ns"]
            gaps = host["unrecorded_ns"] / host["window_ns"]
            check(0 <= host["unrecorded_ns"] and
                  host["data_ns"] + host["ops_ns"] + host["unrecorded_ns"] <= host["window_ns"],
                  "%s: host parts %s" % (mode, host))
            check("\n  between steps, no range open " in text,
                  "%s: no 'between steps' row in Step time on the host" % mode)
            if mode == "gaps":
                check("host-input-bound" not in ids, "gaps: diagnosed %s" % ids)
                check(ids[:1] == ["host-step-gaps"], "gaps: findings %s" % ids)
                check(gaps >= 0.30 and share < 0.30, "gaps: no range %.2f, data %.2f" % (gaps, share))
                f = rank["findings"][0] if ids else {"metrics": {}, "source": ""}
                check(f["metrics"].get("share", 0) >= 0.30 and
                      f["metrics"].get("unrecorded_ns") == host["unrecorded_ns"],
                      "gaps: metrics %s against host %s" % (f["metrics"], host))
                check("'step'" in f["source"] and "trainprof record --stacks all" in f["source"],
                      "gaps: source %r names the range and how to record its line" % f["source"])
                check("between steps: the training loop spends" in text,
                      "gaps: no host-step-gaps finding in the text")
                st = rank["steps"]
                check(st.get("period_mean_ns", 0) > 5 * st["mean_ns"] and
                      "; start to start " in text.split("\nSteps: 8", 1)[-1].split("\n", 1)[0],
                      "gaps: the loop's period beside the steps' durations (%s)" % st)
                # with stacks at NVTX pushes, the finding says where the step range opens
                traced = os.path.join(tmp, "gaps-stacks.tprof")
                run([tp, "record", "--stacks", "all", "-o", traced, "--", python, prog, mode])
                g = [f for f in json.loads(run([tp, "report", "--format", "json", traced]))
                     ["ranks"][0]["findings"] if f["id"] == "host-step-gaps"]
                src = g[0]["source"] if g else ""
                check("; stack: " in src and "host_prog.py:%d in main" % gaps_step_line(prog) in src,
                      "gaps: the step range's stack in the source (%r)" % src)
                # it reads from the nvtx package's call to the program's line: no binding
                # frames (the extension's native ones) before it; the JSON says whose is whose
                shown = src.split("; stack: ", 1)[-1].split(" < ")
                check(len(shown) >= 2 and shown[0].startswith("nvtx.py:") and
                      shown[1] == "host_prog.py:%d in main" % gaps_step_line(prog),
                      "gaps: the stack reads from the package's call to the program's (%r)" % src)
                fr = g[0]["frames"] if g else []
                own = [f["library"] for f in fr if f["file"].endswith("host_prog.py")]
                lib = [f["library"] for f in fr if f["file"].endswith("nvtx.py") or not f["file"]
                       or f["file"].endswith(".c") or f["file"].endswith(".h")]
                check(own and lib and not any(own) and all(lib),
                      "gaps: library frames flagged, the program's not (%s)" % fr)
            else:
                # the __next__ range lies between the steps: their period is the loop's
                check(("period_mean_ns" in rank["steps"]) == (mode == "input-bound-next"),
                      "%s: a period only where the steps do not follow each other (%s)"
                      % (mode, rank["steps"]))
                check("host-step-gaps" not in ids and gaps < 0.30,
                      "%s: diagnosed %s, no range open %.2f" % (mode, ids, gaps))
            if mode == "healthy":
                check("host-input-bound" not in ids, "healthy: diagnosed %s" % ids)
                check(share < 0.30, "healthy: data share %.2f" % share)
                check("no problem found on the host" in text, "healthy: text says a problem")
            elif mode != "gaps":
                check(ids[:1] == ["host-input-bound"], "%s: findings %s" % (mode, ids))
                f = rank["findings"][0] if ids else {"metrics": {}, "source": ""}
                check(f["metrics"].get("share", 0) >= 0.30, "%s: share %s" % (mode, f["metrics"]))
                want = "data" if mode == "input-bound" else "__next__"
                check(want in f["source"], "%s: source %r" % (mode, f["source"]))
                check("input-bound: the training loop waits for data" in text,
                      "%s: no input-bound finding in the text" % mode)
            check("input-bound" in host["not_judged"] and "launch-bound" in host["not_judged"],
                  "%s: not_judged %s" % (mode, host["not_judged"]))
            check("not judged without device activity: input-bound" in text,
                  "%s: the text does not say what it cannot judge" % mode)
            heads = ("\nDiagnosis", "\nSummary", "\nSteps: 8", "\nStep time on the host (8 steps",
                     "\nAnnotation ranges", "\nCPU operators", "\nThreads (")
            at = [text.find(s) for s in heads]
            check(all(a >= 0 for a in at) and at == sorted(at),
                  "%s: text sections missing or out of order %s" % (mode, at))
            names = {o["name"] for o in rank["cpu_ops"]["ops"]}
            check({"step", "forward", "backward"} <= names, "%s: cpu_ops %s" % (mode, names))
    print("%d failures" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
