#!/usr/bin/env python3
"""`trainprof record --sample`, end to end with real CPython programs.

usage: test_collector_sampler.py TRAINPROF PYSTACK_DUMP VENV LIBNATIVE_SPIN
tests/collector/sampler_prog.py runs a training loop whose steps (NVTX ranges, through the nvtx
PyPI package) wait between them for a batch from a producer thread, a forked producer process
or its own computation, with a sleeper thread beside; the lines that matter carry `# @tag`.
Checked, on counts and shares of samples, never on how long anything took:
(a) the trace's SAMPLE records (pystack_dump): each sampled thread's frames are the program's,
    innermost first, with the right lines; the producer's samples are mostly on a CPU in
    augment(), the sleeper's mostly off a CPU at its sleep;
(b) the JSON report's cpu_samples: rows and threads add up to the totals, the heaviest row is
    augment() called from producer(); the text report shows it as `sampler_prog.py:LINE in
    augment`, the HTML page's samples table with the same rows; the folded export (--weight samples) sums to the same on-CPU time and the SQLite
    export's samples table holds every sample, its top on-CPU function augment(); the Perfetto
    export has a PerfSample per on-CPU sample, its callstack interned, most ending in augment();
    `diff` of the thread and inline runs: the inline line new, the producer's gone;
(c) the diagnosis: host-step-gaps names where the step thread waited and which thread (the
    producer thread, or the forked producer process) was on a CPU meanwhile, and where; with
    DataLoader-like workers started anew each epoch, host-input-bound names the workers
    together (their line), how many, how many at a time and how many times they were started,
    and advises persistent_workers and more workers or less work at their line; with
    the work inline, the line that took the step thread's CPU between the steps; on a device
    (tests/collector/sampler_device_prog.py: one kernel a step through the activity API, by
    ctypes), input-bound names the wait inside the data-loading range and the producer's line,
    low-utilization the line that kept the training thread from launching;
    with more busy threads than CPUs, cpu-contention: the step thread waited for a CPU, the
    job's own spinners (forked, or threads of C code in the process: native_spin.c, an OpenMP
    pool's kind, sampled for their state and CPU clock and listed apart from the Python
    threads in the report, its JSON and the SQLite export) make it the job's doing, spinners
    beside it not;
    a two-rank job without a device (ranks_prog.py: rank 1 computes 4x, rank 0 waits for it
    over a pipe): the sampled waits make straggler and collective-wait name rank 1, in the
    report and through merge;
(d) without --sample there are no samples, and the finding says how to get them;
(e) every other CPython found (pyenv, /usr/bin) gives the same samples without the nvtx
    package (3.8-3.10 name their threads by pthread_t: the sampler finds the thread ids);
(f) --sample-hz out of range is refused with a one-line reason, exit 2;
(g) under --capture nvtx:train_step samples come only while a step is open; a program that
    closes every descriptor at start keeps its own file and its trace;
(h) a python a wrapper starts (bash, as a launcher starts its ranks) that only computes has a
    trace of its samples from its start; the wrapper's `$(...)` fork leaves none.
The venv (scripts/install-deps.sh: .deps/pyenv with the nvtx package) is required: without it
the test skips (77), or fails when CI=true."""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

TP, DUMP, VENV, NATIVE_SPIN = sys.argv[1:5]
PROG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sampler_prog.py")
RANKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ranks_prog.py")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tp_check import check, failures  # noqa: E402  (tests/tp_check.py)
from tp_pythons import cpythons, version  # noqa: E402  (tests/tp_pythons.py)


def markers():
    with open(PROG, encoding="utf-8") as f:
        return {m.group(1): i + 1 for i, line in enumerate(f)
                for m in [re.search(r"# @(\w+)", line)] if m}


LINE = markers()
AUGMENT_LINES = {LINE["augment"], LINE["augment"] - 1}  # the loop's two lines


def record(python, out, mode, steps, sample=True, env=None, args=()):
    cmd = [TP, "record", "-o", out]
    if sample:
        cmd += ["--sample-hz", "400"]
    r = subprocess.run(cmd + ["--", python, PROG, mode, str(steps), *args], capture_output=True,
                       text=True, env=env)
    check(r.returncode == 0, f"record {mode} exited {r.returncode}: {r.stderr[-500:]}")


def samples(trace):
    """[(tid, on_cpu, [(func, file, line)], gil)] of the trace's SAMPLE records."""
    out = subprocess.run([DUMP, trace], capture_output=True, text=True, check=True).stdout
    got = []
    for line in out.splitlines():
        m = re.match(r"SAMPLE tid=(\d+) on_cpu=(\d) gil=(\d) cpu_ns=\d+ period_ns=\d+ frames=\d+",
                     line)
        if m:
            got.append((int(m.group(1)), m.group(2) == "1", [], m.group(3) == "1"))
        elif line.startswith("  py ") and got:
            # a name in angle brackets may hold spaces (<interpreter trampoline>), files too
            m = (re.match(r"  py (<[^>]*>) (.*):(\d+)$", line) or
                 re.match(r"  py (\S*) (.*):(\d+)$", line))
            if check(m, f"{trace}: a Python frame that does not read as one: {line!r}"):
                got[-1][2].append((m.group(1), m.group(2), int(m.group(3))))
        elif line.startswith("  native") and got:
            got[-1][2].append(("native", "", 0))
    return got


def by_thread(ss):
    th = {}
    for tid, on, frames, gil in ss:
        th.setdefault(tid, []).append((on, frames, gil))
    return th


def check_samples(label, trace, producer_thread=True):
    """(a): the producer's and the sleeper's samples; returns the samples."""
    ss = samples(trace)
    check(len(ss) >= 20, f"{label}: only {len(ss)} samples")
    for tid, on, frames, _ in ss:
        check(all(f[0] != "native" for f in frames), f"{label}: a native frame in a sample")
        for func, file, ln in frames:
            check(ln >= 1 and (file.startswith("<") or os.path.exists(file)),
                  f"{label}: frame {func} {file}:{ln} is no line of a real file")
    th = by_thread(ss)
    sleeper = [(on, fr) for s in th.values() for on, fr, _ in s
               if fr and fr[0][0] == "sleeper" and fr[0][2] == LINE["sleep"]]
    check(len(sleeper) >= 5, f"{label}: {len(sleeper)} samples of the sleeper at its sleep")
    if sleeper:
        on = sum(on for on, _ in sleeper) / len(sleeper)
        check(on <= 0.5, f"{label}: the sleeper was on a CPU in {on:.0%} of its samples")
    if producer_thread:
        prod = [(on, fr, gil) for s in th.values() for on, fr, gil in s
                if any(f[0] == "producer" and f[2] == LINE["produce"] for f in fr)]
        check(len(prod) >= 5, f"{label}: {len(prod)} samples of the producer")
        inner = [fr[0] for on, fr, _ in prod]
        in_aug = [f for f in inner if f[0] == "augment" and f[2] in AUGMENT_LINES]
        check(len(in_aug) * 2 >= len(inner),
              f"{label}: the producer's samples are not mostly in augment: {inner[:5]}")
        if prod:
            on = sum(on for on, _, _ in prod) / len(prod)
            check(on >= 0.5, f"{label}: the producer was on a CPU in only {on:.0%} of its samples")
            gil = sum(g for _, _, g in prod) / len(prod)
            check(gil >= 0.5, f"{label}: the producer held the GIL in only {gil:.0%} of its samples")
        check(len(th) >= 3, f"{label}: {len(th)} threads sampled, expected main, producer, "
              "sleeper")
    return ss


def report_json(path):
    r = subprocess.run([TP, "report", path, "--format", "json", "-q"], capture_output=True,
                       text=True)
    check(r.returncode == 0, f"report {path}: {r.stderr[-300:]}")
    return json.loads(r.stdout) if r.returncode == 0 else {}


def report_text(path):
    return subprocess.run([TP, "report", path], capture_output=True, text=True).stdout


def merged(rep, tmp):
    """`trainprof merge` of the report's JSON (as a job's per-node reports are merged)."""
    path = os.path.join(tmp, "ranks-report.json")
    with open(path, "w") as f:
        json.dump(rep, f)
    r = subprocess.run([TP, "merge", "--format", "json", path], capture_output=True, text=True)
    check(r.returncode == 0, f"merge: {r.stderr[-300:]}")
    return json.loads(r.stdout) if r.returncode == 0 else {}


def finding(rep, rule):
    for rk in rep.get("ranks", []):
        for f in rk.get("findings", []):
            if f.get("id") == rule:
                return f
    return None


# Counts a Perfetto trace's PerfSamples, those whose callstack resolves to interned frames, and
# the function most of them end in.
PERFETTO_DECODE = r"""
import collections, sys
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
t = pb.Trace()
t.ParseFromString(open(sys.argv[1], "rb").read())
stacks, frames, funcs, leaf = {}, {}, {}, collections.Counter()
n = ok = 0
for p in t.packet:
    q = p.trusted_packet_sequence_id
    if p.HasField("interned_data"):
        d = p.interned_data
        stacks.update({(q, e.iid): list(e.frame_ids) for e in d.callstacks})
        frames.update({(q, e.iid): e for e in d.frames})
        funcs.update({(q, e.iid): e.str.decode() for e in d.function_names})
    if p.HasField("perf_sample"):
        n += 1
        ids = stacks.get((q, p.perf_sample.callstack_iid))
        if ids and all((q, f) in frames for f in ids) and p.perf_sample.tid:
            ok += 1
            leaf[funcs.get((q, frames[(q, ids[-1])].function_name_id), "?").split(" ")[0]] += 1
print("samples", n, "resolved", ok, "top", leaf.most_common(1)[0][0] if leaf else "-")
"""


def perfetto_decoded(trace, script):
    """The Perfetto export of `trace` (its run) and `script`'s reading of it (its run), with the
    official schema: the perfetto package of the venv."""
    pf = trace + ".pftrace"
    r = subprocess.run([TP, "export", trace, "--format", "perfetto", "-o", pf, "--quiet"],
                       capture_output=True, text=True)
    return r, subprocess.run([os.path.join(VENV, "bin", "python"), "-c", script, pf],
                             capture_output=True, text=True)


def check_report(label, path):
    """(b): the totals add up, the heaviest row is augment() from producer()."""
    rep = report_json(path)
    ranks = rep.get("ranks", [])
    if not check(len(ranks) == 1, f"{label}: {len(ranks)} ranks"):
        return rep
    cs = ranks[0].get("cpu_samples")
    if not check(cs is not None, f"{label}: no cpu_samples in the JSON report"):
        return rep
    st, th = cs["stacks"], cs["threads"]
    check(sum(s["cpu_ns"] for s in st) + cs["no_stack_cpu_ns"] == cs["cpu_ns"],
          f"{label}: rows' on-CPU time does not add up")
    check(sum(s["samples"] for s in st) + cs["no_stack_samples"] == cs["samples"],
          f"{label}: rows' samples do not add up")
    check(sum(t["cpu_ns"] for t in th) == cs["cpu_ns"] and
          sum(t["wall_ns"] for t in th) == cs["wall_ns"] and
          sum(t["samples"] for t in th) == cs["samples"], f"{label}: threads do not add up")
    check(all(st[i]["cpu_ns"] >= st[i + 1]["cpu_ns"] for i in range(len(st) - 1)),
          f"{label}: rows not by on-CPU time")
    # 400 a second, or fewer when a loaded machine made rounds late (never more)
    check(250 <= cs["hz"] <= 400, f"{label}: hz {cs['hz']}, expected 400 or a little less")
    # the producer, the one thread computing, held the GIL most of its time; the sleeper not
    busiest = max(th, key=lambda t: t["cpu_ns"])
    check(busiest["gil_ns"] * 2 >= busiest["wall_ns"] and
          min(t["gil_ns"] for t in th) * 10 < min(t["wall_ns"] for t in th),
          f"{label}: GIL shares {[(t['gil_ns'], t['wall_ns']) for t in th]}")
    top = st[0]["frames"] if st else []
    check(top and top[0]["function"] == "augment" and top[0]["line"] in AUGMENT_LINES and
          any(f["function"] == "producer" and f["line"] == LINE["produce"] for f in top),
          f"{label}: the heaviest row is not augment() from producer(): "
          f"{[(f['function'], f['line']) for f in top]}")
    check(top and not top[0]["library"], f"{label}: augment() read as a library's frame")
    # the folded export weighs the same samples: on-CPU lines sum to the rows' on-CPU time
    r = subprocess.run([TP, "export", path, "--format", "folded", "--weight", "samples", "-o",
                        "-", "--quiet"], capture_output=True, text=True)
    lines = [ln.rsplit(" ", 1) for ln in r.stdout.splitlines() if ln]
    check(r.returncode == 0 and lines and
          sum(int(w) for _, w in lines) == cs["cpu_ns"] - cs["no_stack_cpu_ns"],
          f"{label}: folded --weight samples does not sum to the sampled on-CPU time")
    check(any(re.search(r"in producer;sampler_prog\.py:\d+ in augment$", t) for t, _ in lines),
          f"{label}: no folded line ends in producer;augment")
    # the Perfetto export: a PerfSample per on-CPU sample, its callstack interned (decoded with
    # the official schema, the perfetto package of the venv)
    r, dec = perfetto_decoded(path, PERFETTO_DECODE)
    m = re.search(r"samples (\d+) resolved (\d+) top (\S+)", dec.stdout)
    on_cpu = sum(1 for _, on, fr, _ in samples(path) if on and fr)
    check(r.returncode == 0 and m and int(m.group(1)) == on_cpu and m.group(2) == m.group(1) and
          m.group(3) == "augment", f"{label}: perfetto: {dec.stdout} {dec.stderr[-300:]}")
    # the SQLite export's samples table, joined to its frames
    db = path + ".sqlite"
    r = subprocess.run([TP, "export", path, "--format", "sqlite", "-o", db, "--quiet"],
                       capture_output=True, text=True)
    if check(r.returncode == 0, f"{label}: sqlite export: {r.stderr}"):
        import sqlite3
        con = sqlite3.connect(db)
        n, on = con.execute("SELECT count(*), sum(on_cpu) FROM samples").fetchone()
        check(n == cs["samples"], f"{label}: {n} sqlite samples, the report has {cs['samples']}")
        top = con.execute("SELECT f.function FROM samples s JOIN frames f ON f.pid = s.pid AND "
                          "f.stack_id = s.stack_id AND f.depth = 0 WHERE s.on_cpu = 1 "
                          "GROUP BY f.function ORDER BY sum(s.period_ns) DESC LIMIT 1").fetchone()
        check(top and top[0] == "augment", f"{label}: sqlite's top on-CPU function: {top}")
        con.close()
    # the HTML page's table: the same rows, the heaviest first
    r = subprocess.run([TP, "report", path, "--format", "html", "-o", "-"], capture_output=True,
                       text=True)
    m = re.search(r'<table class="samples" data-rows="(\d+)" data-hz="(\d+)">.*?'
                  r'<tr data-cpu-ns="(\d+)"[^>]*><td class="name">([^<]*)<', r.stdout, re.S)
    check(m and int(m.group(1)) == len(st) and int(m.group(3)) == st[0]["cpu_ns"] and
          "in augment" in m.group(4), f"{label}: the HTML samples table: {m and m.groups()}")
    text = report_text(path)
    check("CPU time by line, sampled" in text and
          re.search(r"sampler_prog\.py:(%s) in augment" % "|".join(map(str, AUGMENT_LINES)),
                    text), f"{label}: the text report lacks the sampled section or augment")
    return rep


# The "CPU %" counter tracks of a Perfetto trace: per thread name, how many tracks, their
# events, the values' range.
PERFETTO_CPU = r"""
import collections, sys
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
t = pb.Trace()
t.ParseFromString(open(sys.argv[1], "rb").read())
threads, cpu, vals = {}, {}, collections.defaultdict(list)
for p in t.packet:
    if p.HasField("track_descriptor"):
        d = p.track_descriptor
        if d.HasField("thread"):
            threads[d.uuid] = d.thread.thread_name
        if d.name == "CPU %" and d.HasField("counter"):
            cpu[d.uuid] = d.parent_uuid
    if p.HasField("track_event") and p.track_event.type == 4:
        vals[p.track_event.track_uuid].append(p.track_event.counter_value)
by = collections.defaultdict(lambda: [0, 0, 101, -1])
for u, parent in cpu.items():
    b = by[threads.get(parent, "?")]
    v = vals.get(u, [])
    b[0] += 1
    b[1] += len(v)
    b[2] = min([b[2]] + v)
    b[3] = max([b[3]] + v)
for name, b in sorted(by.items()):
    print("cpu", name, *b)
"""


def check_native(python, tmp, cpus):
    """(c) native: spinners that are threads of C code in the process (an OpenMP pool's kind):
    their state and CPU clock sampled, listed apart from the Python threads, counted in the
    job's demand; the collector's own threads never sampled."""
    n = 2 * cpus + 1
    out = os.path.join(tmp, "native.tprof")
    record(python, out, "native", 60, args=(str(n), NATIVE_SPIN))
    rep = report_json(out)
    cs = rep.get("ranks", [{}])[0].get("cpu_samples", {})
    nat = cs.get("native_threads", [])
    spin = [t for t in nat if t["name"] == "native-spin"]
    check(len(spin) == n and all(t["clock_ns"] > 0 and t["cpu_ns"] > 0 and "gil_ns" not in t
                                 for t in spin), f"native: the spinners {spin} of {nat}")
    # the sleepers: written once a second (or when they wake), their waits summed: the same
    # span as the spinners', which started and stopped with them
    # (a sleeper may run, or wait for a CPU, a little as it starts and as it ends: written each
    # round then, on a loaded machine for a while)
    sleep = [t for t in nat if t["name"] == "native-sleep"]
    span = max((t["wall_ns"] for t in spin), default=0)
    few = min((t["samples"] for t in spin), default=0) / 4
    check(len(sleep) == 3 and span > 0 and
          all(t["cpu_ns"] <= 0.2 * t["wall_ns"] and abs(t["wall_ns"] - span) <= 0.05 * span + 10e6
              and t["samples"] <= few for t in sleep),
          f"native: the sleepers {sleep}, the spinners' span {span}")
    check(not [t for t in nat if t["name"].startswith("trainprof-")] and
          not [t for t in cs.get("threads", []) if t["name"] in ("native-spin", "") or
               t["name"].startswith("trainprof-")],
          f"native: the Python threads {cs.get('threads')}, the native {nat}")
    check(all(sum(t[k] for t in nat) == cs.get("native_" + k, -1)
              for k in ("samples", "cpu_ns", "wall_ns", "clock_ns")) and
          sum(t["cpu_ns"] for t in cs.get("threads", [])) == cs.get("cpu_ns") and
          sum(r["cpu_ns"] for r in cs.get("stacks", [])) + cs.get("no_stack_cpu_ns", 0) ==
          cs.get("cpu_ns"), f"native: the sums {json.dumps(cs)[:600]}")
    f = finding(rep, "cpu-contention")
    # the spinners, and the sleepers whose records (one a second, or as they end) lie in the steps
    want = (r"Meanwhile the job's sampled threads \(\d+ in 1 process, (\d+) of them native: "
            r"intra-op and OpenMP pools, libraries' threads\) were ready to run [\d.]+ at a time "
            r"on average \(([\d.]+) of them native threads\), against {} CPUs \(\w[^)]*\): the "
            r"job alone asks for more CPUs than it has$").format(cpus)
    m = f and re.search(want, f["evidence"])
    # the spinners are ready to run all along: n CPUs' worth of the demand is theirs
    check(m and n <= int(m.group(1)) <= n + 3 and float(m.group(2)) >= 0.9 * n and
          f["metrics"]["native_demand_cpus"] >= 0.9 * n and
          f["advice"].startswith("the native threads (PyTorch's intra-op pool, OpenMP, BLAS) "
                                 "want "), f"native: cpu-contention /{want}/: "
          f"{f and f['evidence']} {f and f['advice']}")
    text = report_text(out)
    # the sleepers used a CPU only as they woke to end, if at all: listed after the spinners
    m = re.search(r"\n  native threads \(not the interpreter's: .*\): {}, (\d+) of them used a "
                  r"CPU; CPU clock .*\n(  \d+/\d+ native-spin +\S+ \S+ +\S+ \S+ +\S+ \S+ +"
                  r"[\d.]+ % +- +\d+\n)".format(n + 3), text)
    check(m and n <= int(m.group(1)) <= n + 3 and
          len(re.findall(r"\n  \d+/\d+ native-spin ", text)) == n,
          f"native: the text report's native threads: "
          f"{text[text.find('native threads'):][:400]}")
    check("sample.threads" in json.dumps(rep.get("ranks", [{}])[0].get("environment", {})) or
          "sampled threads" in text, "native: the environment says which threads are sampled")
    # the TUI's Timeline: a cpu row under the step thread's lane, a lane of its own (marked ~)
    # for each native thread, the spinners' busy, the sleepers' empty
    tl = subprocess.run([TP, "tui", "--snapshot", "--view", "timeline", out, "--width", "160",
                         "--height", "60"], capture_output=True, text=True).stdout
    spin_rows = re.findall(r"^ ~native-spin \d+ +(\S.*)$", tl, re.M)
    sleep_rows = re.findall(r"^ ~native-sle\S* \d+(.*)$", tl, re.M)
    check(len(spin_rows) == n and all(len(r.replace(" ", "")) >= 10 for r in spin_rows) and
          len(sleep_rows) == 3 and
          all(len(r.replace(" ", "")) < min(len(x.replace(" ", "")) for x in spin_rows) / 2
              for r in sleep_rows) and
          re.search(r"^ cpu +\S", tl, re.M),
          f"native: the Timeline's CPU rows: {tl[:2500]}")
    # diff against the contend run (forked spinners: no native thread busy, its sampler read
    # them): the native threads' CPU per step from 0 to the spinners'; a run without samples
    # has neither figure
    contend = os.path.join(tmp, "contend.tprof")
    plain = os.path.join(tmp, "native-plain.tprof")
    record(python, plain, "native", 5, sample=False, args=(str(n), NATIVE_SPIN))
    figs = {}
    for name, base in (("contend", contend), ("plain", plain)):
        r = subprocess.run([TP, "diff", base, out, "--format", "json"], capture_output=True,
                           text=True)
        figs[name] = json.loads(r.stdout)["ranks"][0]["figures"] if r.returncode == 0 else {}
    fc, fp = figs["contend"], figs["plain"]
    check(fc.get("native_cpu_per_step", {}).get("base") == 0 and
          fc["native_cpu_per_step"]["new"] > 0 and fc["cpu_per_step"]["new"] >=
          fc["native_cpu_per_step"]["new"] and fc["cpu_per_step"]["base"] > 0 and
          fp.get("cpu_per_step", {}).get("base", 0) is None and
          fp["native_cpu_per_step"]["base"] is None,
          f"native: diff's sampled CPU figures {fc.get('cpu_per_step')} "
          f"{fc.get('native_cpu_per_step')} {fp.get('cpu_per_step')}")
    # the HTML page's sampled threads: the Python one, then the spinners marked native
    r = subprocess.run([TP, "report", out, "--format", "html", "-o", "-"], capture_output=True,
                       text=True)
    m = re.search(r'<table class="sampled-threads">(.*?)</table>', r.stdout, re.S)
    kinds = re.findall(r'<tr class="(python|native)"[^>]*><td class="name">([^<]*)<',
                       m.group(1) if m else "")
    check(kinds and kinds[0][0] == "python" and
          [k for k in kinds if k == ("native", "native-spin")] == [("native", "native-spin")] * n,
          f"native: the HTML page's sampled threads {kinds}")
    # the exports: a "CPU %" counter under each sampled thread (Perfetto), per thread of the
    # process (Chrome JSON); the spinners' values over the sleepers'
    r, dec = perfetto_decoded(out, PERFETTO_CPU)
    got = {m.group(1): [int(x) for x in m.group(2, 3, 4, 5)]
           for m in re.finditer(r"^cpu (\S+) (\d+) (\d+) (-?\d+) (-?\d+)$", dec.stdout, re.M)}
    sp, sl = got.get("native-spin"), got.get("native-sleep")
    check(r.returncode == 0 and sp and sp[0] == n and sp[1] >= n * 20 and 0 <= sp[2] and
          sp[3] <= 100 and sp[3] >= 20 and sl and sl[0] == 3 and sl[1] <= 3 * few and
          got.get("python", [0])[0] == 1,
          f"native: perfetto CPU % tracks {got} {dec.stderr[-300:]}")
    js = out + ".json"
    r = subprocess.run([TP, "export", out, "--format", "chrome", "-o", js, "--quiet"],
                       capture_output=True, text=True)
    if check(r.returncode == 0, f"native: chrome export: {r.stderr}"):
        with open(js) as f:
            ev = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "cpu"]
        names = {e["name"] for e in ev}
        check(len([x for x in names if x.endswith(" native-spin")]) == n and
              all(e["ph"] == "C" and 0 <= e["args"]["cpu"] <= 100 for e in ev),
              f"native: chrome CPU % counters {sorted(names)}")
    db = out + ".sqlite"
    r = subprocess.run([TP, "export", out, "--format", "sqlite", "-o", db, "--quiet"],
                       capture_output=True, text=True)
    if check(r.returncode == 0, f"native: sqlite export: {r.stderr}"):
        import sqlite3
        con = sqlite3.connect(db)
        k, stacks = con.execute("SELECT count(*), sum(stack_id != 0) FROM samples WHERE native = 1"
                                ).fetchone()
        check(k == cs.get("native_samples") and stacks == 0,
              f"native: sqlite has {k} native samples ({stacks} with a stack), the report "
              f"{cs.get('native_samples')}")
        con.close()


def check_gaps(label, rep, want):
    """(c)/(d): what host-step-gaps says."""
    f = finding(rep, "host-step-gaps")
    if not check(f is not None, f"{label}: no host-step-gaps finding"):
        return
    ev = f["evidence"]
    for w in want:
        check(re.search(w, ev), f"{label}: evidence lacks /{w}/: {ev}")


DEV_PROG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sampler_device_prog.py")


def check_device(python, tmp):
    """(c) on a device (the activity API through ctypes): input-bound and low-utilization say
    what the training thread did while the device idled, and who ran meanwhile."""
    with open(DEV_PROG, encoding="utf-8") as f:
        dl = {m.group(1): i + 1 for i, line in enumerate(f)
              for m in [re.search(r"# @(\w+)", line)] if m}
    def record_dev(mode):
        out = os.path.join(tmp, f"dev-{mode}.tprof")
        r = subprocess.run([TP, "record", "--sample-hz", "400", "-o", out, "--", python, DEV_PROG,
                            mode, "40"], capture_output=True, text=True)
        check(r.returncode == 0, f"device {mode}: {r.stderr[-400:]}")
        return report_json(out)

    f = finding(record_dev("input"), "input-bound")
    ev = f["evidence"] if f else ""
    check(f is not None, "device input: no input-bound finding")
    for w in [r"Sampled inside the data-loading ranges \(\d+ samples\): the training thread "
              r"was on a CPU \d+% of the time",
              r"it waited most at .*sampler_device_prog\.py:{} in main".format(dl["fetch"]),
              r"meanwhile thread \d+/\d+ .*most at sampler_device_prog\.py:\d+ in augment < "
              r"sampler_device_prog\.py:{} in producer".format(dl["produce"])]:
        check(re.search(w, ev), f"device input: evidence lacks /{w}/: {ev}")
    f = finding(record_dev("host"), "low-utilization")
    ev = f["evidence"] if f else ""
    check(f is not None, "device host: no low-utilization finding")
    w = (r"Sampled while the device idled on host work \(\d+ samples\): the training thread "
         r"was on a CPU \d+% of the time .*; most of it at sampler_device_prog\.py:\d+ in "
         r"metrics < sampler_device_prog\.py:{} in main".format(dl["host"]))
    check(re.search(w, ev), f"device host: evidence lacks /{w}/: {ev}")


CLOSE_ALL = r"""
import os, sys, time
os.closerange(3, 1024)  # a daemon's start: every descriptor goes
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
t = time.time()
x = 0
while time.time() - t < 0.3:  # sampled meanwhile: the sampler opens and closes its own files
    x += 1
os.write(fd, b"mine\n")
os.close(fd)
"""


SPIN = """
import time
def spin():
    t = time.process_time()
    while time.process_time() - t < 0.4:
        pass
spin()
"""


def check_launched(python, tmp):
    """(h) a process the program starts (a launcher's rank, a wrapper's python) that only
    computes, records no event and is no fork child is sampled from its start: a trace of its
    own, its samples in spin(); the wrapper's own forks (a shell's) leave none."""
    d = os.path.join(tmp, "launched")
    os.mkdir(d)
    child = os.path.join(d, "child.py")
    with open(child, "w") as f:
        f.write(SPIN)
    # bash runs the child as a child of its own (not exec: an `echo` follows), after a `$(...)`
    r = subprocess.run([TP, "record", "--sample-hz", "400", "-o", os.path.join(d, "run.tprof"),
                        "--", "bash", "-c", 'x=$(echo a); "$0" "$1"; echo "$x"', python, child],
                       capture_output=True, text=True)
    check(r.returncode == 0 and r.stdout == "a\n", f"launched: exit {r.returncode}: {r.stderr[-400:]}")
    kids = [p for p in glob.glob(os.path.join(d, "*.tprof")) if not p.endswith("/run.tprof")]
    check(len(kids) == 1, f"launched: {len(kids)} traces beside the launcher's: {kids}")
    if kids:
        got = samples(kids[0])
        spin = sum(1 for _, on, fr, _ in got if fr and fr[0][0] == "spin")
        check(spin >= 10, f"launched: {spin} of {len(got)} samples in spin()")


def check_gate_and_fds(python, tmp):
    """(g) --capture: samples only while a step is open; a program that closes every
    descriptor keeps its own files as without trainprof, and its trace."""
    out = os.path.join(tmp, "cap.tprof")
    r = subprocess.run([TP, "record", "--sample-hz", "400", "--capture", "nvtx:train_step", "-o",
                        out, "--", python, PROG, "phases", "3"], capture_output=True, text=True)
    check(r.returncode == 0, f"capture: {r.stderr[-300:]}")
    db = out + ".sqlite"
    subprocess.run([TP, "export", out, "--format", "sqlite", "-o", db, "--quiet"], check=True)
    import sqlite3
    con = sqlite3.connect(db)
    n = con.execute("SELECT count(*) FROM samples").fetchone()[0]
    steps = con.execute("SELECT count(*) FROM nvtx_ranges").fetchone()[0]
    inside = con.execute(
        "SELECT count(*) FROM samples s WHERE EXISTS (SELECT 1 FROM nvtx_ranges r WHERE "
        "r.pid = s.pid AND s.ts >= r.start AND s.ts <= r.end + 5000000)").fetchone()[0]
    con.close()
    # 3 steps, each followed by half again as much work outside: without the gate 60 % of the
    # samples would be outside; a sample may only come late by a preemption of the sampler
    check(n >= 10 and inside * 10 >= n * 9 and steps == 3,
          f"capture: {n - inside} of {n} samples outside the {steps} steps recorded")
    mine = os.path.join(tmp, "mine.txt")
    out = os.path.join(tmp, "closeall.tprof")
    r = subprocess.run([TP, "record", "--sample-hz", "1000", "-o", out, "--", python, "-c",
                        CLOSE_ALL, mine], capture_output=True, text=True)
    check(r.returncode == 0 and open(mine).read() == "mine\n",
          f"close all: exit {r.returncode}, file {open(mine).read()!r}: {r.stderr[-300:]}")
    check(len(samples(out)) > 20, f"close all: {len(samples(out))} samples")


def run_venv(python):
    with tempfile.TemporaryDirectory() as tmp:
        # thread: the step thread waits on the queue while the producer thread computes
        out = os.path.join(tmp, "thread.tprof")
        record(python, out, "thread", 60)
        check_samples("thread", out)
        rep = check_report("thread", out)
        check_gaps("thread", rep, [r"the step thread was on a CPU \d+% of the time",
                                   r"it waited most at .*sampler_prog\.py:{} in main".format(
                                       LINE["fetch"]),
                                   r"meanwhile thread \d+/\d+ .*was on a CPU \d+% of the time "
                                   r"and held the GIL \d+% of it, "
                                   r"most at sampler_prog\.py:\d+ in augment < "
                                   r"sampler_prog\.py:{} in producer".format(LINE["produce"])])
        # process: the batch comes from a forked process, a trace of its own
        d = os.path.join(tmp, "proc")
        os.mkdir(d)
        record(python, os.path.join(d, "run.tprof"), "process", 60)
        kids = [p for p in glob.glob(os.path.join(d, "*.tprof")) if not p.endswith("/run.tprof")]
        check(len(kids) == 1, f"process: {len(kids)} child traces")
        if kids:
            kid = samples(kids[0])
            check(sum(1 for _, on, fr, _ in kid if fr and fr[0][0] == "augment") >= 5,
                  "process: the forked producer's trace has few samples in augment")
        rep = report_json(d)
        main_pid = rep.get("ranks", [{}])[0].get("processes", [{}])[0].get("pid")
        f = finding(rep, "host-step-gaps")
        m = re.search(r"meanwhile thread (\d+)/\d+", f["evidence"]) if f else None
        check(m and main_pid and int(m.group(1)) != main_pid,
              f"process: the thread busy meanwhile is not the forked producer: "
              f"{f and f['evidence']}")
        # workers: DataLoader-like worker processes, started anew each epoch
        d = os.path.join(tmp, "workers")
        os.mkdir(d)
        record(python, os.path.join(d, "run.tprof"), "workers", 60)
        f = finding(report_json(os.path.join(d, "run.tprof")), "host-input-bound")
        if check(f is not None, "workers: no host-input-bound finding"):
            produce = r"sampler_prog\.py:\d+ in augment < sampler_prog\.py:{} in producer".format(
                LINE["produce"])
            for w in [r"it waited most at sampler_prog\.py:{} in epochs".format(LINE["wfetch"]),
                      r"meanwhile \d+ other processes \(DataLoader workers\) were on a CPU "
                      r"\d+% of the time \(each its busiest thread: .*, most at " + produce,
                      r"6 worker processes sampled, 2 at a time, started 3 times; the waits for "
                      r"a set's first batch took "]:
                check(re.search(w, f["evidence"]), f"workers: evidence lacks /{w}/: {f['evidence']}")
            # the advice after persistent_workers follows from what the waits were: mostly the
            # sets' starts and joins, or batches the busy workers had not made yet (in between,
            # either: how long each takes is the machine's)
            met = f.get("metrics", {})
            churn = met.get("worker_churn_ns", 0) / max(met.get("data_ns", 1), 1)
            # busy: waiting for a CPU on a loaded machine (then not "more of them"), or not
            busy = (r"the workers were (busy \(on a CPU \d+% of the time in the waits\): more "
                    r"of them \(num_workers above 2, cores allowing\) or less work each|ready "
                    r"to run \d+% of the time in the waits but ran \d+%: they waited for a CPU, "
                    r"so more of them would wait too; .* or less work per sample): they spent "
                    r"most at " + produce)
            started = r"most of the waiting \(\d+%\) is for the workers to start and to be joined"
            then = busy if churn < 0.45 else started if churn > 0.55 else busy + "|" + started
            w = r"^persistent_workers=True keeps the workers .* 3 times here[^)]*\); (" + then + ")"
            check(re.search(w, f["advice"]), f"workers: advice lacks /{w}/: {f['advice']}")
            check(f.get("metrics", {}).get("worker_starts") == 3,
                  f"workers: metrics {f.get('metrics')}")
        # the main trace alone (as a live window or a capture holds it): the loop waited and
        # nobody that made the batches is in the trace, which the advice says instead of
        # "made in the training process"; a loop that computes them itself is told so
        os.mkdir(os.path.join(tmp, "alone"))
        alone = os.path.join(tmp, "alone", "main.tprof")
        with open(os.path.join(d, "run.tprof"), "rb") as src, open(alone, "wb") as dst:
            dst.write(src.read())
        f = finding(report_json(alone), "host-input-bound")
        check(f and f["advice"].startswith("the training thread mostly waited for its batches, and "
                                           "no process that makes them was sampled here"),
              f"alone: advice {f and f['advice']}")
        out = os.path.join(tmp, "loader-inline.tprof")
        record(python, out, "loader-inline", 40)
        f = finding(report_json(out), "host-input-bound")
        check(f and f["advice"].startswith("the batches are made in the training process itself"),
              f"loader-inline: advice {f and f['advice']}")
        # contend: more busy threads than CPUs. Forked by the job, the spinners are the job's
        # own demand; started beside it, they are what the sampler does not see.
        cpus = len(os.sched_getaffinity(0))
        out = os.path.join(tmp, "contend.tprof")
        record(python, out, "contend", 60)
        f = finding(report_json(out), "cpu-contention")
        want = (r"^sampled in the steps after warm-up \(\d+ samples\): the step thread was ready "
                r"to run or running \d+% of the time .* but ran \d+% \(its CPU clock: .*\); it "
                r"waited .* for a CPU\. Meanwhile the job's sampled threads \(\d+ in "
                r"{} processes, 0 of them native: [^)]*\) were ready to run [\d.]+ at a time on "
                r"average, against {} CPUs "
                r"\(\w[^)]*\): the job alone asks for more CPUs than it has$").format(
                    2 * cpus + 2, cpus)
        # its steps only compute: found in state R (running, or ready and starved of a CPU,
        # which only a re-read of its state tells from asleep) nearly all their time
        check(f and re.search(want, f["evidence"]) and
              f["metrics"]["demand_cpus"] >= 0.9 * f["metrics"]["cpus"] and
              f["metrics"]["cpu_wait_ns"] >= 0.1 * f["metrics"]["sampled_wall_ns"] and
              f["metrics"]["ready_ns"] >= 0.9 * f["metrics"]["sampled_wall_ns"],
              f"contend: cpu-contention /{want}/: {f and f['evidence']} {f and f['metrics']}")
        spinners = [subprocess.Popen([python, "-c", "while True: pass"])
                    for _ in range(2 * cpus + 1)]
        try:
            out = os.path.join(tmp, "contend-outside.tprof")
            record(python, out, "contend", 60, args=("0",))
        finally:
            for p in spinners:
                p.kill()
                p.wait()
        f = finding(report_json(out), "cpu-contention")
        want = (r"\(\d+ in 1 process, 0 of them native: [^)]*\) were ready to run [\d.]+ at a "
                r"time on average, against {} CPUs \(\w[^)]*\): the rest of the demand is what "
                r"the sampler does not see, the job's other ranks on this machine").format(cpus)
        if cpus >= 2:  # on one CPU the job's one busy thread is already 90 % of it
            check(f and re.search(want, f["evidence"]) and
                  "give the job CPUs of its own" in f["advice"] and
                  f["metrics"]["ready_ns"] >= 0.9 * f["metrics"]["sampled_wall_ns"],
                  f"contend outside: cpu-contention /{want}/: {f and f['evidence']}")
        check_native(python, tmp, cpus)
        # ranks: a two-rank job without a device (tests/collector/ranks_prog.py): rank 1 does 4x
        # the work, rank 0 waits for it in each exchange; the sampled waits name rank 1, in the
        # report and through `merge` of the report's JSON alike
        d = os.path.join(tmp, "ranks")
        os.mkdir(d)
        r = subprocess.run([TP, "record", "--sample-hz", "400", "-o", os.path.join(d, "run.tprof"),
                            "--", python, RANKS, "80"], capture_output=True, text=True)
        check(r.returncode == 0, f"ranks: record exited {r.returncode}: {r.stderr[-300:]}")
        rep = report_json(d)
        procs = [(p["role"], p["command"].split()[-4:][:2]) for p in
                 rep.get("ranks", [{}])[0].get("processes", [])]
        check([p[0] for p in procs] == ["launcher", "main"],
              f"ranks: rank 0's processes are the launcher, then its own main: {procs}")
        for how, doc in (("report", rep), ("merge", merged(rep, tmp))):
            xr = doc.get("cross_rank", {})
            rows = {x["rank"]: x for x in xr.get("ranks", [])}
            got = {f["id"]: f for f in xr.get("findings", [])}
            check(sorted(rows) == [0, 1] and all("host_wait_ns" in x for x in rows.values()) and
                  rows[0]["host_wait_ns"] > 2 * rows[1]["host_wait_ns"],
                  f"ranks ({how}): rows' host waits {rows}")
            check(got.get("straggler", {}).get("rank") == 1 and
                  got.get("collective-wait", {}).get("rank") == 1 and
                  "rank 0 waits in collectives for rank 1" in got["collective-wait"]["title"] and
                  "no device: the step threads' time off a CPU" in
                  got["collective-wait"]["evidence"],
                  f"ranks ({how}): findings {json.dumps(got)[:600]}")
        check("cpu-oversubscribed" not in {f["id"] for f in rep["cross_rank"]["findings"]},
              "ranks: two ranks wanting less than the machine: no cpu-oversubscribed")
        # each rank forks a spinner per CPU: the machine's ranks want more CPUs than it has
        d2 = os.path.join(tmp, "ranks-spin")
        os.mkdir(d2)
        r = subprocess.run([TP, "record", "--sample-hz", "400", "-o", os.path.join(d2, "run.tprof"),
                            "--", python, RANKS, "80", str(cpus)], capture_output=True, text=True)
        check(r.returncode == 0, f"ranks-spin: record exited {r.returncode}: {r.stderr[-300:]}")
        xr = report_json(d2).get("cross_rank", {})
        rows = xr.get("ranks", [])
        whole = rows and all(x.get("cpus", 0) >= x.get("cores", 1) > 0 for x in rows)
        f = [g for g in xr.get("findings", []) if g["id"] == "cpu-oversubscribed"]
        if whole:  # a machine whose cores these processes may all use (no mask, no quota)
            check(len(f) == 1 and re.search(r"^cpu-oversubscribed: the 2 ranks on \S+ want "
                                            r"[\d.]+ CPUs at a time, on \d+ cores$", f[0]["title"])
                  and sum(x["cpu_demand"] for x in rows) >= rows[0]["cores"],
                  f"ranks-spin: cpu-oversubscribed {f} rows {rows}")
        text = subprocess.run([TP, "report", d], capture_output=True, text=True).stdout
        check(re.search(r"waits per step \(no device: .*\): rank 0 [\d.]+ [mµ]s, rank 1 ", text),
              f"ranks: text row of waits: {text[text.find('Ranks'):][:600]}")
        tui = subprocess.run([TP, "tui", "--snapshot", "--view", "ranks", d], capture_output=True,
                             text=True).stdout
        check(re.search(r"^>? +0 .* [\d.]+ [mµ]s\* ", tui, re.M),
              f"ranks: the TUI's Ranks view marks rank 0's sampled waits: {tui[:800]}")
        # warm: start-up work before the steps; the text report's steps-only rows are the
        # step's line, the JSON's in_steps the same rows
        out = os.path.join(tmp, "warm.tprof")
        record(python, out, "warm", 40)
        text = report_text(out)
        m = re.search(r"  in the steps only \(40 steps, from the first start to the last end: "
                      r"([\d.]+) % of the on-CPU time above.*\n.*\n\s+s1 .*  "
                      r"sampler_prog\.py:(\d+) in train_step", text)
        check(m and float(m.group(1)) < 50 and int(m.group(2)) in (LINE["step"] - 1, LINE["step"]),
              f"warm: no steps-only rows led by train_step: {text[text.find('in the steps'):][:400]}")
        cs = report_json(out).get("ranks", [{}])[0].get("cpu_samples", {})
        ins = cs.get("in_steps", {})
        check(ins.get("steps") == 40 and 0 < ins.get("cpu_ns", 0) < cs.get("cpu_ns", 0) and
              sum(r["cpu_ns"] for r in ins.get("stacks", [])) <= ins.get("cpu_ns", 0) and
              ins["stacks"][0]["frames"][0]["function"] == "train_step",
              f"warm: in_steps {json.dumps(ins)[:400]}")
        # inline: the step thread computes the batch itself between the steps
        out = os.path.join(tmp, "inline.tprof")
        record(python, out, "inline", 60)
        check_gaps("inline", report_json(out),
                   [r"the step thread was on a CPU (\d\d|100)% of the time",
                    r"most of it at sampler_prog\.py:\d+ in augment < "
                    r"sampler_prog\.py:{} in main.<locals>.get".format(LINE["inline"])])
        # diff: the line that computes the batch inline is new, the producer thread's gone
        r = subprocess.run([TP, "diff", os.path.join(tmp, "thread.tprof"), out, "--format",
                            "json"], capture_output=True, text=True)
        rows = json.loads(r.stdout)["ranks"][0].get("cpu_samples", []) if r.returncode == 0 else []
        check(any("in main.<locals>.get" in x["name"] and x["count_base"] == 0 and
                  x["count_new"] > 0 for x in rows) and
              any("in producer" in x["name"] and x["count_new"] == 0 and x["count_base"] > 0
                  for x in rows), f"diff: cpu_samples rows {[x['name'][:60] for x in rows][:6]}")
        # (d) no --sample
        out = os.path.join(tmp, "plain.tprof")
        record(python, out, "thread", 20, sample=False)
        check(not samples(out), "plain: SAMPLE records without --sample")
        rep = report_json(out)
        check("cpu_samples" not in rep.get("ranks", [{}])[0], "plain: cpu_samples without samples")
        check_gaps("plain", rep, [r"`trainprof record --sample` samples which lines run there"])
        check_device(python, tmp)
        check_gate_and_fds(python, tmp)
        check_launched(python, tmp)


def main():
    venv_python = os.path.join(VENV, "bin", "python")
    if not os.access(venv_python, os.X_OK) or subprocess.run(
            [venv_python, "-c", "import nvtx"], capture_output=True).returncode != 0:
        print(f"no venv with the nvtx package at {VENV} (scripts/install-deps.sh makes it)")
        return 1 if os.environ.get("CI") == "true" else 77
    # (f)
    for bad in ("0", "1001", "ten"):
        r = subprocess.run([TP, "record", "--sample-hz", bad, "--", "true"], capture_output=True,
                           text=True)
        first = r.stderr.split("\n", 1)[0]  # then the usage, as for every usage error
        check(r.returncode == 2 and "--sample-hz takes 1 to 1000" in first,
              f"--sample-hz {bad}: exit {r.returncode}, {first!r}")
    run_venv(venv_python)
    tested = ["venv"]
    for python in cpythons():
        v = version(python)
        if not v or v[0] != 3 or not 8 <= v[1] <= 14:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "t.tprof")
            record(python, out, "thread", 30)
            check_samples(f"{python} ({v[0]}.{v[1]})", out)
        tested.append(f"{v[0]}.{v[1]}")
    print("tested:", ", ".join(tested))
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("all checks passed")
    return 0


sys.exit(main())
