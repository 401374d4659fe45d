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


TS, ID, STEP_NO = "\x00ts\x00", "\x00id\x00", "\x00step\x00"


def template(e, dumps):
    """Event e as JSON text cut where a copy changes it: (parts, fields), where the text of
    copy k is parts[0] + value(fields[0], k) + parts[1] + ... Encoding once and formatting
    numbers per copy is what makes 2 GB take a minute instead of half an hour."""
    e, fields = dict(e), []
    marks = {}
    if "ts" in e:
        marks['"%s"' % TS.replace("\x00", "\\u0000")] = ("ts", e["ts"])
        e["ts"] = TS
    if isinstance(e.get("id"), int):
        e["id"] = ID + "0"
        marks['"%s"' % (ID + "0").replace("\x00", "\\u0000")] = ("id", dict(e=0))
    m = STEP.match(str(e.get("name", "")))
    if m:
        e["name"] = STEP_NO
        marks['"%s"' % STEP_NO.replace("\x00", "\\u0000")] = ("step", int(m.group(1)))
    args = e.get("args")
    if args:
        args = dict(args)
        for i, a in enumerate(ID_ARGS):
            if isinstance(args.get(a), int) and args[a] >= 0:
                key = ID + str(i + 1)
                marks['"%s"' % key.replace("\x00", "\\u0000")] = ("id", args[a])
                args[a] = key
        e["args"] = args
    if isinstance(e.get("id"), str):  # the flow id, after args so the dict holds its value
        pass
    text = dumps(e)
    parts, pos = [], 0
    order = sorted((text.find(k), k) for k in marks if text.find(k) >= 0)
    for at, k in order:
        parts.append(text[pos:at])
        fields.append(marks[k])
        pos = at + len(k)
    parts.append(text[pos:])
    return parts, fields


def render(parts, fields, k, span, id_shift, step_shift):
    out = [parts[0]]
    for (kind, v), p in zip(fields, parts[1:]):
        if kind == "ts":
            out.append(repr(v + k * span) if isinstance(v, float) else str(v + k * span))
        elif kind == "id":
            out.append(str(v + k * id_shift))
        else:
            out.append('"ProfilerStep#%d"' % (v + k * step_shift))
        out.append(p)
    return "".join(out)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    src, out, target = sys.argv[1], sys.argv[2], size_of(sys.argv[3])
    trace = load(src)
    events = trace.pop("traceEvents")
    meta = [e for e in events if e.get("ph") == "M"]
    body = [e for e in events if e.get("ph") != "M"]
    span, id_shift, step_shift = plan(events)
    dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True).encode
    for e in body:  # a flow event's own id, kept aside before templating
        if isinstance(e.get("id"), int):
            e["_flow_id"] = e["id"]
    temps = []
    for e in body:
        fid = e.pop("_flow_id", None)
        parts, fields = template(e, dumps)
        fields = [("id", fid) if f[0] == "id" and isinstance(f[1], dict) else f for f in fields]
        temps.append((parts, fields))
    written, copies, n_events = 0, 0, 0
    with open(out, "w", encoding="ascii") as f:
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
            s = ",\n".join(render(p, fl, copies, span, id_shift, step_shift) for p, fl in temps)
            s = ("" if first else ",\n") + s
            f.write(s)
            written += len(s)
            first, copies, n_events = False, copies + 1, n_events + len(temps)
        f.write("]}\n")
    print("%s: %d copies of %s, %d events, %.2f GB" % (out, copies, src, n_events, written / 1e9))


if __name__ == "__main__":
    main()
