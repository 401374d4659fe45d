#!/usr/bin/env python3
"""The program's count of its own threads leaves trainprof's out (the writer's drain, the
sampler, the guard's helper), with real processes.

usage: test_collector_threadcount.py TRAINPROF PYTHON
CPython 3.12+ reads the count at os.fork() (the 20th field of /proc/self/stat, through fopen)
and warns "This process ... is multi-threaded, use of fork() may lead to deadlocks" above 1:
without the collector leaving its threads out, every recorded program that forks warned, and
failed under -W error (pytest's filterwarnings = error; multiprocessing and DataLoader workers
fork). Checked, with and without --sample:
(a) through libc's fopen (ctypes), /proc/self/stat counts the program's threads: one alone,
    three with two threads of its own, as its /proc/self/task lists threads not named
    trainprof-*; other paths and modes are the files themselves;
(b) every CPython >= 3.12 found (pyenv, /usr/bin, $TP_TEST_PYTHONS) forks under -W error,
    through os.fork() and a multiprocessing "fork" pool, as without trainprof: exit 0, the
    same output, no warning;
(c) a program with a thread of its own still gets the warning, as without trainprof."""
import os
import re
import subprocess
import sys
import tempfile

TP, PY = os.path.abspath(sys.argv[1]), sys.argv[2]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tp_check import check, exit_status  # noqa: E402  (tests/tp_check.py)
from tp_pythons import cpythons, version  # noqa: E402  (tests/tp_pythons.py)

COUNT = r"""
import ctypes, os, sys, threading
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.fgets.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
def line(path, mode=b"r"):
    f = libc.fopen(path, mode)
    buf = ctypes.create_string_buffer(4096)
    # the whole line as proc(5) has it: the fields after num_threads as well
    libc.fgets(buf, 4096, f)
    libc.fclose(f)
    return buf.value.decode()
def counts():
    n = int(line(b"/proc/self/stat").rsplit(")", 1)[1].split()[17])
    mine = sum(1 for t in os.listdir("/proc/self/task")
               if not open("/proc/self/task/%s/comm" % t).read().startswith("trainprof-"))
    return n, mine
def fields(text):
    head, rest = text.rsplit(")", 1)
    return [head + ")"] + rest.split()
# every field but the count as the file has it (those that do not change between two reads:
# pid to flags, priority, nice, start time), and as many fields
a, b = fields(line(b"/proc/self/stat")), fields(open("/proc/self/stat").read())
same = len(a) == len(b) and all(a[i] == b[i] for i in list(range(0, 8)) + [16, 17, 20])
out = [same, counts()]
ev = threading.Event()
ts = [threading.Thread(target=ev.wait) for _ in range(2)]
for t in ts:
    t.start()
out.append(counts())
ev.set()
for t in ts:
    t.join()
# another file through fopen, and /proc/self/stat opened for writing: untouched
out.append(line(b"/proc/self/comm").strip())
f = libc.fopen(b"/proc/self/stat", b"r+")
out.append(f is None)
print(out)
"""

FORK = r"""
import multiprocessing as mp, os
pid = os.fork()
if pid == 0:
    os._exit(7)
print("child", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
with mp.get_context("fork").Pool(2) as p:
    print("pool", sum(p.map(abs, range(-5, 5))))
"""

THREADED = r"""
import os, threading
ev = threading.Event()
t = threading.Thread(target=ev.wait)
t.start()
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
ev.set()
t.join()
print("forked")
"""


def run(tmp, py, code, args, traced, sample):
    cmd = [py] + args + ["-c", code]
    if traced:
        cmd = [TP, "record", "-o", os.path.join(tmp, "t.tprof"), "--force"] + \
            (["--sample"] if sample else []) + ["--"] + cmd
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)


def program_stderr(err):
    """The program's stderr without record's summary (from its first "trainprof: " line on), and
    with pids as "PID"."""
    err = err.split("trainprof: ")[0]
    return re.sub(r"pid=\d+", "pid=PID", err)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for sample in (False, True):
            how = "--sample" if sample else "record"
            # (a)
            r = run(tmp, PY, COUNT, [], True, sample)
            check(r.returncode == 0, "%s: count: exit %d: %s" % (how, r.returncode, r.stderr[-800:]))
            got = r.stdout.strip()
            check(got.startswith("[True, (1, 1), (3, 3), "),
                  "%s: /proc/self/stat through fopen does not count the program's threads: %s"
                  % (how, got))
            plain = run(tmp, PY, COUNT, [], False, False).stdout.strip()
            check(got == plain, "%s: count: %s, without trainprof %s" % (how, got, plain))
            # (b), (c)
            tried = 0
            for py in cpythons([PY]):
                v = version(py)
                if not v or v < (3, 12):
                    continue
                tried += 1
                want = run(tmp, py, FORK, ["-W", "error"], False, False)
                got = run(tmp, py, FORK, ["-W", "error"], True, sample)
                check(want.returncode == 0 and got.returncode == 0 and
                      got.stdout == want.stdout and "multi-threaded" not in got.stderr,
                      "%s: %s -W error forking: exit %d, %r, %r (without trainprof: exit %d, %r)"
                      % (how, py, got.returncode, got.stdout, program_stderr(got.stderr)[-600:],
                         want.returncode, want.stdout))
                want = run(tmp, py, THREADED, [], False, False)
                got = run(tmp, py, THREADED, [], True, sample)
                check("multi-threaded" in want.stderr and
                      program_stderr(got.stderr) == program_stderr(want.stderr),
                      "%s: %s with a thread of its own: %r, without trainprof %r"
                      % (how, py, program_stderr(got.stderr), want.stderr))
            if not tried:
                print("note: no CPython >= 3.12 found: (b) and (c) not run")
    return exit_status()


if __name__ == "__main__":
    sys.exit(main())
