#!/usr/bin/env python3
"""The figures `trainprof top --snapshot` shows for a window against `trainprof report
--format json` on the trace of that same window (top --save): equal within 1 %.
usage: check_live_vs_report.py SNAPSHOT.txt REPORT.json"""
import json
import re
import sys

UNITS = {"ns": 1, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}


def dur(text):
    v, u = text.split()
    return float(v) * UNITS[u]


def close(a, b, what):
    assert b != 0 or a == 0, (what, a, b)
    assert abs(a - b) <= 0.01 * abs(b) + 1e-9, "%s: live %r, report %r" % (what, a, b)


def main():
    snap = open(sys.argv[1], encoding="utf-8").read()
    r = json.load(open(sys.argv[2]))["ranks"][0]
    m = re.search(r"window: (\d+) steps in ([\d.]+ \S+), .* device busy ([\d.]+) %", snap)
    assert m, snap
    steps, window_ns, busy = int(m.group(1)), dur(m.group(2)), float(m.group(3))
    f = r["findings"][0]
    assert f["id"] == "input-bound", f["id"]
    met = f["metrics"]
    close(window_ns, met["window_ns"], "window length")
    close(busy, 100 * (1 - met["idle_ns"] / met["window_ns"]), "device busy %")
    report_steps = [x["count"] for x in r["ranges"] if x["name"] == "step"]
    assert report_steps == [steps], ("live steps", steps, "report's step rows", report_steps)
    sev = re.search(r"\[\w+ ([\d.]+)%\] input-bound: the device waits", snap)
    assert sev, "no input-bound line"
    close(float(sev.group(1)), 100 * f["severity"], "input-bound severity")
    # The tables: the first kernel and the first range, with their totals.
    k = re.search(r"^> (\S+)\s+(\d+)\s+([\d.]+ \S+)", snap, re.M)
    assert k and k.group(1) == r["kernels"][0]["name"], (k and k.group(1), r["kernels"][0])
    assert int(k.group(2)) == r["kernels"][0]["count"]
    close(dur(k.group(3)), r["kernels"][0]["sum_ns"], "top kernel total")
    rows = re.findall(r"^> (.+?)\s{2,}(\d+)\s+([\d.]+ \S+)", snap, re.M)
    assert len(rows) >= 2, rows
    name, count, total = rows[1]
    top = r["ranges"][0]
    assert name == top["name"] and int(count) == top["count"], (rows[1], top)
    close(dur(total), top["total_ns"], "top range total")
    # Every range row: count, total, and the device time of what was launched inside (the
    # launch/kernel pairing by correlation).
    ranges = {x["name"]: x for x in r["ranges"]}
    table = snap[snap.index("\n  range "):]
    rows = re.findall(r"^[> ] (.+?)\s{2,}(\d+)\s+([\d.]+ \S+)\s+([\d.]+ \S+)\s+(\d+)\s",
                      table, re.M)
    assert len(rows) >= 5, table
    for name, count, total, gpu, ops in rows:
        x = ranges[name.strip()]
        assert int(count) == x["count"], (name, count, x)
        close(dur(total), x["total_ns"], name + " total")
        assert int(ops) == x["gpu_ops"], (name, ops, x)
        close(dur(gpu), x["gpu_ns"], name + " GPU time")
    print("ok: window %d steps, %.2f %% busy, severity %.1f %%" % (steps, busy, 100 * f["severity"]))


if __name__ == "__main__":
    main()
