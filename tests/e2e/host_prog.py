"""A CPU-only training loop written with the nvtx package, for test_host_diagnosis.

usage: host_prog.py input-bound|input-bound-next|gaps|healthy
Eight steps. Each gets a batch (sleep) and computes on it (sleep): input-bound and gaps wait
10x longer for data than they compute, healthy 1/50 as long, so the data share of the steps
is ~90 % or ~2 % by construction, whatever the machine's load adds to either. input-bound
pushes a "data" range inside each "step"; input-bound-next gets the batch before each step
inside a range named as PyTorch names a DataLoader's __next__ (what torch.profiler records);
gaps gets it before each step with no range at all (a loop that annotates only its steps)."""
import sys
import time

import nvtx

DATA_S, COMPUTE_S = {"input-bound": (0.05, 0.005), "input-bound-next": (0.05, 0.005),
                     "gaps": (0.05, 0.005), "healthy": (0.001, 0.05)}[sys.argv[1]]
NEXT = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def get_batch(name):
    with nvtx.annotate(name):
        time.sleep(DATA_S)


def train_step():
    with nvtx.annotate("forward"):
        time.sleep(COMPUTE_S / 2)
    with nvtx.annotate("backward"):
        time.sleep(COMPUTE_S / 2)


def main():
    for _ in range(8):
        if sys.argv[1] == "input-bound-next":
            get_batch(NEXT)
            with nvtx.annotate("step"):
                train_step()
        elif sys.argv[1] == "gaps":
            time.sleep(DATA_S)
            with nvtx.annotate("step"):
                train_step()
        else:
            with nvtx.annotate("step"):
                get_batch("data")
                train_step()


if __name__ == "__main__":
    main()
