#!/usr/bin/env python3
"""bench_sampler: what `trainprof record --sample` costs a CPython program.

A fixed amount of pure-Python work on the main thread at the bottom of DEPTH frames (default
30), with THREADS - 1 other threads alive beside it that sleep 1 ms at a time (a DataLoader's
pin-memory and queue threads, a logger): every sampling round walks all of them. Run side by
side in fresh processes, RUNS rounds of alternating setups (the machine's load is the same
for all): `trainprof record` without sampling, and with --sample-hz 100 and 1000. Reported per
setup, medians: the work's wall time as the program measured it (what the program sees of the
sampler: the sampler runs on its own thread, so this is the contention for the CPU and the GIL
it does not take), the process's CPU time (the sampler's work is in it), the samples written,
the sampler thread's own CPU time (its schedstat, read by the program at its end), per sample
and as a share of one core over the work's wall time.

usage: bench_sampler.py TRAINPROF PYTHON [RUNS] [THREADS] [DEPTH] [sleeping|blocked] [NATIVE]
  sleeping (default): the other threads wake every 1 ms, so each sample finds them moved;
  blocked: they wait on an event the whole run, as most of a training job's threads do (a
  thread whose CPU clock has not moved is not walked again);
  NATIVE (default 0): as many threads that are not Python's, asleep all along (libc's sleep
  started through ctypes' pthread_create), as a CUDA job's driver, NCCL and pool threads: each
  round reads their CPU clocks (trainprof since trace format 1.9)"""
import os
import re
import statistics
import subprocess
import sys
import tempfile

PROG = r'''
import resource, sys, threading, time
depth, threads, blocked = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "blocked"
if int(sys.argv[4]):
    import ctypes
    libc = ctypes.CDLL(None)
    for _ in range(int(sys.argv[4])):
        th = ctypes.c_ulong()
        libc.pthread_create(ctypes.byref(th), None, ctypes.cast(libc.sleep, ctypes.c_void_p),
                            ctypes.c_void_p(3600))
stop = threading.Event()
def idle():
    if blocked:  # waits on a lock the whole run: never on a CPU
        stop.wait()
    while not stop.is_set():
        time.sleep(0.001)
for _ in range(threads - 1):
    threading.Thread(target=idle, daemon=True).start()
def work(d):
    if d:
        return work(d - 1)
    x = 0
    for i in range(30000000):
        x += i & 7
    return x
t = time.perf_counter()
work(depth)
wall = time.perf_counter() - t
stop.set()
ru = resource.getrusage(resource.RUSAGE_SELF)
import os
samp = 0.0  # the sampler thread's own CPU time (schedstat: ns on a CPU)
for tid in os.listdir("/proc/self/task"):
    try:
        if open(f"/proc/self/task/{tid}/comm").read().strip() == "trainprof-samp":
            samp = int(open(f"/proc/self/task/{tid}/schedstat").read().split()[0]) / 1e9
    except OSError:
        pass
print("RESULT", wall, ru.ru_utime + ru.ru_stime, samp)
'''


def run(tp, python, hz, threads, depth, tmp, idle, native):
    out = os.path.join(tmp, "t.tprof")
    cmd = [tp, "record", "-o", out, "--force", "--no-cuda"]
    if hz:
        cmd += ["--sample-hz", str(hz)]
    r = subprocess.run(cmd + ["--", python, "-c", PROG, str(depth), str(threads), idle,
                                   str(native)],
                       capture_output=True, text=True, check=True)
    wall, cpu, samp = (float(x) for x in
                       re.search(r"RESULT (\S+) (\S+) (\S+)", r.stdout).groups())
    m = re.search(r"SAMPLE (\d+)", r.stderr)
    return wall, cpu, int(m.group(1)) if m else 0, samp


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    tp, python = sys.argv[1:3]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 7
    threads = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    depth = int(sys.argv[5]) if len(sys.argv) > 5 else 30
    idle = sys.argv[6] if len(sys.argv) > 6 else "sleeping"
    native = int(sys.argv[7]) if len(sys.argv) > 7 else 0
    setups = [0, 100, 1000]
    got = {hz: [] for hz in setups}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(runs):
            for hz in setups:
                got[hz].append(run(tp, python, hz, threads, depth, tmp, idle, native))
    print(f"load {os.getloadavg()[0]:.2f}; {runs} runs each, {threads} threads "
          f"({threads - 1} {idle}), {native} native asleep, work at depth {depth}; medians")
    base_wall = statistics.median(g[0] for g in got[0])
    base_cpu = statistics.median(g[1] for g in got[0])
    print(f"{'setup':>16} {'work wall s':>12} {'ratio':>7} {'CPU s':>8} {'samples':>8} "
          f"{'sampler CPU s':>14} {'us/sample':>10} {'of a core':>10}")
    for hz in setups:
        wall = statistics.median(g[0] for g in got[hz])
        cpu = statistics.median(g[1] for g in got[hz])
        n = statistics.median(g[2] for g in got[hz])
        samp = statistics.median(g[3] for g in got[hz])
        per = samp / n * 1e6 if n else float("nan")
        name = f"--sample-hz {hz}" if hz else "no sampling"
        print(f"{name:>16} {wall:12.3f} {wall / base_wall:7.3f} {cpu:8.3f} {n:8.0f} "
              f"{samp:14.4f} {per:10.1f} {samp / wall:9.2%}")
    return 0


sys.exit(main())
