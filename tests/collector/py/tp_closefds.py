"""Closes every inherited descriptor (as daemons and some launchers do), then writes its own
file (argv[1]) and ranges. Its file must hold exactly its bytes; the trace must survive."""
import os
import sys

import nvtx

with nvtx.annotate("before"):
    pass
os.closerange(3, 1024)
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
print("fd", fd, flush=True)
for i in range(200):
    with nvtx.annotate("after"):
        os.write(fd, b"line %d of the program's own data\n" % i)
os.close(fd)
