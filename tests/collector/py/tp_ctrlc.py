"""Ctrl-C under trainprof: the program's KeyboardInterrupt handler runs once.

Prints "ready" inside its open range "outer" (after ten closed "step" ranges); the test then
sends SIGINT to the process group, as a terminal does, so the KeyboardInterrupt is raised
inside "outer" and its `with` closes it. The except block stays a moment (not to
synchronise anything: to give a duplicate SIGINT the chance to show as a second
KeyboardInterrupt, which aborts it)."""
import time

import nvtx

caught = 0
try:
    with nvtx.annotate("outer"):
        for _ in range(10):
            with nvtx.annotate("step"):
                pass
        print("ready", flush=True)
        while True:
            time.sleep(1)
except KeyboardInterrupt:
    caught += 1
    print("caught", flush=True)
    time.sleep(0.2)
print("done", caught, flush=True)
