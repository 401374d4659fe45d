#!/usr/bin/env python3
"""timed_run: runs a command and writes "WALL_S CPU_S MAXRSS_KIB" of it to the file OUT: WALL
from its start to its exit (perf_counter), CPU its user+system time (wait4), to the
microsecond; GNU time prints 10 ms steps, a tenth of a 0.1 s `trainprof report`, enough to
decide a 30x ratio either way. The peak RSS still comes from GNU time (%M), run between us and
the command: a child forked from this Python would start with Python's resident pages in its
high-water mark (Linux keeps the mark across exec), ~10 MB more than the command used. GNU
time's own start (~1 ms) is in WALL and CPU, the same for every command measured.
usage: timed_run.py OUT CMD [ARG...]     (stdout and stderr are the command's; exits with its
                                          status)"""
import os
import subprocess
import sys
import tempfile
import time

GNU_TIME = "/usr/bin/time"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, cmd = sys.argv[1], sys.argv[2:]
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        if not os.access(GNU_TIME, os.X_OK):
            sys.exit(f"timed_run: needs GNU time at {GNU_TIME} (for the peak RSS)")
        t0 = time.perf_counter()
        p = subprocess.Popen([GNU_TIME, "-q", "-f", "%M", "-o", rss.name, *cmd])
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        kib = (rss.read().split() or ["0"])[-1]
    with open(out, "w") as f:
        f.write(f"{wall:.6f} {ru.ru_utime + ru.ru_stime:.6f} {kib}\n")
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
