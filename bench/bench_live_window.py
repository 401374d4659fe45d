#!/usr/bin/env python3
"""What a refresh of `trainprof top` costs the job: the time from a request to its reply on
the live socket, for the aggregator's figures (FIGURES) and for a cut window's trace (WINDOW,
which the job writes into a memory file: the client's load and analysis not included), for
one or two builds side by side (alternating runs, same trainer scenario, same minute).

usage: bench_live_window.py RUNS REQUESTS BUILD [BUILD...]
  BUILD: a build folder with cli/trainprof and trainer/trainprof-trainer
Each run starts the trainer (--scenario $SCENARIO, default input-bound; launch-bound fills
the live buffer fastest) under `record --live`, waits for 40
steps, then sends REQUESTS of each kind on one connection (8 a second: the job refuses more
than 10); prints per build the medians of
the runs' medians, in ms, and the machine's load average at the start and the end."""
import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

MAGIC, VERSION = 0x564C5054, 1
STATUS, WINDOW, FIGURES = 1, 2, 4
SCENARIO = os.environ.get("SCENARIO", "input-bound")
KINDS = [("FIGURES steps=20", FIGURES, b"steps=20\n"), ("WINDOW steps=4", WINDOW, b"steps=4\n"),
         ("WINDOW steps=20", WINDOW, b"steps=20\n"), ("WINDOW seconds=0.5", WINDOW, b"seconds=0.5\n")]


def frame(kind, text=b""):
    return struct.pack("<IHHII", MAGIC, VERSION, kind, len(text), 0) + text


def request(s, kind, text):
    s.send(frame(kind, text))
    data, anc, _, _ = s.recvmsg(70000, socket.CMSG_SPACE(4 * 4))
    for level, typ, cdata in anc:  # the window's memory file: closed, not read
        if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            for fd in struct.unpack("%di" % (len(cdata) // 4), cdata):
                os.close(fd)
    magic, _, rkind, _, _ = struct.unpack("<IHHII", data[:16])
    if magic != MAGIC or rkind != 0x81:
        raise SystemExit("the job answered %r to %r" % (data[16:].decode(errors="replace"), text))
    return data[16:]


def one_run(build, n):
    d = tempfile.mkdtemp()
    env = dict(os.environ, XDG_RUNTIME_DIR=d)
    rec = subprocess.Popen([os.path.join(build, "cli/trainprof"), "record", "--live", "-o",
                            os.path.join(d, "t.tprof"), "--",
                            os.path.join(build, "trainer/trainprof-trainer"), "--scenario",
                            SCENARIO, "--steps", "1000000", "--log-every", "0"],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sockdir = os.path.join(d, "trainprof")
    try:
        for _ in range(600):
            socks = os.listdir(sockdir) if os.path.isdir(sockdir) else []
            if socks:
                break
            time.sleep(0.2)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(60)
        s.connect(os.path.join(sockdir, socks[0]))
        for _ in range(600):
            st = request(s, STATUS, b"").decode()
            steps = int([l for l in st.splitlines() if l.startswith("steps=")][0][6:])
            if steps >= 40:
                break
            time.sleep(0.2)
        out = {}
        for name, kind, text in KINDS:
            t = []
            for _ in range(n):
                time.sleep(0.12)  # the job serves at most 10 requests a second
                t0 = time.perf_counter()
                request(s, kind, text)
                t.append((time.perf_counter() - t0) * 1e3)
            out[name] = statistics.median(t)
        s.close()
        return out
    finally:
        rec.terminate()
        rec.wait()
        subprocess.run(["rm", "-rf", d])


def main():
    runs, n, builds = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    load0 = os.getloadavg()[0]
    res = {b: [] for b in builds}
    for _ in range(runs):
        for b in builds:
            res[b].append(one_run(b, n))
    print("load average %.1f -> %.1f; %s; %d runs x %d requests, medians in ms" %
          (load0, os.getloadavg()[0], SCENARIO, runs, n))
    print("%-18s" % "request" + "".join("%24s" % b.rstrip("/")[-24:] for b in builds))
    for name, _, _ in KINDS:
        print("%-18s" % name +
              "".join("%24.2f" % statistics.median(r[name] for r in res[b]) for b in builds))


if __name__ == "__main__":
    main()
