"""A two-rank job without a device, for test_collector_sampler.py: as torchrun does, the
launcher starts one process per rank with RANK, LOCAL_RANK and WORLD_SIZE set; each runs STEPS
steps (NVTX ranges "train_step", through the nvtx package) of CPU work and then waits for the
other in an exchange over pipes (a collective, as gloo's all-reduce waits). Rank 1 does 4x the
work of rank 0: it is the straggler, and rank 0 waits for it in each exchange.

With SPINNERS, each rank also forks that many processes that compute all along its steps: the
ranks on this machine then want more CPUs than it has.

usage: ranks_prog.py [STEPS [SPINNERS]]    (a rank: ranks_prog.py STEPS RANK RFD WFD SPINNERS)"""
import os
import subprocess
import sys

import nvtx
from spinners import burn, spinners


def rank_main(steps, rank, r, w, n_spinners):
    with spinners(n_spinners):
        for _ in range(steps):
            with nvtx.annotate("train_step"):
                burn(40000 * (4 if rank == 1 else 1))
                os.write(w, b"x")  # the exchange: each sends, then waits for the other's
                os.read(r, 1)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    if len(sys.argv) > 3:
        rank_main(steps, int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
        return
    spinners = sys.argv[2] if len(sys.argv) > 2 else "0"
    a_r, a_w = os.pipe()  # rank 0 -> rank 1
    b_r, b_w = os.pipe()  # rank 1 -> rank 0
    procs = []
    for rank, (r, w) in enumerate(((b_r, a_w), (a_r, b_w))):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2")
        procs.append(subprocess.Popen([sys.executable, __file__, str(steps), str(rank), str(r),
                                       str(w), spinners], env=env, pass_fds=(r, w)))
    for fd in (a_r, a_w, b_r, b_w):
        os.close(fd)
    sys.exit(max(p.wait() for p in procs))


main()
