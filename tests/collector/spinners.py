"""Busy processes beside a test program's loop (sampler_prog.py's contend mode, ranks_prog.py):
`with spinners(n):` forks n processes that compute until the block ends, then reaps them. They
are the program's own (fork children: sampled with it under `record --sample`)."""
import contextlib
import os
import select


def burn(n):
    """n iterations of pure-Python arithmetic: CPU work the sampler sees on a line."""
    x = 0
    for i in range(n):
        x += i * i
    return x


@contextlib.contextmanager
def spinners(n, work=burn):
    """n forked processes calling work(20000) until the block ends (the pipe they watch
    closes)."""
    r, w = os.pipe()
    pids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            os.close(w)
            while not select.select([r], [], [], 0)[0]:
                work(20000)
            os._exit(0)
        pids.append(pid)
    os.close(r)
    try:
        yield
    finally:
        os.close(w)
        for pid in pids:
            os.waitpid(pid, 0)
