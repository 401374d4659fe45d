#!/usr/bin/env python3
"""trainprof export, end to end: Chrome JSON and SQLite exports of the sample traces and of a
freshly recorded trainer trace must carry the same numbers as the trace itself.

usage: test_export.py TRAINPROF TRAINER SAMPLES_DIR
(a) the JSON parses and `trainprof report --format json` of it agrees with the report of the
    .tprof on kernels (count, total per name), copies (count, bytes, time per kind/source) and
    NVTX ranges (count, total per name); differences allowed are the documented ones
    (docs/export.md): device_type, launch and queue statistics of non-CUDA launch APIs;
(b) every kernel's ts/dur in the JSON is the exact ns of the trace (read as decimals);
(c) the SQLite file gives the record counts of `trainprof info --json` and the report's sums;
(d) bad input: not a trace, truncated trace, unwritable output, bad format;
(e) no silent overwrite: an existing output (the default name too) is kept unless --force,
    the trace itself is never an output and stays intact, a symbolic link is never followed
    (with --force the link itself is replaced), no temporary folder is left behind."""
import decimal
import gzip
import json
import os
import resource
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile

TP, TRAINER, SAMPLES = sys.argv[1:4]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args, **kw):
    return subprocess.run([TP, *args], capture_output=True, text=True, **kw)


def report(path):
    r = run("report", "--format", "json", path)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["ranks"][0]


def by(rows, key, fields):
    return {tuple(row[k] for k in key): tuple(row[f] for f in fields) for row in rows}


def without_stacks(findings):
    """Findings minus their call stacks: Kineto JSON has no native stacks (docs/export.md)."""
    out = []
    for f in findings:
        f = dict(f, frames=None)
        f["source"] = f.get("source", "").split("; stack:")[0]
        out.append(f)
    return out


def compare_reports(trace, exported):
    a, b = report(trace), report(exported)
    check(by(a["kernels"], ["name"], ["count", "sum_ns", "min_ns", "max_ns"])
          == by(b["kernels"], ["name"], ["count", "sum_ns", "min_ns", "max_ns"]),
          f"{trace}: kernels differ after export")
    check(by(a["copies"], ["kind", "src"], ["count", "bytes", "dur_ns"])
          == by(b["copies"], ["kind", "src"], ["count", "bytes", "dur_ns"]),
          f"{trace}: copies differ after export")
    check(by(a["ranges"], ["name"], ["count", "total_ns"])
          == by(b["ranges"], ["name"], ["count", "total_ns"]),
          f"{trace}: NVTX ranges differ after export")
    check(a["temporal"] == b["temporal"], f"{trace}: temporal breakdown differs")
    check(len(a["kernels"]) > 0 and len(a["ranges"]) > 0, f"{trace}: nothing to compare")
    # Everything else must agree too, except what docs/export.md lists: a trace of the
    # trainer's CPU device reads back as a GPU trace whose tp* launch calls HTA's rules
    # (by name) do not count as launches. Kineto JSON has no call stacks (launch_stacks is
    # empty there) and no NVTX domains (ranges' "domain" reads "").
    # memory_use too: Kineto's [memory] events carry no heaps (segments) and no device for
    # allocator-level regions, so the exported file replays as a different allocator.
    allowed = {"file", "launch_stacks", "memory_use"} | ({"device_type", "launch", "queue"}
                                           if a["device_type"] == "CPU device" else set())
    diff = {k for k in a if a[k] != b.get(k)} - allowed - {"findings", "ranges", "cross_rank_row"}
    # the cross-rank row's memory peak is memory_use's (allowed to differ above)
    check(dict(a["cross_rank_row"], mem_peak_bytes=None) == dict(b["cross_rank_row"],
                                                                mem_peak_bytes=None),
          f"{trace}: cross_rank_row differs after export")
    check([{k: v for k, v in r.items() if k != "domain"} for r in a["ranges"]]
          == [{k: v for k, v in r.items() if k != "domain"} for r in b["ranges"]],
          f"{trace}: ranges differ after export")
    check(b["launch_stacks"]["gpu_ns"] == a["launch_stacks"]["gpu_ns"]
          and not b["launch_stacks"]["stacks"], f"{trace}: launch_stacks of the JSON")
    check(without_stacks(a["findings"]) == without_stacks(b["findings"]),
          f"{trace}: findings differ after export")
    check(not diff, f"{trace}: report fields differ after export: {sorted(diff)}")
    return a


def exact_ns(js, db):
    """Every kernel of the JSON, read as decimals, is a kernel of the SQLite file (exact ns)."""
    dec = json.loads(js, parse_float=decimal.Decimal)
    got = sorted((e["name"], int(e["ts"] * 1000), int((e["ts"] + e["dur"]) * 1000))
                 for e in dec["traceEvents"] if e.get("cat") == "kernel")
    want = sorted(db.execute("select name, start, end from kernels_named").fetchall())
    check(got == [tuple(w) for w in want], "kernel ts/dur in the JSON are not the exact ns")
    check(all(e["ts"] * 1000 == int(e["ts"] * 1000) for e in dec["traceEvents"]
              if "ts" in e), "a JSON timestamp has more than 3 decimals")
    return dec


def check_sqlite(trace, db, rep):
    info = json.loads(run("info", "--json", trace).stdout)["records"]
    for table, rec in [("kernels", "KERNEL"), ("memcpy", "MEMCPY"), ("memset", "MEMSET"),
                       ("sync", "SYNC"), ("api", "API"), ("device_mem", "DEVICE_MEM"),
                       ("heaps", "HEAP"), ("regions", "REGION"), ("nvtx_marks", "NVTX_MARK"),
                       ("counters", "COUNTER"), ("overhead", "OVERHEAD")]:
        n = db.execute(f"select count(*) from {table}").fetchone()[0]
        check(n == info.get(rec, 0), f"{trace}: sqlite {table} has {n} rows, info {info.get(rec)}")
    pushes = info.get("NVTX_PUSH", 0) + info.get("NVTX_START", 0)
    n = db.execute("select count(*) from nvtx_ranges").fetchone()[0]
    check(n == pushes, f"{trace}: {n} nvtx_ranges for {pushes} pushes/starts")
    rows = db.execute("select name, count(*), sum(end-start) from kernels_named group by name")
    got = {name: (cnt, total) for name, cnt, total in rows}
    want = {k["name"]: (k["count"], k["sum_ns"]) for k in rep["kernels"]
            if not k["name"].startswith(("Memcpy", "Memset"))}  # the report lists copies too
    check(got == want, f"{trace}: sqlite kernel sums differ from the report")
    rows = db.execute("select copy_kind, lower(src_kind), count(*), sum(bytes) from memcpy "
                      "group by 1, 2").fetchall()
    want = {(c["kind"], c["src"]): (c["count"], c["bytes"]) for c in rep["copies"]
            if c["kind"] != "Memset"}
    check({(k, s): (n, b) for k, s, n, b in rows} == want, f"{trace}: sqlite copies differ")
    n = db.execute("select count(*) from strings where text is null").fetchone()[0]
    check(n == 0, f"{trace}: {n} string ids without text")
    n = db.execute("select count(*) from api a where stack_id != 0 and not exists "
                   "(select 1 from stacks s where s.stack_id = a.stack_id)").fetchone()[0]
    check(n == 0, f"{trace}: {n} API stacks missing from the stacks table")


def export_one(trace, tmp):
    base = os.path.join(tmp, os.path.basename(trace).replace(".tprof", ""))
    r = run("export", trace, "--format", "chrome", "-o", base + ".json")
    check(r.returncode == 0, f"{trace}: chrome export failed: {r.stderr}")
    r = run("export", trace, "--format", "chrome", "-o", base + ".json.gz")
    check(r.returncode == 0, f"{trace}: gzip export failed: {r.stderr}")
    r = run("export", trace, "--format", "sqlite", "-o", base + ".sqlite")
    check(r.returncode == 0, f"{trace}: sqlite export failed: {r.stderr}")
    js = open(base + ".json").read()
    check(gzip.open(base + ".json.gz", "rt").read() == js, f"{trace}: .json.gz differs")
    parsed = json.loads(js)  # (a) plain python json
    check(parsed["traceEvents"] and "baseTimeNanoseconds" in parsed, f"{trace}: JSON incomplete")
    rep = compare_reports(trace, base + ".json")
    db = sqlite3.connect(base + ".sqlite")
    dec = exact_ns(js, db)
    check_sqlite(trace, db, rep)
    cats = {e.get("cat") for e in dec["traceEvents"]}
    for cat in ("kernel", "gpu_memcpy", "cuda_runtime", "user_annotation", "ac2g"):
        check(cat in cats, f"{trace}: no {cat} events")
    mem = [e for e in dec["traceEvents"] if e.get("name") == "[memory]"]
    check(len(mem) == sum(db.execute(f"select count(*) from {t}").fetchone()[0]
                          for t in ("device_mem", "heaps", "regions")),
          f"{trace}: [memory] events do not match the memory records")
    db.close()
    return base


def sanitizer_build(r):
    err = r.stderr if isinstance(r.stderr, str) else r.stderr.decode(errors="replace")
    return r.returncode != 0 and "ASan runtime does not come first" in err


def small_files():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() then fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))


def odd_names(tmp):
    """A program whose name has a quote, a backslash and an invalid UTF-8 byte: the JSON must
    stay valid, escape the first two and carry U+FFFD for the byte."""
    exe = os.path.join(tmp.encode(), b'tr"ai\\n\xffer')
    shutil.copy(TRAINER, exe)
    trace = os.path.join(tmp, "odd.tprof")
    r = subprocess.run([TP.encode(), b"record", b"-o", trace.encode(), b"--", exe, b"--device",
                        b"cpu", b"--steps", b"2"], capture_output=True)
    if sanitizer_build(r):
        return
    if r.returncode != 0:
        check(False, f"odd name: record failed: {r.stderr}")
        return
    r = run("export", trace, "--format", "chrome")
    check(r.returncode == 0, f"odd name: export failed: {r.stderr}")
    ev = json.load(open(os.path.join(tmp, "odd.json"), encoding="utf-8"))["traceEvents"]
    names = [e["args"]["name"] for e in ev if e.get("name") == "process_name"]
    check('tr"ai\\n\ufffder' in names, f"odd name: process names {names}")


def bad_input(tmp, good):
    junk = os.path.join(tmp, "junk.tprof")
    open(junk, "w").write("this is not a trace\n" * 10)
    r = run("export", junk, "--format", "chrome", "-o", os.path.join(tmp, "j.json"))
    check(r.returncode == 1 and "not a trainprof trace" in r.stderr, f"junk: {r.returncode} {r.stderr}")
    check(not os.path.exists(os.path.join(tmp, "j.json")), "junk: output written")
    r = run("export", os.path.join(tmp, "missing.tprof"), "--format", "sqlite")
    check(r.returncode == 1 and "cannot open" in r.stderr, f"missing: {r.stderr}")
    data = open(good, "rb").read()
    cut = os.path.join(tmp, "cut.tprof")
    open(cut, "wb").write(data[: len(data) * 2 // 3])
    r = run("export", cut, "--format", "chrome")  # default output: cut.json
    check(r.returncode == 0 and "warning" in r.stderr, f"truncated: {r.returncode} {r.stderr}")
    ev = json.load(open(os.path.join(tmp, "cut.json")))["traceEvents"]
    check(any(e.get("cat") == "kernel" for e in ev), "truncated: no kernels exported")
    r = run("export", cut, "--format", "sqlite")
    check(r.returncode == 0 and os.path.exists(os.path.join(tmp, "cut.sqlite")), "truncated sqlite")
    for fmt, out in (("chrome", "/nonexistent-dir/x.json"), ("sqlite", "/nonexistent-dir/x.sqlite"),
                     ("chrome", tmp), ("sqlite", tmp)):  # a directory
        r = run("export", good, "--format", fmt, "-o", out)
        check(r.returncode == 1 and out in r.stderr, f"unwritable {out}: {r.returncode} {r.stderr}")
    for fmt in ("chrome", "sqlite"):  # a write that fails midway (file size limit: EFBIG)
        out = os.path.join(tmp, "big." + fmt)
        r = run("export", good, "--format", fmt, "-o", out, preexec_fn=small_files)
        check(r.returncode == 1 and out in r.stderr, f"EFBIG {fmt}: {r.returncode} {r.stderr}")
        check(not os.path.exists(out), f"EFBIG {fmt}: partial output left behind")
    if os.path.exists("/dev/full") and stat.S_ISCHR(os.stat("/dev/full").st_mode):
        for fmt in ("chrome", "sqlite"):  # ENOSPC; and the device must survive the cleanup
            r = run("export", good, "--format", fmt, "-o", "/dev/full")
            check(r.returncode == 1 and "/dev/full" in r.stderr, f"/dev/full {fmt}: {r.stderr}")
            check(stat.S_ISCHR(os.stat("/dev/full").st_mode), "export removed /dev/full")
    r = run("export", good, "--format", "xml")
    check(r.returncode == 2 and "unknown format" in r.stderr, f"bad format: {r.stderr}")
    r = run("export", good)
    check(r.returncode == 2, "missing --format accepted")


def overwrite_rules(tmp, good):
    d = os.path.join(tmp, "overwrite")
    os.mkdir(d)
    trace = os.path.join(d, "t.tprof")
    shutil.copy(good, trace)
    data = open(trace, "rb").read()
    os.symlink("t.tprof", os.path.join(d, "to-trace.json"))
    secret = os.path.join(d, "secret.txt")
    open(secret, "w").write("secret\n")
    for fmt, ext in (("chrome", ".json"), ("sqlite", ".sqlite")):
        for out in (trace, os.path.join(d, "to-trace.json")):  # itself, or through a link
            for force in ([], ["--force"]):
                r = run("export", trace, "--format", fmt, "-o", out, *force)
                check(r.returncode == 1 and "is the trace being exported" in r.stderr,
                      f"{fmt} onto the input {out} {force}: {r.returncode} {r.stderr}")
                check(open(trace, "rb").read() == data, f"{fmt} onto the input: input changed")
        out = os.path.join(d, "t" + ext)  # also the default output name
        open(out, "w").write("keep me\n")
        for args in ([], ["-o", out]):
            r = run("export", trace, "--format", fmt, *args)
            check(r.returncode == 1 and "already exists; use --force" in r.stderr,
                  f"{fmt} onto an existing {args}: {r.returncode} {r.stderr}")
            check(open(out, "rb").read() == b"keep me\n", f"{fmt}: existing output changed")
        r = run("export", trace, "--format", fmt, "-o", out, "--force")
        check(r.returncode == 0, f"{fmt} --force: {r.returncode} {r.stderr}")
        if fmt == "chrome":
            check("traceEvents" in json.load(open(out)), "--force: no JSON written")
        else:
            check(sqlite3.connect(out).execute("select count(*) from kernels").fetchone()[0] > 0,
                  "--force: no database written")
        link = os.path.join(d, "to-secret" + ext)
        os.symlink("secret.txt", link)
        r = run("export", trace, "--format", fmt, "-o", link)
        check(r.returncode == 1 and "already exists" in r.stderr, f"{fmt} onto a link: {r.stderr}")
        r = run("export", trace, "--format", fmt, "-o", link, "--force")
        check(r.returncode == 0 and not os.path.islink(link) and os.path.isfile(link),
              f"{fmt} --force onto a link: the link was not replaced: {r.stderr}")
        check(open(secret).read() == "secret\n", f"{fmt} --force followed the link")
        dangling = os.path.join(d, "dangling" + ext)
        os.symlink("nowhere" + ext, dangling)
        r = run("export", trace, "--format", fmt, "-o", dangling)
        check(r.returncode == 1 and not os.path.exists(os.path.join(d, "nowhere" + ext)),
              f"{fmt} through a dangling link: {r.returncode} {r.stderr}")
    left = [n for n in os.listdir(d) if n.startswith(".trainprof-export-")]
    check(not left, f"temporary folders left behind: {left}")


def to_stdout(tmp, good):
    """-o - is standard output for the formats written front to back; SQLite refuses."""
    d = os.path.join(tmp, "stdout")
    os.mkdir(d)
    ref = os.path.join(d, "ref.json")
    check(run("export", good, "--format", "chrome", "-o", ref).returncode == 0, "chrome to a file")
    r = subprocess.run([TP, "export", good, "--format", "chrome", "-o", "-"], cwd=d,
                       capture_output=True)
    check(r.returncode == 0 and r.stdout == open(ref, "rb").read(),
          f"chrome -o -: {r.returncode} {len(r.stdout)} bytes, {r.stderr[-200:]!r}")
    check("wrote standard output" in r.stderr.decode(), f"chrome -o -: {r.stderr[-200:]!r}")
    r = subprocess.run([TP, "export", good, "--format", "sqlite", "-o", "-"], cwd=d,
                       capture_output=True)
    check(r.returncode == 1 and b"needs a file" in r.stderr and not r.stdout,
          f"sqlite -o -: {r.returncode} {r.stderr!r}")
    check(os.listdir(d) == ["ref.json"], f"-o - left files: {os.listdir(d)}")


def main():
    with tempfile.TemporaryDirectory(prefix="tp-export-") as tmp:
        traces = sorted(os.path.join(SAMPLES, f) for f in os.listdir(SAMPLES) if f.endswith(".tprof"))
        fresh = os.path.join(tmp, "fresh.tprof")
        r = run("record", "-o", fresh, "--", TRAINER, "--device", "cpu", "--scenario", "healthy",
                "--steps", "20")
        if sanitizer_build(r):
            print("note: an ASan build cannot record (the collector is preloaded); samples only")
        else:
            check(r.returncode == 0, f"record failed: {r.stderr}")
            traces.append(fresh)
        for t in traces:
            export_one(t, tmp)
        odd_names(tmp)
        bad_input(tmp, traces[0])  # a sample: large enough to keep kernels when cut
        overwrite_rules(tmp, traces[0])
        to_stdout(tmp, traces[0])
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
