#!/usr/bin/env python3
"""gen_big_kineto.py: a big Kineto (PyTorch profiler) trace made of a real one's events.

Replicates the events of SRC (a .json or .json.gz written by torch.profiler, e.g. a peer
trace under ../shared/peer_traces/traces) until OUT holds about SIZE bytes: copy k is shifted
by k times the source's span (plus 1 ms), its correlation ids, External ids and flow ids are
moved past the previous copy's, and `ProfilerStep#N` becomes `ProfilerStep#(N + k * steps)`,
so the result reads as one long run of the same program: every launch still finds its kernel,
every step is a step of its own. The metadata events (ph "M") and the top-level keys
(deviceProperties, distributedInfo, ...) appear once. Used by the big-trace benchmarks in
docs/PERFORMANCE.md; OUT belongs in /tmp (never in the repository, nor the peer traces).

usage: gen_big_kineto.py SRC OUT SIZE   (SIZE in bytes, or with a K/M/G suffix: 2G)
"""
import gzip
import json
import re
import sys

STEP = re.compile(r"^ProfilerStep#(\d+)$")
ID_ARGS = ("correlation", "External id", "Ev Idx", "Python id", "Python parent id")


def size_of(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * mult[text[-1].upper()]) if text[-1].upper() in mult \
        else int(text)


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def plan(events):
    """The source's span in µs and the shift of ids and step numbers per copy."""
    timed = [e for e in events if e.get("ph") != "M" and "ts" in e]
    t0 = min(float(e["ts"]) for e in timed)
    t1 = max(float(e["ts"]) + float(e.get("dur", 0)) for e in timed)
    max_id, max_step = 0, 0
    for e in timed:
        if isinstance(e.get("id"), int):
            max_id = max(max_id, e["id"])
        for k in ID_ARGS:
            v = e.get("args", {}).get(k)
            if isinstance(v, int):
                max_id = max(max_id, v)
        m = STEP.match(str(e.get("name", "")))
        if m:
            max_step = max(max_step, int(m.group(1)))
    return int(t1 - t0) + 1000, max_id + 1, max_step + 1


def shifted(e, k, span, id_shift, step_shift):
    e = dict(e)
    e["ts"] = e["ts"] + k * span
    if isinstance(e.get("id"), int):
        e["id"] += k * id_shift
    m = STEP.match(str(e.get("name", "")))
    if m:
        e["name"] = "ProfilerStep#%d" % (int(m.group(1)) + k * step_shift)
    args = e.get("args")
    if args and any(isinstance(args.get(a), int) for a in ID_ARGS):
        args = dict(args)
        for a in ID_ARGS:
            if isinstance(args.get(a), int) and args[a] >= 0:
                args[a] += k * id_shift
        e["args"] = args
    return e


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    src, out, target = sys.argv[1], sys.argv[2], size_of(sys.argv[3])
    trace = load(src)
    events = trace.pop("traceEvents")
    meta = [e for e in events if e.get("ph") == "M"]
    body = [e for e in events if e.get("ph") != "M"]
    span, id_shift, step_shift = plan(events)
    dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
    written, copies, n_events = 0, 0, 0
    with open(out, "w", encoding="utf-8") as f:
        head = dumps(trace)[:-1] + (',"traceEvents":[' if trace else '"traceEvents":[')
        f.write(head)
        written += len(head)
        first = True
        for e in meta:
            s = ("" if first else ",\n") + dumps(e)
            f.write(s)
            written += len(s)
            first, n_events = False, n_events + 1
        while written < target:
            chunk = []
            for e in body:
                chunk.append(dumps(shifted(e, copies, span, id_shift, step_shift)))
            s = ("" if first else ",\n") + ",\n".join(chunk)
            f.write(s)
            written += len(s.encode("utf-8")) if not s.isascii() else len(s)
            first, copies, n_events = False, copies + 1, n_events + len(chunk)
        f.write("]}\n")
    print("%s: %d copies of %s, %d events, %.2f GB" % (out, copies, src, n_events, written / 1e9))


if __name__ == "__main__":
    main()
