"""A job that forks: steps as NVTX ranges named "step"; after the first step it forks a
child that lives until the file named by argv[1] exists, then leaves with os._exit. The
child's pid goes to argv[2]. Runs until killed."""
import os
import sys
import time

import nvtx

stop_child, pid_file = sys.argv[1], sys.argv[2]
forked = False
while True:
    with nvtx.annotate("step"):
        time.sleep(0.02)
    if not forked:
        forked = True
        pid = os.fork()
        if pid == 0:
            while not os.path.exists(stop_child):
                time.sleep(0.05)
            os._exit(0)
        with open(pid_file + ".tmp", "w") as f:
            f.write(str(pid))
        os.rename(pid_file + ".tmp", pid_file)
