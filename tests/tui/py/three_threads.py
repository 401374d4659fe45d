"""Three Python threads (the main one and two workers) with nested NVTX ranges, for the
Timeline's lanes: each thread opens `epoch <role>` around three `step <role> N`, each around
one `work`. A barrier starts the epochs together and another ends them together, so each
lane's outermost bar spans most of the trace whatever the machine's speed (the ranges sleep
long enough that the interpreter's start and exit stay a small part of it). Writes the three
threads' native ids, one `role tid` per line, to the file named by argv[1]."""
import sys
import threading
import time

import nvtx

ROLES = ("main", "loader", "logger")
start = threading.Barrier(len(ROLES))
end = threading.Barrier(len(ROLES))
tids = {}


def run(role):
    tids[role] = threading.get_native_id()
    start.wait()
    with nvtx.annotate("epoch " + role):
        for i in range(3):
            with nvtx.annotate("step %s %d" % (role, i)):
                with nvtx.annotate("work"):
                    time.sleep(0.15)
        end.wait()


workers = [threading.Thread(target=run, args=(r,)) for r in ROLES[1:]]
for w in workers:
    w.start()
run(ROLES[0])
for w in workers:
    w.join()
with open(sys.argv[1], "w") as f:
    for r in ROLES:
        f.write("%s %d\n" % (r, tids[r]))
