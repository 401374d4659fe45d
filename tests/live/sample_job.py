"""A CPU job for `record --live --sample`: steps as NVTX ranges named "step", each spending
its time in burn() (the line marked BURN), called from the step (STEP); after each step the
number of steps done goes to argv[1]. Runs until killed."""
import os
import sys

import nvtx


def burn(n):
    s = 0
    for i in range(n):
        s += i * i  # BURN
    return s


done_file = sys.argv[1]
steps = 0
while True:
    with nvtx.annotate("step"):
        burn(20000)  # STEP
    steps += 1
    with open(done_file + ".tmp", "w") as f:
        f.write(str(steps))
    os.replace(done_file + ".tmp", done_file)
