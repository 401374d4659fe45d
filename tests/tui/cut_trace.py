#!/usr/bin/env python3
"""Cuts a Chrome/Kineto trace JSON (trainprof export --format chrome) to one step.

usage: cut_trace.py IN.json OUT.json STEP_NAME K
Finds the K-th (0-based, by start time) complete user_annotation event named STEP_NAME and
writes OUT.json with every metadata event and every other event that starts inside that step,
[ts, ts + dur): the trace as if the recording had covered that step only. Prints the window as
"LO HI" in integer ns (the export writes µs with three decimals: exact ns)."""
import json
import sys
from decimal import Decimal


def ns(v):
    return int(Decimal(str(v)) * 1000)


def main():
    src, dst, name, k = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    with open(src) as f:
        doc = json.load(f, parse_float=Decimal)
    ev = doc["traceEvents"]
    steps = sorted((e for e in ev if e.get("ph") == "X" and e.get("cat") == "user_annotation"
                    and e.get("name") == name), key=lambda e: ns(e["ts"]))
    if len(steps) <= k:
        sys.exit("cut_trace: only %d '%s' ranges" % (len(steps), name))
    lo = ns(steps[k]["ts"])
    hi = lo + ns(steps[k]["dur"])
    doc["traceEvents"] = [e for e in ev if e.get("ph") == "M" or
                          ("ts" in e and lo <= ns(e["ts"]) < hi)]
    with open(dst, "w") as f:
        json.dump(doc, f, default=lambda d: float(d) if d % 1 else int(d))
    print(lo, hi)


main()
