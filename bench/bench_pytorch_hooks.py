#!/usr/bin/env python3
"""What `trainprof record --pytorch` adds to a training loop: one DataLoader fetch, one
backward pass (torch only) and one optimizer update per iteration, with little work of their own, timed by the program itself, under
`record` without and with --pytorch, alternating, the same minute.

usage: bench_pytorch_hooks.py TRAINPROF PYTHON [RUNS] [ITERATIONS]
PYTHON's torch is used when it has one (set STUB=1 to use tests/collector/torchstub instead);
without torch, the stand-in. Prints the median loop time per iteration of each and the
difference: the cost of the ranges (a fetch's and a backward pass's push and pop, an update's
push, pop and its step, through ctypes into the collector)."""
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
STUB = os.path.join(HERE, "..", "tests", "collector", "torchstub")
PROG = r'''
import sys, time, torch
n = int(sys.argv[1])
class D:
    def __len__(self): return n
    def __getitem__(self, i): return i
real = hasattr(torch, "zeros")
p = [torch.zeros(1, requires_grad=True)] if real else [1.0]
opt = torch.optim.SGD(p, lr=0.1)
if not real:
    opt._step = lambda: None
loader = torch.utils.data.DataLoader(D())
t = time.perf_counter()
for b in loader:
    if real:  # (the stand-in's backward pass does work of its own: left out there)
        (p[0] * 2).sum().backward()
    opt.step()
print("per_iter_ns", (time.perf_counter() - t) / n * 1e9)
'''


def run(tp, py, n, pytorch, tmp, env):
    cmd = [tp, "record", "-o", os.path.join(tmp, "t.tprof"), "--force"] + \
        (["--pytorch"] if pytorch else []) + ["--", py, os.path.join(tmp, "prog.py"), str(n)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return float([l for l in out.splitlines() if l.startswith("per_iter_ns")][0].split()[1])


def main():
    tp, py = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    n = int(sys.argv[4]) if len(sys.argv) > 4 else 20000
    env = dict(os.environ)
    has_torch = subprocess.run([py, "-c", "import torch"], capture_output=True).returncode == 0
    if os.environ.get("STUB") == "1" or not has_torch:
        env["PYTHONPATH"] = STUB
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "prog.py"), "w") as f:
            f.write(PROG)
        base, hooked = [], []
        for _ in range(runs):
            base.append(run(tp, py, n, False, tmp, env))
            hooked.append(run(tp, py, n, True, tmp, env))
    b, h = statistics.median(base), statistics.median(hooked)
    print("%s, %d runs x %d iterations, load %.1f -> %.1f" %
          ("stand-in torch" if "PYTHONPATH" in env and env["PYTHONPATH"] == STUB else "torch",
           runs, n, load0, os.getloadavg()[0]))
    print("per iteration: without --pytorch %.2f us, with %.2f us: +%.2f us (%.2fx)" %
          (b / 1e3, h / 1e3, (h - b) / 1e3, h / b))


if __name__ == "__main__":
    main()
