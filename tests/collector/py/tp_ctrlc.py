"""Ctrl-C under trainprof: the program's KeyboardInterrupt handler runs once.

Prints "ready" once its range is open; the test then sends SIGINT to the process group,
as a terminal does. The except block stays a moment (not to synchronise anything: to give
a duplicate SIGINT the chance to show as a second KeyboardInterrupt, which aborts it)."""
import time

import nvtx

caught = 0
try:
    with nvtx.annotate("outer"):
        print("ready", flush=True)
        while True:
            with nvtx.annotate("tick"):
                time.sleep(0.005)
except KeyboardInterrupt:
    caught += 1
    print("caught", flush=True)
    time.sleep(0.2)
print("done", caught, flush=True)
