"""multiprocessing.Pool(4): workers emit ranges and end through os._exit (as every
multiprocessing and DataLoader worker does); `with` terminates the pool (SIGTERM). Each
worker marks its start ("init") and waits there for the other three, so all four have
recorded something before any task runs (however tasks are shared, and before `with`
terminates them)."""
import multiprocessing as mp
import sys

import nvtx


def init(barrier):
    with nvtx.annotate("init"):
        barrier.wait()


def work(i):
    with nvtx.annotate("task"):
        with nvtx.annotate("inner"):
            return i * i


if __name__ == "__main__":
    n = int(sys.argv[1])
    with nvtx.annotate("main"):
        started = mp.Barrier(4)
        with mp.Pool(4, initializer=init, initargs=(started,)) as pool:
            total = sum(pool.map(work, range(n), chunksize=1))
    print(total)
