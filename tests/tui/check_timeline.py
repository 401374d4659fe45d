#!/usr/bin/env python3
"""Checks the structure of a Timeline snapshot of tests/tui/py/three_threads.py's trace.

usage: check_timeline.py SNAPSHOT.txt TIDS.txt WIDTH HEIGHT
The recording's timing varies from run to run, so instead of a golden frame this asserts
what must hold at any speed: the frame's size; the process header (pid, program, main);
three thread lanes, each labelled with its own tid (the three threads share one name);
under each lane label its three levels: `epoch ROLE`, then three `step ROLE N`, then three
`work` bars, named (cut with … where narrow); the selection's detail line and its push stack
(recorded with --stacks all), Python frames first."""
import re
import sys


def fail(msg, lines):
    print("FAIL: " + msg)
    print("\n".join(lines))
    sys.exit(1)


def main():
    snap, tids_path, w, h = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    lines = open(snap, encoding="utf-8").read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) != h or max(len(l) for l in lines) > w:
        fail("frame is not %dx%d" % (w, h), lines)
    tids = dict(l.split() for l in open(tids_path))
    main_pid = tids["main"]
    if not any(re.match(r"pid %s python\S* \(main\) " % main_pid, l) for l in lines):
        fail("no header for process %s (main)" % main_pid, lines)
    labels = {}
    for i, l in enumerate(lines):
        m = re.match(r"^[> ](\S.*?) (\d+) ", l)
        if m and m.group(2) in tids.values():
            labels[m.group(2)] = i
    if sorted(labels) != sorted(tids.values()):
        fail("lanes labelled %s, threads %s" % (sorted(labels), sorted(tids.values())), lines)
    for role, tid in tids.items():
        i = labels[tid]
        levels = [lines[i + k] if i + k < len(lines) else "" for k in range(3)]
        want = ["\u258fepoch " + role[:2], "\u258fstep", "\u258fwork"]
        for k in range(3):
            if want[k] not in levels[k]:
                fail("lane %s (%s) level %d lacks %r" % (tid, role, k, want[k]), lines)
        if levels[1].count("\u258f") < 3 or levels[2].count("\u258fwork") < 3:
            fail("lane %s (%s) does not show its three steps" % (tid, role), lines)
    if not any(l.startswith("Selected: epoch ") for l in lines):
        fail("no selected epoch", lines)
    # The push stack (--stacks all): Python frames first, the program's own among them.
    at = [i for i, l in enumerate(lines) if l.startswith("Range push stack of epoch main:")]
    frames = lines[at[0] + 1:at[0] + 4] if at else []
    if not frames or not frames[0].startswith("  ") or " in " not in frames[0] or \
            not any(re.match(r"  three_threads\.py:\d+ in run$", f) for f in frames):
        fail("the push stack does not start with Python frames", lines)
    print("ok: %dx%d: three lanes, tids %s, three levels each" % (w, h, " ".join(tids.values())))


main()
