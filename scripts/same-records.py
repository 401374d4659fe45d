#!/usr/bin/env python3
"""same-records.py: do two traces of one deterministic run hold the same records?

usage: same-records.py TRAINPROF A.tprof B.tprof [--ignore COLUMN,...]

Exports both with `TRAINPROF export --format sqlite --no-symbols` and compares every table
row by row as multisets, every column but the clock's (start, end, ts, start_realtime_ns)
and the process's (pid, ppid: each run has its own): thread ids become thread names,
string ids their text, module ids their path, and each stack_id is compared both as the
id and as its frames (module path, offset). --ignore drops more columns (addresses of a
run that mmaps at random places, say). The collector library's own module row is compared
by its id only (the builds compared differ). Record runs that are deterministic: the
trainer with `--workers 0` (loader threads take batches in any order) under `setarch
x86_64 -R` (the same addresses each run). Prints the row count per table and the first
differences; exit 1 when any table differs. For A/B checks of collector changes that must
not change what is recorded (docs/PERFORMANCE.md)."""
import collections
import os
import sqlite3
import subprocess
import sys
import tempfile

CLOCK = {"start", "end", "ts", "moment_ts", "start_realtime_ns", "pid", "ppid"}
SKIP_TABLES = {"frames"}  # symbolized frames; --no-symbols leaves module + offset in `stacks`


def export(tp, trace, out):
    r = subprocess.run([tp, "export", "--format", "sqlite", "--no-symbols", "--quiet", "--force",
                        "-o", out, trace], capture_output=True, text=True)
    if r.returncode:
        sys.exit("export %s: %s" % (trace, r.stderr))


def load(db, ignore):
    con = sqlite3.connect(db)
    tables = [t for (t,) in con.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    strings = dict(con.execute("SELECT id, text FROM strings"))
    threads = dict(con.execute("SELECT tid, name FROM threads"))
    modules = dict(con.execute("SELECT module_id, path FROM modules"))
    stacks = collections.defaultdict(list)
    for sid, depth, mod, off in con.execute(
            "SELECT stack_id, depth, module_id, offset FROM stacks ORDER BY stack_id, depth"):
        stacks[sid].append((modules.get(mod, mod), off))
    out = {}
    for t in tables:
        if t in SKIP_TABLES:
            continue
        cols = [c[1] for c in con.execute("PRAGMA table_info(%s)" % t)]
        keep = [c for c in cols if c not in CLOCK and c not in ignore]
        rows = collections.Counter()
        for row in con.execute("SELECT %s FROM %s" % (", ".join(keep), t)):
            v = []
            for c, x in zip(keep, row):
                if t == "strings" and c == "id":
                    x = None  # threads intern concurrently: compared by text (name_id above)
                elif c == "tid" and t != "threads":
                    x = threads.get(x, x)
                elif c == "tid":
                    x = None  # the thread's name is the next column
                elif c == "name_id":
                    x = strings.get(x, x)
                elif c == "module_id" and t != "modules":
                    x = modules.get(x, x)
                elif c == "stack_id" and t != "stacks":
                    x = (x, tuple(stacks.get(x, ())))
                v.append(x)
            if t == "modules" and os.path.basename(str(v[keep.index("path")])).startswith(
                    "libtrainprof-collector"):
                v = [v[keep.index("module_id")], "<the collector>"]  # the builds compared differ
            rows[tuple(v)] += 1
        out[t] = (keep, rows)
    return out


def main():
    args = sys.argv[1:]
    ignore = set()
    if "--ignore" in args:
        i = args.index("--ignore")
        ignore = set(args[i + 1].split(","))
        del args[i:i + 2]
    if len(args) != 3:
        sys.exit(__doc__)
    tp, a, b = args
    with tempfile.TemporaryDirectory() as tmp:
        da, db = os.path.join(tmp, "a.sqlite"), os.path.join(tmp, "b.sqlite")
        export(tp, a, da)
        export(tp, b, db)
        ta, tb = load(da, ignore), load(db, ignore)
    bad = 0
    for t in sorted(set(ta) | set(tb)):
        (ka, ra), (kb, rb) = ta.get(t, ([], collections.Counter())), tb.get(t, ([], collections.Counter()))
        n = sum(ra.values())
        if ka == kb and ra == rb:
            print("%-16s %8d rows  same" % (t, n))
            continue
        bad += 1
        print("%-16s %8d / %d rows  DIFFER (columns %s)" % (t, n, sum(rb.values()), ka))
        for row in list((ra - rb).elements())[:3]:
            print("   only in A:", row)
        for row in list((rb - ra).elements())[:3]:
            print("   only in B:", row)
    print("same records" if not bad else "%d table(s) differ" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
