#!/usr/bin/env python3
"""trainprof export --format perfetto, end to end, decoded with Perfetto's official schema
(perfetto_trace_pb2 from the `perfetto` PyPI package in .deps/pyenv).

usage: test_export_perfetto.py TRAINPROF TRAINER SAMPLES_DIR PYENV
(a) the file parses as perfetto.protos.Trace; every track event names a described track;
    on each track, begins and ends balance, nest, and come in time order;
(b) the numbers are the report's: kernels per name and copies on the stream tracks, NVTX
    ranges per name on the thread tracks, one flow per launch/kernel pair;
(c) interned names and callstacks resolve on their own sequence; a trainer trace recorded with
    --stacks all has launch stacks whose frames map into the trainer binary;
(d) a CPython recording (main + 2 forked workers that end with os._exit) is one file with
    three processes, each with its ranges nested `outer` > `inner`, and the push stacks name
    the Python functions and lines that pushed them;
(e) bad input: not a trace, unknown format: one line, non-zero exit, no output left."""
import collections
import json
import os
import subprocess
import sys
import tempfile

TP, TRAINER, SAMPLES, PYENV = sys.argv[1:5]
PY = os.path.join(PYENV, "bin", "python3")


def skip_or_fail(why):
    # CI always installs the schema (scripts/install-deps.sh): missing there is a failure.
    print(("FAIL: " if os.environ.get("CI") == "true" else "skip: ") + why)
    sys.exit(1 if os.environ.get("CI") == "true" else 77)


if "--in-venv" not in sys.argv:
    if not os.access(PY, os.X_OK) or subprocess.run(
            [PY, "-c", "import perfetto.protos.perfetto.trace.perfetto_trace_pb2, nvtx"],
            capture_output=True).returncode != 0:
        skip_or_fail("no perfetto schema / nvtx in %s (run scripts/install-deps.sh)" % PYENV)
    os.execv(PY, [PY, __file__, *sys.argv[1:5], "--in-venv"])

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb  # noqa: E402

failures = []
BEGIN, END, INSTANT, COUNTER = 1, 2, 3, 4


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(*args):
    return subprocess.run([TP, *args], capture_output=True, text=True)


def export(trace, out):
    r = run("export", trace, "--format", "perfetto", "-o", out)
    assert r.returncode == 0, r.stderr
    return out


def report(path):
    r = run("report", "--format", "json", path)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["ranks"][0]


class Decoded:
    """The trace's tracks, and each track's slices (name, begin, end) rebuilt by replaying its
    events in file order; structural errors are collected, not raised."""

    def __init__(self, path):
        t = pb.Trace()
        t.ParseFromString(open(path, "rb").read())
        self.tracks, self.errors = {}, []
        self.slices = collections.defaultdict(list)  # uuid -> [(name, ts, end, callstack)]
        self.flows_out, self.flows_in = collections.Counter(), {}
        self.instants, self.counters = collections.Counter(), collections.defaultdict(list)
        names, frames, funcs, stacks, paths, maps = {}, {}, {}, {}, {}, {}
        stack_open = collections.defaultdict(list)
        last_ts = {}
        self.callstacks = []  # resolved stacks (list of frame strings, root first)
        for p in t.packet:
            seq = p.trusted_packet_sequence_id
            if p.HasField("interned_data"):
                d = p.interned_data
                for e in d.event_names:
                    names[(seq, e.iid)] = e.name
                for e in d.function_names:
                    funcs[(seq, e.iid)] = e.str.decode()
                for e in d.mapping_paths:
                    paths[(seq, e.iid)] = e.str.decode()
                for e in d.mappings:
                    maps[(seq, e.iid)] = [paths.get((seq, i), "?") for i in e.path_string_ids]
                for e in d.frames:
                    frames[(seq, e.iid)] = e
                for e in d.callstacks:
                    stacks[(seq, e.iid)] = list(e.frame_ids)
            if p.HasField("track_descriptor"):
                td = p.track_descriptor
                if td.parent_uuid and td.parent_uuid not in self.tracks:
                    self.errors.append("track %r before its parent" % td.name)
                self.tracks[td.uuid] = td
            if not p.HasField("track_event"):
                continue
            e = p.track_event
            u = e.track_uuid
            if u not in self.tracks:
                self.errors.append("event on an undescribed track")
                continue
            if p.timestamp < last_ts.get(u, 0):
                self.errors.append("time goes back on track %r" % self.label(u))
            last_ts[u] = p.timestamp
            name = e.name if e.HasField("name") else names.get((seq, e.name_iid))
            if e.type in (BEGIN, INSTANT) and name is None:
                self.errors.append("name iid %d not interned on sequence %d" % (e.name_iid, seq))
            cs = None
            if e.HasField("callstack_iid"):
                ids = stacks.get((seq, e.callstack_iid))
                if ids is None or any((seq, f) not in frames for f in ids):
                    self.errors.append("callstack %d not interned" % e.callstack_iid)
                else:
                    cs = []
                    for f in ids:
                        fr = frames[(seq, f)]
                        if fr.function_name_id:
                            cs.append(funcs.get((seq, fr.function_name_id), "?"))
                        else:
                            cs.append("%s+0x%x" % (maps.get((seq, fr.mapping_id), ["?"])[0], fr.rel_pc))
                    self.callstacks.append(cs)
            for fid in e.flow_ids:
                self.flows_out[fid] += 1
            for fid in e.terminating_flow_ids:
                self.flows_in[fid] = u
            if e.type == BEGIN:
                stack_open[u].append((name, p.timestamp, cs))
            elif e.type == END:
                if not stack_open[u]:
                    self.errors.append("end without begin on %r" % self.label(u))
                    continue
                n, ts, c = stack_open[u].pop()
                self.slices[u].append((n, ts, p.timestamp, c, len(stack_open[u])))
            elif e.type == INSTANT:
                self.instants[name] += 1
            elif e.type == COUNTER:
                self.counters[u].append(e.counter_value if e.HasField("counter_value")
                                        else e.double_counter_value)
        for u, st in stack_open.items():
            if st:
                self.errors.append("%d slices left open on %r" % (len(st), self.label(u)))

    def label(self, u):
        td = self.tracks[u]
        return td.name or td.thread.thread_name or td.process.process_name

    def parent(self, u):
        return self.tracks[u].parent_uuid

    def is_stream(self, u):
        p = self.parent(u)
        return bool(p) and self.label(u).startswith("stream ") and not self.label(u).endswith(
            "syncs") and self.label(p).startswith("GPU ")

    def is_nvtx(self, u):
        td = self.tracks[u]
        return td.HasField("thread") or self.label(u).startswith("NVTX")

    def processes(self):
        return [td for td in self.tracks.values() if td.HasField("process")]

    def process_of(self, u):
        while self.parent(u):
            u = self.parent(u)
        return u


def count_names(d, pred):
    c = collections.Counter()
    for u, sl in d.slices.items():
        if pred(u):
            c.update(s[0] for s in sl)
    return c


def check_trace(label, trace, tmp):
    d = Decoded(export(trace, os.path.join(tmp, label + ".pftrace")))
    rep = report(trace)
    check(not d.errors, "%s: structure (%s)" % (label, "; ".join(d.errors[:3])))
    stream = count_names(d, d.is_stream)
    kernels = {k["name"]: k["count"] for k in rep["kernels"]}
    check(all(stream[n] == c for n, c in kernels.items()),
          "%s: kernels per name on the stream tracks equal the report's" % label)
    # The report's kernel table holds copies and memsets too (HTA's kernel types), so the
    # stream tracks hold exactly its rows.
    check(sum(stream.values()) == sum(kernels.values()),
          "%s: stream slices %d = the report's kernels, copies and memsets %d" % (
              label, sum(stream.values()), sum(kernels.values())))
    n_copies = sum(c["count"] for c in rep["copies"])
    copies = sum(n for name, n in stream.items() if name.startswith(("Memcpy", "Memset")))
    check(copies == n_copies, "%s: copy/memset slices %d = the report's copies %d" % (
        label, copies, n_copies))
    nvtx = count_names(d, d.is_nvtx)
    ranges = {r["name"]: r["count"] for r in rep["ranges"]}
    check(nvtx == collections.Counter(ranges),
          "%s: NVTX slices per name equal the report's ranges (%d)" % (label, sum(ranges.values())))
    kernel_flows = sum(1 for fid, u in d.flows_in.items()
                       if d.flows_out[fid] == 1 and d.is_stream(u))
    check(all(d.flows_out[f] == 1 for f in d.flows_in),
          "%s: every flow into device work starts at one API call" % label)
    launches = sum(1 for u, sl in d.slices.items() if d.is_stream(u)
                   for s in sl if s[0] in kernels)
    check(kernel_flows >= rep["launch"]["n_pairs"] and rep["launch"]["n_pairs"] <= launches,
          "%s: launch flows %d cover the report's %d launch/kernel pairs" % (
              label, kernel_flows, rep["launch"]["n_pairs"]))
    return d


with tempfile.TemporaryDirectory() as tmp:
    # (a)-(b) the committed samples
    for f in sorted(os.listdir(SAMPLES)):
        if f.endswith(".tprof"):
            check_trace(f[:-6], os.path.join(SAMPLES, f), tmp)

    # (c) a fresh trainer trace with launch stacks
    tr = os.path.join(tmp, "trainer.tprof")
    r = subprocess.run([TP, "record", "--stacks", "all", "-o", tr, "--", TRAINER, "--device", "cpu",
                        "--scenario", "launch-bound", "--steps", "5"], capture_output=True, text=True)
    check(r.returncode == 0, "trainer recorded with --stacks all: " + r.stderr[-300:])
    d = check_trace("trainer", tr, tmp)
    check(len(d.callstacks) > 0, "trainer: events carry callstacks (%d)" % len(d.callstacks))
    check(any(any("trainprof-trainer+0x" in f for f in cs) for cs in d.callstacks),
          "trainer: stack frames map into the trainer binary")
    check(any(d.counters.values()), "trainer: memory counter tracks have values")

    # (d) a CPython recording with forked workers ending in os._exit
    prog = os.path.join(tmp, "prog.py")
    with open(prog, "w") as f:
        f.write("""import os, nvtx
def inner(tag):
    nvtx.push_range("inner")  # line 3
    nvtx.pop_range()
def outer(tag):
    nvtx.push_range("outer")  # line 6
    inner(tag)
    nvtx.pop_range()
kids = []
for i in range(2):
    pid = os.fork()
    if pid == 0:
        for _ in range(3):
            outer(i)
        os._exit(0)
    kids.append(pid)
for _ in range(3):
    outer("main")
for k in kids:
    os.waitpid(k, 0)
""")
    pt = os.path.join(tmp, "py.tprof")
    r = subprocess.run([TP, "record", "--stacks", "all", "-o", pt, "--", PY, prog],
                       capture_output=True, text=True)
    check(r.returncode == 0, "python recorded: " + r.stderr[-300:])
    d = Decoded(export(pt, os.path.join(tmp, "py.pftrace")))
    check(not d.errors, "python: structure (%s)" % "; ".join(d.errors[:3]))
    procs = d.processes()
    check(len(procs) == 3 and len({p.process.pid for p in procs}) == 3,
          "python: one file, three processes (%d)" % len(procs))
    per_proc = collections.defaultdict(collections.Counter)
    nested = True
    for u, sl in d.slices.items():
        if d.is_nvtx(u):
            for name, ts, end, cs, depth in sl:
                per_proc[d.process_of(u)][name] += 1
                nested &= (name == "outer") == (depth == 0)
    check(sorted(per_proc.values(), key=str) == [collections.Counter(outer=3, inner=3)] * 3,
          "python: each process has 3 outer and 3 inner ranges (%s)" % list(per_proc.values()))
    check(nested, "python: inner nests in outer on each thread")
    stacks = [cs for cs in d.callstacks if cs]
    check(any(any("inner (" in f and "prog.py:3)" in f for f in cs)
              and any("outer (" in f and "prog.py:7)" in f for f in cs) for cs in stacks),
          "python: push stacks name inner (prog.py:3) called from outer (prog.py:7)")
    check(all(cs.index(next(f for f in cs if "outer (" in f)) <
              cs.index(next(f for f in cs if "inner (" in f))
              for cs in stacks if any("inner (" in f for f in cs) and any("outer (" in f for f in cs)),
          "python: frames root first (outer above inner)")

    # (e) bad input
    junk = os.path.join(tmp, "junk.tprof")
    with open(junk, "w") as f:
        f.write("not a trace\n")
    r = run("export", junk, "--format", "perfetto", "-o", os.path.join(tmp, "j.pftrace"))
    check(r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1
          and not os.path.exists(os.path.join(tmp, "j.pftrace")),
          "not a trace: one line, exit 1, no output (%r)" % r.stderr)

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
