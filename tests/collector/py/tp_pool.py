"""multiprocessing.Pool(4): workers emit ranges and end through os._exit (as every
multiprocessing and DataLoader worker does); `with` terminates the pool (SIGTERM). Each
worker marks its start (an "init" range) and then waits for the other three, so all four have
recorded something before any task runs (however tasks are shared, and before `with`
terminates them). The wait is after the range, not inside it: a worker that the barrier
released but the scheduler of a loaded machine had not run yet could otherwise still be in
"init" when `with` terminates the pool, and its trace would rightly hold an unclosed range."""
import multiprocessing as mp
import sys

import nvtx


def init(barrier):
    with nvtx.annotate("init"):
        pass
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
