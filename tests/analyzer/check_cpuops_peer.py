#!/usr/bin/env python3
"""The CPU-operator table of `trainprof report` on every peer trace set, against an
independent recomputation from the JSON itself (issue 10).

For every file of every set in $TP_PEER_TRACES/traces this script reads the Chrome trace with
Python's json module (times as exact decimals), keeps the events the Kineto importer keeps
(a dur and a cat, cat not "Trace", no negative or absurd time), nests the CPU-side ones
(no args.stream) per (pid, tid) by time, and sums per (kind, name) of the cpu_op and
user_annotation events: count, total duration, and self time = duration minus the durations
of the direct children on the same thread. The top 20 rows of trainprof's JSON "cpu_ops"
of the matching rank must carry exactly these numbers, and no op left out of them may have
more self time than the 20th.

usage: check_cpuops_peer.py TRAINPROF
Exit 0 pass, 1 fail, 77 skip (no peer traces; a failure under CI=true).
"""
import decimal
import gzip
import json
import os
import subprocess
import sys

TOP = 20
NS_LIMIT = 1 << 62
KIND = {"cpu_op": "op", "Operator": "op", "user_annotation": "range"}


def to_ns(v):
    """Kineto µs (exact decimal) to ns, rounded half up like the importer."""
    d = decimal.Decimal(v) * 1000
    q = abs(d).quantize(decimal.Decimal(1), rounding=decimal.ROUND_HALF_UP)
    return int(q) if d >= 0 else -int(q)


def thread_id(v):
    """pid/tid as the importer reads them: numbers, "stream 7" -> 7, other labels as text."""
    if isinstance(v, bool) or v is None:
        return 0
    if isinstance(v, (int, decimal.Decimal)):
        return int(v)
    s = v.strip(" \t")
    try:
        return int(s)
    except ValueError:
        head, _, tail = v.rpartition(" ")
        if head and tail.isdigit() and len(tail) < 18:
            return int(tail)
        return "label:" + v


def stream_of(args):
    s = args.get("stream") if isinstance(args, dict) else None
    if isinstance(s, bool) or s is None:
        return -1
    if isinstance(s, (int, decimal.Decimal)):
        return int(s)
    try:
        return int(s.strip(" \t"))
    except (ValueError, AttributeError):
        return -1


def load_events(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        doc = json.load(f, parse_float=decimal.Decimal)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def cpu_rows(events):
    """The kept CPU-side rows: (ts, dur, order, pid, tid, cat, name)."""
    rows = []
    for e in events:
        if not isinstance(e, dict):
            continue
        dur, cat = e.get("dur"), e.get("cat")
        if dur is None or not isinstance(cat, str) or cat == "Trace" or e.get("ts") is None:
            continue
        ts, d = to_ns(e["ts"]), to_ns(dur)
        if d < 0 or ts < 0 or ts > NS_LIMIT - d:
            continue
        order = len(rows)
        rows.append((ts, d, order, e.get("pid"), e.get("tid"), cat, e.get("name", ""),
                     stream_of(e.get("args"))))
    return [r for r in rows if r[7] == -1], [r for r in rows if r[7] != -1]


def table(path):
    cpu, on_stream = cpu_rows(load_events(path))
    threads = {}
    for r in cpu:
        threads.setdefault((thread_id(r[3]), thread_id(r[4])), []).append(r)
    child = {}
    for rows in threads.values():
        rows.sort(key=lambda r: (r[0], -r[1], r[2]))
        stack = []
        for r in rows:
            ts, end = r[0], r[0] + r[1]
            while stack:
                top = stack[-1]
                top_end = top[0] + top[1]
                if top_end > ts and top_end >= end:
                    break
                if top_end == ts and r[1] == 0 and top[1] > 0:
                    break
                stack.pop()
            if stack:
                child[stack[-1][2]] = child.get(stack[-1][2], 0) + r[1]
            stack.append(r)
    out = {}
    for r in cpu + on_stream:
        kind = KIND.get(r[5])
        if kind is None:
            continue
        o = out.setdefault((kind, r[6]), [0, 0, 0])
        o[0] += 1
        o[1] += r[1]
        o[2] += r[1] - child.get(r[2], 0)
    return out


def report(trainprof, set_dir):
    p = subprocess.run([trainprof, "report", "--format", "json", set_dir],
                       capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise RuntimeError("trainprof report %s: %s" % (set_dir, p.stderr.strip()))
    return json.loads(p.stdout)["ranks"]


def check_rank(name, want, got):
    """Returns the failures of one rank: trainprof's top rows against the recomputation."""
    fails = []
    ops = got["cpu_ops"]["ops"]
    if len(ops) != len(want):
        fails.append("%s: %d table rows, recomputed %d" % (name, len(ops), len(want)))
    top = ops[:TOP]
    for o in top:
        w = want.get((o["kind"], o["name"]))
        have = [o["count"], o["total_ns"], o["self_ns"]]
        if w != have:
            fails.append("%s: %s %r: trainprof count/total/self %r, recomputed %r"
                         % (name, o["kind"], o["name"], have, w))
    if len(top) == TOP:
        shown = {(o["kind"], o["name"]) for o in top}
        floor = top[-1]["self_ns"]
        for k, w in want.items():
            if k not in shown and w[2] > floor:
                fails.append("%s: %r has self %d ns > the 20th row's %d but is not in the top"
                             % (name, k, w[2], floor))
    return fails


def main():
    trainprof = sys.argv[1]
    root = os.environ.get("TP_PEER_TRACES", "")
    tdir = os.path.join(root, "traces")
    if not root or not os.path.isdir(tdir):
        if os.environ.get("CI") == "true":
            print("FAIL: peer traces missing (TP_PEER_TRACES=%s) and CI=true" % root)
            return 1
        print("SKIP: peer traces not found (TP_PEER_TRACES)")
        return 77
    fails, n_ranks, n_rows = [], 0, 0
    for s in sorted(os.listdir(tdir)):
        set_dir = os.path.join(tdir, s)
        ranks = {os.path.basename(r["file"]): r for r in report(trainprof, set_dir)}
        for fn in sorted(os.listdir(set_dir)):
            if fn not in ranks:
                fails.append("%s/%s: no rank in the report" % (s, fn))
                continue
            want = table(os.path.join(set_dir, fn))
            fails += check_rank("%s/%s" % (s, fn), want, ranks[fn])
            n_ranks += 1
            n_rows += min(TOP, len(want))
    for f in fails[:40]:
        print("FAIL:", f)
    print("%d ranks, %d top rows compared, %d failures" % (n_ranks, n_rows, len(fails)))
    return 1 if fails or n_ranks == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
