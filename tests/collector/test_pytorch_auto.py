#!/usr/bin/env python3
"""`trainprof record --pytorch`: a PyTorch loop without annotations gets its steps, DataLoader
fetches and optimizer steps as ranges, with real processes.

usage: test_pytorch_auto.py TRAINPROF PYTHON [TORCH_PYTHON]
PYTHON runs tests/collector/pytorch_prog.py against the stand-in torch of torchstub/ (CI has no
torch; the stand-in has the API surface the start-up file uses, as torch >= 2.0 has it);
TORCH_PYTHON, when given (or $TORCH_PYTHON), a Python with torch itself runs the loader loop
too. Checked on the exported trace, by counts and order, never by durations:
(a) loader mode (a DataLoader fetch before the first update; sampled): one "step" per update of the
    first optimizer (the second's updates end none), each starting where the fetch before it
    ended and ending where the next fetch starts (nothing of ours between: the failing fetch
    that ends an epoch ends its last step), holding its "backward" pass (Tensor.backward ->
    torch.autograd.backward), both optimizers' "optimizer.step" and no fetch;
    every fetch is a "DataLoader.__next__" range (the failing one that ends an epoch too);
    the report's steps are those steps, and it finds the loop input-bound on the ranges
    (the batch's decoding is most of the loop's work), with what the samples inside the
    fetches saw (the stand-in's single-process DataLoader: the dataset's line) and, as its
    source, the program's `for` line that fetches (the fetch's stack, under the default
    --stacks api);
(a') with gradient accumulation (an update every second batch) and an evaluation loop after
    each epoch: one step per update from its first micro-batch, holding both backward passes and
    the second fetch, and no evaluation fetch in a step;
(b) back to back (no DataLoader): one step per update, each from the end of the one before,
    holding its backward pass and update (the first: its update alone), and no step begun
    after the last update;
(c) a sitecustomize of the user's on PYTHONPATH still runs, and sys.path is as without us;
(d) without --pytorch no range is made;
(e) --capture by a step's name, which --pytorch's steps (written at their end) never open, is
    refused with one line and exit 2 before the program runs;
(f) a loop with no update (inference) gets no step, and its report says why, from the trace's
    record of --pytorch, instead of suggesting --pytorch."""
import json
import os
import subprocess
import sys
import tempfile

TP, PY = sys.argv[1], sys.argv[2]
TORCH_PY = sys.argv[3] if len(sys.argv) > 3 else os.environ.get("TORCH_PYTHON", "")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tp_check import check, exit_status  # noqa: E402  (tests/tp_check.py)


def record(tmp, name, py, args, pytorch=True, stub=True, extra=()):
    env = dict(os.environ)
    paths = [os.path.join(HERE, "torchstub")] if stub else []
    env["PYTHONPATH"] = os.pathsep.join(paths + [os.path.join(tmp, "usersite")])
    out = os.path.join(tmp, name + ".tprof")
    cmd = [TP, "record", "-o", out] + (["--pytorch"] if pytorch else []) + list(extra) + \
        ["--", py, os.path.join(HERE, "pytorch_prog.py")] + args
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    check(p.returncode == 0, "%s: record exit %d: %s" % (name, p.returncode, p.stderr[-2000:]))
    check("sitecustomize chained: yes" in p.stdout, "%s: the user's sitecustomize did not run: %s"
          % (name, p.stdout))
    check("path clean: yes" in p.stdout, "%s: sys.path keeps the start-up folder" % name)
    js = os.path.join(tmp, name + ".json")
    subprocess.run([TP, "export", out, "--format", "chrome", "-o", js, "-q"], check=True)
    with open(js) as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    return out, ev


def ranges(ev, name):
    return sorted(((e["ts"], e["ts"] + e["dur"]) for e in ev if e["name"] == name))


def inside(r, rs):
    return [x for x in rs if x[0] >= r[0] and x[1] <= r[1]]


def check_loader(tmp, name, py, stub, epochs, batches):
    out, ev = record(tmp, name, py, ["loader", str(epochs), str(batches)], stub=stub,
                     extra=["--sample-hz", "1000"])
    steps, fetches = ranges(ev, "step"), ranges(ev, "DataLoader.__next__")
    opts, backs = ranges(ev, "optimizer.step"), ranges(ev, "backward")
    n = epochs * batches
    check(len(backs) == n, "%s: %d backward passes, not %d" % (name, len(backs), n))
    check(len(steps) == n, "%s: %d steps for %d updates" % (name, len(steps), n))
    check(len(fetches) == n + epochs, "%s: %d fetches, not %d" % (name, len(fetches), n + epochs))
    check(len(opts) == 2 * n, "%s: %d optimizer steps, not %d" % (name, len(opts), 2 * n))
    ours = sorted(fetches + opts + steps)
    for s in steps:
        before = [f for f in fetches if f[1] <= s[0]]
        check(before and not [x for x in ours if before[-1][1] < x[0] < s[0]],
              "%s: step %s does not start where its fetch ended" % (name, s))
        after = [f for f in fetches if f[0] >= s[1]]
        check(after and not [x for x in ours if s[1] < x[0] < after[0][0]],
              "%s: step %s does not end where the next fetch starts" % (name, s))
        # the model's update and the second optimizer's after it: the step runs to the fetch
        check(len(inside(s, opts)) == 2 and not inside(s, fetches) and
              len(inside(s, backs)) == 1,
              "%s: step %s holds %d optimizer steps, %d fetches, %d backward passes" %
              (name, s, len(inside(s, opts)), len(inside(s, fetches)), len(inside(s, backs))))
    p = subprocess.run([TP, "report", out, "--format", "json", "-q"], capture_output=True,
                       text=True)
    if not check(p.returncode == 0, "%s: report exit %d: %s" % (name, p.returncode,
                                                                p.stderr[-3000:])):
        return
    rank = json.loads(p.stdout)["ranks"][0]
    found = {f["id"]: f for f in rank["findings"]}
    if check("host-input-bound" in found, "%s: no host-input-bound finding: %s" % (name, found)):
        # sampled: what the step thread did inside the fetches (the stand-in's DataLoader
        # runs the dataset in the main thread: its decoding line)
        ev_text = found["host-input-bound"]["evidence"]
        check("Sampled inside the data-loading ranges (" in ev_text,
              "%s: no samples in the finding: %s" % (name, ev_text))
        for_line = [i + 1 for i, l in enumerate(open(os.path.join(HERE, "pytorch_prog.py")))
                    if "# FOR" in l][0]
        src = found["host-input-bound"].get("source", "")
        check("pytorch_prog.py:%d in <module>" % for_line in src,
              "%s: the finding's source is not the loop's line %d: %s" % (name, for_line, src))
        check("most of it at" not in ev_text or "in Dataset.__getitem__" in ev_text.split(
            "most of it at")[1].split("(")[0] or not stub,
              "%s: the fetch's CPU is not the dataset's line: %s" % (name, ev_text))
    check(rank["steps"]["count"] == n, "%s: the report counts %s steps" % (name, rank["steps"]["count"]))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "usersite"))
        with open(os.path.join(tmp, "usersite", "sitecustomize.py"), "w") as f:
            f.write('import os\nos.environ["USER_SITECUSTOMIZE"] = "ran"\n')
        check_loader(tmp, "loader", PY, True, 2, 4)
        # (a') gradient accumulation and an evaluation loop: a step per update, from its first
        # micro-batch (its second fetch inside it), and no evaluation fetch in any step
        _, ev = record(tmp, "accum", PY, ["accum", "2", "4"])
        steps, fetches = ranges(ev, "step"), ranges(ev, "DataLoader.__next__")
        backs = ranges(ev, "backward")
        check(len(steps) == 4, "accum: %d steps for 4 updates" % len(steps))
        check(len(fetches) == 2 * (4 + 1) + 2 * (3 + 1), "accum: %d fetches" % len(fetches))
        check(all(len(inside(s, backs)) == 2 and len(inside(s, fetches)) == 1 for s in steps),
              "accum: a step without its two micro-batches: %s" %
              [(len(inside(s, backs)), len(inside(s, fetches))) for s in steps])
        # (b) back to back
        _, ev = record(tmp, "b2b", PY, ["b2b", "2", "4"])
        steps, opts = ranges(ev, "step"), ranges(ev, "optimizer.step")
        check(len(steps) == 8 and len(opts) == 8, "b2b: %d steps, %d updates" % (len(steps), len(opts)))
        check(not ranges(ev, "DataLoader.__next__"), "b2b: fetches")
        for a, b in zip(steps, steps[1:]):
            check(b[0] >= a[1] and not [o for o in opts if a[1] < o[0] < b[0]],
                  "b2b: step %s does not start where %s ended" % (b, a))
        backs = ranges(ev, "backward")  # the first step is its update alone (docs/collector.md)
        check(all(len(inside(s, opts)) == 1 and len(inside(s, backs)) == (k > 0)
                  for k, s in enumerate(steps)), "b2b: a step without its update or backward")
        check(opts[-1][1] <= steps[-1][1], "b2b: an update after the last step")
        # (f) no update at all (inference): no step, and the report says why (it knows the
        # run was recorded with --pytorch) instead of suggesting it
        out, ev = record(tmp, "infer", PY, ["infer", "2", "3"])
        check(not ranges(ev, "step") and len(ranges(ev, "DataLoader.__next__")) == 8,
              "infer: %d steps, %d fetches" % (len(ranges(ev, "step")),
                                                len(ranges(ev, "DataLoader.__next__"))))
        text = subprocess.run([TP, "report", out, "-q"], capture_output=True, text=True).stdout
        check("variable                 TRAINPROF_PYTORCH=1" in text and
              "nothing judged on the host: no training step: `trainprof record --pytorch` marks "
              "one per update of the first optimizer, and this run made none" in text,
              "infer: the report does not say why there is no step: %s" % text[:1500])
        # (d) without --pytorch
        _, ev = record(tmp, "plain", PY, ["loader", "1", "3"], pytorch=False)
        check(not ranges(ev, "step") and not ranges(ev, "DataLoader.__next__") and
              not ranges(ev, "optimizer.step"), "ranges without --pytorch")
        # (e) a capture by the step's name would never open: refused before the program runs
        p = subprocess.run([TP, "record", "--pytorch", "--capture", "nvtx:train_step", "--",
                            PY, "-c", "open(%r, 'w')" % os.path.join(tmp, "ran")],
                           capture_output=True, text=True)
        check(p.returncode == 2 and "would never open" in p.stderr.splitlines()[0] and
              not os.path.exists(os.path.join(tmp, "ran")),
              "--pytorch --capture nvtx:train_step: exit %d, %r" % (p.returncode, p.stderr[:200]))
        if TORCH_PY:
            check_loader(tmp, "torch", TORCH_PY, False, 2, 4)
        else:
            print("note: no TORCH_PYTHON: the loop ran against the stand-in only")
    return exit_status()


if __name__ == "__main__":
    sys.exit(main())
