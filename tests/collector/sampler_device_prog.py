"""A training loop on a device reported through trainprof's activity API, for
test_collector_sampler.py's device-side checks (no GPU needed).

usage: sampler_device_prog.py input|host [STEPS]
Each step (an NVTX range "train_step", the whole step as torch.profiler's ProfilerStep#N)
launches one 3 ms kernel on a device of its own (include/trainprof/activity.h, called through
ctypes) and waits for it; before the kernel the device idles while the training thread
- input: waits in an NVTX range "dataloader wait" for a batch a producer thread computes in augment();
- host:  computes metrics() itself, in no range of its own.
The lines the test looks for carry `# @tag`."""
import ctypes as C
import os
import queue
import sys
import threading
import time

import nvtx

FN = C.CFUNCTYPE


class Table(C.Structure):
    _fields_ = [("struct_size", C.c_uint32), ("version", C.c_uint32),
                ("now", FN(C.c_uint64)), ("next_correlation", FN(C.c_uint32)),
                ("device", FN(C.c_uint32, C.c_char_p, C.c_uint64)),
                ("api", FN(None, C.c_char_p, C.c_uint64, C.c_uint64, C.c_uint32, C.c_int32)),
                ("kernel", FN(None, C.c_char_p, C.c_uint32, C.c_uint32, C.c_uint64, C.c_uint64,
                              C.c_uint32, C.POINTER(C.c_uint32), C.POINTER(C.c_uint32)))]


lib = C.CDLL(os.environ["TRAINPROF_COLLECTOR"])
lib.tp_activity_get_table.restype = C.POINTER(Table)
T = lib.tp_activity_get_table(1).contents
# the collector interns names by address: these objects live as long as the program
DEV_NAME, LAUNCH, KERNEL = C.c_char_p(b"sim0"), C.c_char_p(b"simLaunchKernel"), C.c_char_p(b"gemm")
GRID, BLOCK = (C.c_uint32 * 3)(8, 1, 1), (C.c_uint32 * 3)(128, 1, 1)
DEV = T.device(DEV_NAME, 1 << 30)


def augment(n):
    x = 0
    for i in range(n):
        x += i * i  # @augment
    return x


def metrics(n):
    x = 0
    for i in range(n):
        x ^= i  # @metrics
    return x


def producer(q, steps):
    for _ in range(steps):
        q.put(augment(400000))  # @produce


def step():
    corr = T.next_correlation()
    t0 = T.now()
    T.api(LAUNCH, t0, t0 + 20000, corr, 0)
    T.kernel(KERNEL, DEV, 1, t0 + 30000, t0 + 3030000, corr, GRID, BLOCK)
    while T.now() < t0 + 3040000:  # the step waits for its kernel
        pass


def main():
    mode = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    q = queue.Queue(maxsize=2)
    if mode == "input":
        threading.Thread(target=producer, args=(q, steps), daemon=True).start()
    for _ in range(steps):
        with nvtx.annotate("train_step"):  # as torch.profiler's ProfilerStep#N: the whole step
            if mode == "input":
                with nvtx.annotate("dataloader wait"):
                    q.get()  # @fetch
            else:
                metrics(300000)  # @host
            step()


main()
