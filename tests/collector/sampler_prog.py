"""A training loop whose steps wait for a producer, for test_collector_sampler.py.

usage: sampler_prog.py thread|process|workers|inline|loader-inline|warm|phases|contend
                      [STEPS [SPINNERS]]
       sampler_prog.py native STEPS SPINNERS LIBNATIVE_SPIN
The main thread runs STEPS steps, each an NVTX range "train_step" (with the nvtx package when
it is there, else none) around ~3 ms of CPU work; between the steps it takes the next batch:
- thread:  from a queue a producer thread fills, each batch ~4x a step of CPU in augment();
- process: from a pipe a forked producer process fills the same way (a DataLoader worker);
- workers: as a DataLoader without persistent_workers does over EPOCHS epochs: each epoch
           forks 2 producer processes named as PyTorch names its workers, takes the batches
           from them in turn inside "DataLoader.__next__" ranges (STEPS / EPOCHS of them), and
           joins them in one more such range, the one that ends the epoch;
- inline:  by computing augment() itself (loader-inline: inside "DataLoader.__next__" ranges,
           as a DataLoader without workers does);
- warm:    none: STEPS steps after start-up work (augment(), ~4x the steps' CPU) outside any;
- phases:  STEPS long steps of augment() work, each followed by half again as much outside any
           range (for --capture: samples only in the steps);
- contend: none: STEPS steps of 4x the usual work while SPINNERS forked processes (default:
           2 per CPU the process may use, and one more) compute until the loop ends: more
           busy threads than CPUs (0: none of the job's own);
- native:  as contend, the spinners threads of C code (LIBNATIVE_SPIN, tests/collector/
           native_spin.c, through ctypes) in the process itself: an OpenMP pool's kind; and 3
           more such threads that wait all along (a CUDA job's driver and NCCL threads).
A sleeper thread wakes every 5 ms all along. The lines the test looks for carry `# @tag`."""
import os
import sys
import threading
import time

try:
    import nvtx
    annotate = nvtx.annotate
except ImportError:  # the other CPythons of the test: no ranges, only samples
    import contextlib
    annotate = contextlib.nullcontext


def augment(n):
    x = 0
    for i in range(n):
        x += i * i  # @augment
    return x


def train_step():
    x = 0
    for i in range(30000):
        x += i  # @step
    return x


def sleeper(stop):
    while not stop.is_set():
        time.sleep(0.005)  # @sleep


def producer(put, steps):
    for _ in range(steps):
        put(augment(120000))  # @produce


EPOCHS = 3


def worker(w, steps):
    """One DataLoader-like worker: named as PyTorch names them, it makes every second batch."""
    import ctypes
    ctypes.CDLL(None).prctl(15, b"pt_data_worker", 0, 0, 0)  # PR_SET_NAME
    producer(lambda x: os.write(w, b"%d\n" % (x % 1000)), steps)


def epochs(steps):
    per = steps // EPOCHS
    for _ in range(EPOCHS):
        pipes, pids = [], []
        for k in range(2):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                worker(w, (per + 1 - k) // 2)
                os._exit(0)
            os.close(w)
            pipes.append(os.fdopen(r))
            pids.append(pid)
        for i in range(per):
            with annotate("DataLoader.__next__"):
                pipes[i % 2].readline()  # @wfetch
            with annotate("train_step"):
                train_step()
        with annotate("DataLoader.__next__"):  # StopIteration: the workers are joined
            for pid in pids:
                os.waitpid(pid, 0)
        for p in pipes:
            p.close()


def contend(steps, n):
    from spinners import spinners
    with spinners(n, augment):
        for _ in range(steps):
            with annotate("train_step"):
                for _ in range(4):
                    train_step()


def native(steps, n, lib):
    import ctypes
    spin = ctypes.CDLL(lib)
    if spin.tp_spin_start(n, 3) != n + 3:
        sys.exit("native: the spinners did not start")
    try:
        for _ in range(steps):
            with annotate("train_step"):
                for _ in range(4):
                    train_step()
    finally:
        spin.tp_spin_stop()


def main():
    mode = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    if mode == "native":
        native(steps, int(sys.argv[3]), sys.argv[4])
        return
    if mode == "contend":
        contend(steps, int(sys.argv[3]) if len(sys.argv) > 3
                else 2 * len(os.sched_getaffinity(0)) + 1)
        return
    if mode == "workers":
        epochs(steps)
        return
    if mode == "warm":
        augment(4 * 30000 * steps)  # @warm
        for _ in range(steps):
            with annotate("train_step"):
                train_step()
        return
    if mode == "phases":
        for _ in range(steps):
            with annotate("train_step"):
                augment(2000000)
            augment(3000000)  # @outside
        return
    if mode == "process":  # forked first: a process with threads should not fork
        r, w = os.pipe()
        if os.fork() == 0:
            os.close(r)
            producer(lambda x: os.write(w, b"%d\n" % (x % 1000)), steps)
            os._exit(0)
        os.close(w)
        get = os.fdopen(r).readline
    stop = threading.Event()
    threading.Thread(target=sleeper, args=(stop,), name="sleeper", daemon=True).start()
    if mode == "thread":
        import queue
        q = queue.Queue(maxsize=2)
        threading.Thread(target=producer, args=(q.put, steps), daemon=True).start()
        get = q.get
    elif mode in ("inline", "loader-inline"):
        def get():
            return augment(120000)  # @inline
    for _ in range(steps):
        if mode == "loader-inline":  # a DataLoader without workers: the fetch computes
            with annotate("DataLoader.__next__"):
                get()
        else:
            get()  # @fetch
        with annotate("train_step"):
            train_step()
    stop.set()
    if mode == "process":
        os.wait()


main()
