"""multiprocessing.Pool(4): workers emit ranges and end through os._exit (as every
multiprocessing and DataLoader worker does); `with` terminates the pool (SIGTERM). Each
worker marks its start ("init"), so every worker has a trace however tasks are shared."""
import multiprocessing as mp
import sys

import nvtx


def init():
    with nvtx.annotate("init"):
        pass


def work(i):
    with nvtx.annotate("task"):
        with nvtx.annotate("inner"):
            return i * i


if __name__ == "__main__":
    n = int(sys.argv[1])
    with nvtx.annotate("main"):
        with mp.Pool(4, initializer=init) as pool:
            total = sum(pool.map(work, range(n), chunksize=1))
    print(total)
