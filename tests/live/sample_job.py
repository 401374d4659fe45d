"""A CPU job for `record --live --sample`: steps as NVTX ranges named "step", each spending
its time in burn() (the line marked BURN), called from the step (STEP); after each step the
number of steps done goes to argv[1] (every 20 steps). Runs until killed.
With argv[2] "worker": a forked worker process makes each step's batch, burning at the line
marked MAKE, and the step waits for it on a pipe (a DataLoader worker's kind)."""
import os
import sys

import nvtx


def burn(n):
    s = 0
    for i in range(n):
        s += i * i  # BURN
    return s


done_file = sys.argv[1]
batches = None
if len(sys.argv) > 2 and sys.argv[2] == "worker":
    r, w = os.pipe()
    if os.fork() == 0:
        os.close(r)
        while True:
            burn(40000)  # MAKE
            os.write(w, b"x")
    os.close(w)
    batches = r
steps = 0
while True:
    with nvtx.annotate("step"):
        if batches is not None:
            os.read(batches, 1)
        burn(20000)  # STEP
    steps += 1
    if steps % 20:  # the count now and then: its file's writes are no hot line of the job
        continue
    with open(done_file + ".tmp", "w") as f:
        f.write(str(steps))
    os.replace(done_file + ".tmp", done_file)
