#!/usr/bin/env python3
"""trainprof export --format sqlite --schema nsys, end to end: the queries people write against
`nsys export --type sqlite` files, run on ours, give `trainprof report`'s numbers.

usage: test_export_nsys.py TRAINPROF TRAINER SAMPLES_DIR NVTX_APP [CUPTI_APP]
For the sample traces, a freshly recorded trainer trace (kernels, copies, memsets, device API
calls, syncs, NVTX ranges), a recording of NVTX_APP (tests/collector: NVTX domains, a
category, marks, start/end ranges on several threads) and, given CUPTI_APP, a recording of it
(CUDA runtime and driver calls through the CUPTI stand-in):
(a) the tables and columns those queries use exist under nsys's names;
(b) top kernels by total time (StringIds joined on demangledName; and on shortName) equal the
    report's kernels table; NVTX range summary by text (COALESCE(text, StringIds.value), domain
    names from the NvtxDomainCreate rows) equals the report's ranges, and GPU ops and time by
    the innermost range around their launch its ranges' gpu_ops/gpu_ns; memcpy by copyKind joined
    to ENUM_CUDA_MEMCPY_OPER / ENUM_CUDA_MEM_KIND, and memsets by memKind, give the report's
    copies (count, bytes, time); the runtime API summary equals trainprof's own SQLite export;
    every GPU op joins its launching call on correlationId; globalTid decodes to the pid;
(c) bad option combinations, bad input and failed writes: one line, non-zero exit, no output
    left;
(d) the default schema (no --schema) is still trainprof's."""
import collections
import json
import os
import resource
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile

TP, TRAINER, SAMPLES = sys.argv[1:4]
NVTX_APP = sys.argv[4]
CUPTI_APP = sys.argv[5] if len(sys.argv) > 5 else None
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(*args):
    return subprocess.run([TP, *args], capture_output=True, text=True)


def sanitizer_build(r):
    return r.returncode != 0 and "ASan runtime does not come first" in r.stderr


# The nsys tables and columns the queries below (and typical user SQL) rely on.
NSYS_COLUMNS = {
    "StringIds": ["id", "value"],
    "ThreadNames": ["nameId", "priority", "globalTid"],
    "TARGET_INFO_GPU": ["vmId", "id", "name", "totalMemory", "smCount", "computeMajor",
                        "computeMinor"],
    "CUPTI_ACTIVITY_KIND_KERNEL": ["start", "end", "deviceId", "contextId", "streamId",
                                   "correlationId", "globalPid", "demangledName", "shortName",
                                   "mangledName", "registersPerThread", "gridX", "gridY",
                                   "gridZ", "blockX", "blockY", "blockZ", "staticSharedMemory",
                                   "dynamicSharedMemory"],
    "CUPTI_ACTIVITY_KIND_MEMCPY": ["start", "end", "deviceId", "contextId", "streamId",
                                   "correlationId", "globalPid", "bytes", "copyKind", "srcKind",
                                   "dstKind"],
    "CUPTI_ACTIVITY_KIND_MEMSET": ["start", "end", "deviceId", "streamId", "correlationId",
                                   "globalPid", "value", "bytes", "memKind"],
    "CUPTI_ACTIVITY_KIND_RUNTIME": ["start", "end", "eventClass", "globalTid", "correlationId",
                                    "nameId", "returnValue", "callchainId"],
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": ["start", "end", "deviceId", "contextId", "streamId",
                                            "correlationId", "globalPid", "syncType", "eventId"],
    "NVTX_EVENTS": ["start", "end", "eventType", "rangeId", "category", "color", "text",
                    "globalTid", "endGlobalTid", "textId", "domainId"],
    "ENUM_CUDA_MEMCPY_OPER": ["id", "name", "label"],
    "ENUM_CUDA_MEM_KIND": ["id", "name", "label"],
    "ENUM_CUPTI_SYNC_TYPE": ["id", "name", "label"],
    "ENUM_NSYS_EVENT_TYPE": ["id", "name", "label"],
}

TOP_KERNELS = """
    SELECT s.value AS name, COUNT(*) AS calls, SUM(k.end - k.start) AS total_ns
    FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
    JOIN StringIds AS s ON s.id = k.{col}
    GROUP BY s.value ORDER BY total_ns DESC"""

NVTX_SUMMARY = """
    SELECT COALESCE(e.text, s.value) AS name, COALESCE(d.text, '') AS domain,
           COUNT(*) AS instances, SUM(e.end - e.start) AS total_ns
    FROM NVTX_EVENTS AS e
    JOIN ENUM_NSYS_EVENT_TYPE AS t ON t.id = e.eventType
    LEFT JOIN StringIds AS s ON s.id = e.textId
    LEFT JOIN NVTX_EVENTS AS d ON d.eventType = 75 AND d.domainId = e.domainId
         AND d.globalTid / 0x1000000 = e.globalTid / 0x1000000
    WHERE t.name IN ('NvtxPushPopRange', 'NvtxStartEndRange')
    GROUP BY 1, 2"""

MEMCPY_BY_KIND = """
    SELECT o.name, k.label, COUNT(*), SUM(m.bytes), SUM(m.end - m.start)
    FROM CUPTI_ACTIVITY_KIND_MEMCPY AS m
    JOIN ENUM_CUDA_MEMCPY_OPER AS o ON o.id = m.copyKind
    JOIN ENUM_CUDA_MEM_KIND AS k ON k.id = m.srcKind
    GROUP BY m.copyKind, m.srcKind"""

MEMSET_BY_KIND = """
    SELECT k.label, COUNT(*), SUM(m.bytes), SUM(m.end - m.start)
    FROM CUPTI_ACTIVITY_KIND_MEMSET AS m JOIN ENUM_CUDA_MEM_KIND AS k ON k.id = m.memKind
    GROUP BY m.memKind"""

RUNTIME_SUMMARY = """
    SELECT s.value AS name, COUNT(*), SUM(r.end - r.start)
    FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r JOIN StringIds AS s ON s.id = r.nameId
    GROUP BY r.nameId"""

# nsys's "rename CUDA kernels with NVTX": each GPU op under the innermost push/pop range open on
# the launching thread when its launch call started; GPU ops and time per range. Written so it
# is well defined: of two ranges that start at the same nanosecond the shorter is the inner
# one, and an op whose launch call was dropped (a full ring under load) stays, with no range,
# as the report's unattributed ops do, instead of vanishing in an inner join.
GPU_BY_RANGE = """
    WITH ops AS (
        SELECT correlationId, end - start AS dur FROM CUPTI_ACTIVITY_KIND_KERNEL
        UNION ALL SELECT correlationId, end - start FROM CUPTI_ACTIVITY_KIND_MEMCPY
        UNION ALL SELECT correlationId, end - start FROM CUPTI_ACTIVITY_KIND_MEMSET),
    launches AS (
        SELECT r.start, r.globalTid, o.dur FROM ops AS o
        LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r ON r.correlationId = o.correlationId),
    named AS (
        SELECT l.dur, (SELECT COALESCE(e.text, s.value) FROM NVTX_EVENTS AS e
                       LEFT JOIN StringIds AS s ON s.id = e.textId
                       WHERE e.eventType = 59 AND e.globalTid = l.globalTid
                         AND e.start <= l.start AND e.end > l.start
                       ORDER BY e.start DESC, e.end ASC LIMIT 1) AS range
        FROM launches AS l)
    SELECT range, COUNT(*), SUM(dur) FROM named GROUP BY range"""

# nsys's documented example: each GPU op with the API call that launched it.
GPU_OPS_WITH_LAUNCH = """
    SELECT COUNT(*), COUNT(r.correlationId) FROM (
        SELECT correlationId, globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL
        UNION ALL SELECT correlationId, globalPid FROM CUPTI_ACTIVITY_KIND_MEMCPY
        UNION ALL SELECT correlationId, globalPid FROM CUPTI_ACTIVITY_KIND_MEMSET) AS g
    LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r ON r.correlationId = g.correlationId"""


def report(trace):
    r = run("report", "--format", "json", trace)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["ranks"][0]


def export(trace, out, *extra):
    r = run("export", trace, "--format", "sqlite", "-o", out, *extra)
    check(r.returncode == 0, f"{trace}: export {' '.join(extra)}: {r.stderr.strip()}")
    return sqlite3.connect(out)


def check_schema(label, db):
    for table, cols in NSYS_COLUMNS.items():
        have = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
        missing = [c for c in cols if c not in have]
        check(have and not missing, f"{label}: {table} has nsys's columns (missing {missing})")


def check_kernels(label, db, rep):
    want = {k["name"]: (k["count"], k["sum_ns"]) for k in rep["kernels"]
            if not k["name"].startswith(("Memcpy", "Memset"))}  # the report lists copies too
    rows = db.execute(TOP_KERNELS.format(col="demangledName")).fetchall()
    check({n: (c, t) for n, c, t in rows} == want,
          f"{label}: top kernels by demangledName = the report's kernels ({len(want)} names)")
    check([r[2] for r in rows] == sorted((r[2] for r in rows), reverse=True),
          f"{label}: top kernels come by total time")
    short = db.execute(TOP_KERNELS.format(col="shortName")).fetchall()
    check(sum(r[1] for r in short) == sum(c for c, _ in want.values())
          and sum(r[2] for r in short) == sum(t for _, t in want.values()),
          f"{label}: kernels by shortName add up to the report's")
    # The trainer's kernels are plain C names: their short name is the name itself.
    plain = [n for n in want if n.isidentifier() and not n.startswith("_Z")]  # not mangled
    check(all(n in {r[0] for r in short} for n in plain), f"{label}: shortName of plain names")


def check_ranges(label, db, rep):
    want = {(r["name"], r["domain"]): (r["count"], r["total_ns"]) for r in rep["ranges"]}
    got = {(n, d): (c, t) for n, d, c, t in db.execute(NVTX_SUMMARY)}
    check(got == want and want, f"{label}: NVTX range summary = the report's ranges ({len(want)})")
    got = {n: (c, d) for n, c, d in db.execute(GPU_BY_RANGE)}
    want = {r["name"]: (r["gpu_ops"], r["gpu_ns"]) for r in rep["ranges"] if r["gpu_ops"]}
    un = rep["ranges_unattributed"]
    if un["gpu_ops"]:
        want[None] = (un["gpu_ops"], un["gpu_ns"])
    check(got == want, f"{label}: GPU ops and time by innermost NVTX range = the report's")
    if got != want:
        for k in sorted(set(got) | set(want), key=str):
            if got.get(k) != want.get(k):
                print(f"     {k!r}: sql {got.get(k)}, report {want.get(k)}")
    want = {(m["name"], m["domain"]): m["count"] for m in rep["marks"]}
    got = {(n, d): c for n, d, c, _ in db.execute(
        NVTX_SUMMARY.replace("('NvtxPushPopRange', 'NvtxStartEndRange')", "('NvtxMark')"))}
    check(got == want, f"{label}: NVTX marks by text = the report's marks ({len(want)})")


def check_copies(label, db, rep):
    want = collections.Counter()
    for c in rep["copies"]:
        want[(c["kind"].lower(), c["src"])] = (c["count"], c["bytes"], c["dur_ns"])
    got = {}
    for name, src, n, b, ns in db.execute(MEMCPY_BY_KIND):
        got[(name.rsplit("_", 1)[1].lower(), src.lower())] = (n, b, ns)  # CUDA_MEMCPY_KIND_HTOD
    for src, n, b, ns in db.execute(MEMSET_BY_KIND):
        got[("memset", src.lower())] = (n, b, ns)
    check(got == dict(want), f"{label}: memcpy by copyKind + memsets = the report's copies "
          f"({got} vs {dict(want)})")
    labels = {r[0] for r in db.execute(
        "SELECT '[CUDA memcpy ' || o.label || ']' FROM CUPTI_ACTIVITY_KIND_MEMCPY m "
        "JOIN ENUM_CUDA_MEMCPY_OPER o ON o.id = m.copyKind")}
    check(all(lab.startswith("[CUDA memcpy ") and "-to-" in lab for lab in labels),
          f"{label}: nsys stats' memcpy names {sorted(labels)}")


def check_runtime(label, db, own, info, pid):
    got = {n: (c, t) for n, c, t in db.execute(RUNTIME_SUMMARY)}
    # by the names as recorded: nsys keeps CUPTI's spelling ("cudaLaunchKernel_v7000"), where
    # api_named shows Kineto's (strings.display)
    want = {n: (c, t) for n, c, t in own.execute(
        "SELECT s.text, COUNT(*), SUM(a.end - a.start) FROM api a LEFT JOIN strings s "
        "ON s.id = a.name_id AND s.pid = a.pid GROUP BY s.text")}
    check(got == want and sum(c for c, _ in got.values()) == info.get("API", 0),
          f"{label}: runtime API summary = trainprof's api table ({len(got)} functions)")
    classes = collections.Counter(dict(db.execute(
        "SELECT e.name, COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
        "JOIN ENUM_NSYS_EVENT_CLASS e ON e.id = r.eventClass GROUP BY 1")))
    kinds = collections.Counter(dict(own.execute("SELECT kind, COUNT(*) FROM api GROUP BY 1")))
    check(classes["TRACE_PROCESS_EVENT_CUDA_DRIVER"] == kinds["driver"]
          and classes["TRACE_PROCESS_EVENT_CUDA_RUNTIME"] == kinds["runtime"] + kinds["device"],
          f"{label}: eventClass {dict(classes)} for the calls' kinds {dict(kinds)}")
    n, joined = db.execute(GPU_OPS_WITH_LAUNCH).fetchone()
    want_n = sum(info.get(k, 0) for k in ("KERNEL", "MEMCPY", "MEMSET"))
    check(n == want_n and joined == n, f"{label}: {joined} of {n} GPU ops join their launch call")
    pids = {r[0] for r in db.execute("SELECT DISTINCT globalTid / 0x1000000 % 0x1000000 "
                                     "FROM CUPTI_ACTIVITY_KIND_RUNTIME")}
    gpids = {r[0] for r in db.execute("SELECT DISTINCT globalPid >> 24 "
                                      "FROM CUPTI_ACTIVITY_KIND_KERNEL")}
    check(pids <= {pid} and gpids <= {pid} and (pids or not info.get("API")),
          f"{label}: globalTid/globalPid decode to pid {pid}")
    tids = {r[0] for r in own.execute("SELECT DISTINCT tid FROM api")}
    got_tids = {r[0] for r in db.execute("SELECT DISTINCT globalTid % 0x1000000 "
                                         "FROM CUPTI_ACTIVITY_KIND_RUNTIME")}
    check(got_tids == tids, f"{label}: globalTid decodes to the calling threads")
    named = {r[0] for r in own.execute("SELECT tid FROM threads WHERE name IS NOT NULL")}
    got_named = {r[0] for r in db.execute(
        "SELECT t.globalTid % 0x1000000 FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId")}
    check(got_named == named, f"{label}: ThreadNames names the named threads")


def check_chains(label, db, own):
    """nsys's "CUDA calls with backtraces": each call's CUDA_CALLCHAINS frames are its stack,
    the symbolized ones named as trainprof's frames table names them."""
    own_api = {(s, t): st for s, t, st in own.execute(
        "SELECT start, tid, stack_id FROM api WHERE stack_id != 0")}
    rows = db.execute("SELECT r.start, r.globalTid % 0x1000000, r.callchainId "
                      "FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r JOIN StringIds AS s ON s.id = r.nameId "
                      "WHERE r.callchainId IS NOT NULL").fetchall()
    check(len(rows) == len(own_api) and all((s, t) in own_api for s, t, _ in rows),
          f"{label}: {len(rows)} calls with a callchainId, {len(own_api)} with a stack")
    bad, resolved = [], 0
    for s, t, chain in rows:
        stack = own_api.get((s, t))
        depth = own.execute("SELECT COUNT(*) FROM stacks WHERE stack_id = ?", (stack,)).fetchone()
        got_depth = db.execute("SELECT COUNT(*) FROM CUDA_CALLCHAINS WHERE id = ?",
                               (chain,)).fetchone()
        want = set(own.execute("SELECT depth, function FROM frames WHERE stack_id = ? "
                               "AND inline_depth = 0 AND symbols = 'ok'", (stack,)))
        got = set(db.execute("SELECT c.stackDepth, s.value FROM CUDA_CALLCHAINS AS c "
                             "JOIN StringIds AS s ON s.id = c.symbol WHERE c.id = ? "
                             "AND c.unresolved = 0 AND c.originalIP IS NOT NULL", (chain,)))
        resolved += len(got)
        if depth != got_depth or got != want:
            bad.append((s, t))
    check(not bad, f"{label}: call chains = trainprof's stacks and frames ({len(bad)} differ)")
    return resolved


def check_rest(label, db, own, info):
    rows = db.execute("SELECT e.name, COUNT(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION s "
                      "JOIN ENUM_CUPTI_SYNC_TYPE e ON e.id = s.syncType GROUP BY 1").fetchall()
    check(sum(n for _, n in rows) == info.get("SYNC", 0), f"{label}: syncs by type {rows}")
    n = db.execute("SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType = 34").fetchone()[0]
    check(n == info.get("NVTX_MARK", 0), f"{label}: {n} marks")
    want = {r[0] for r in own.execute("SELECT name FROM domains")}
    got = [r[0] for r in db.execute("SELECT text FROM NVTX_EVENTS WHERE eventType = 75")]
    check(sorted(got) == sorted(want), f"{label}: one NvtxDomainCreate per domain {got}")
    want = {r[0] for r in own.execute("SELECT DISTINCT category FROM nvtx_ranges "
                                      "WHERE category != 0")}
    got = {r[0] for r in db.execute("SELECT category FROM NVTX_EVENTS WHERE eventType = 33")}
    check(want <= got, f"{label}: NvtxCategory names the categories used {sorted(want)}")
    devs = {r[0] for r in db.execute("SELECT DISTINCT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL")}
    gpus = {r[0] for r in db.execute("SELECT id FROM TARGET_INFO_GPU")}
    check(devs <= gpus, f"{label}: TARGET_INFO_GPU lists the kernels' devices {devs}")
    n = db.execute("SELECT COUNT(*) FROM StringIds WHERE value IS NULL").fetchone()[0]
    dup = db.execute("SELECT COUNT(*) - COUNT(DISTINCT value) FROM StringIds").fetchone()[0]
    check(n == 0 and dup == 0, f"{label}: StringIds: {n} NULL, {dup} duplicates")
    bad = db.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE NOT EXISTS "
                     "(SELECT 1 FROM StringIds s WHERE s.id = k.shortName)").fetchone()[0]
    check(bad == 0, f"{label}: every shortName is a StringIds id")
    if info.get("ENV"):  # nsys-recipes' "SELECT value ... WHERE name = 'Hostname'"
        host = db.execute("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'")
        want = own.execute("SELECT host FROM process").fetchone()
        check(host.fetchall() == [want], f"{label}: TARGET_INFO_SYSTEM_ENV Hostname {want}")
    span = db.execute("SELECT startTime, stopTime, duration FROM ANALYSIS_DETAILS").fetchone()
    first = db.execute("SELECT MIN(start) FROM (SELECT start FROM CUPTI_ACTIVITY_KIND_RUNTIME "
                       "UNION ALL SELECT start FROM NVTX_EVENTS)").fetchone()[0]
    check(span and span[2] == span[1] - span[0] and span[0] <= first < span[1],
          f"{label}: ANALYSIS_DETAILS spans the trace {span}")


def check_trace(label, trace, tmp):
    base = os.path.join(tmp, label)
    db = export(trace, base + ".nsys.sqlite", "--schema", "nsys")
    own = export(trace, base + ".sqlite")
    rep = report(trace)
    info = json.loads(run("info", "--json", trace).stdout)["records"]
    pid = own.execute("SELECT pid FROM process").fetchone()[0]
    check_schema(label, db)
    check_kernels(label, db, rep)
    check_ranges(label, db, rep)
    check_copies(label, db, rep)
    check_runtime(label, db, own, info, pid)
    check_rest(label, db, own, info)
    resolved = check_chains(label, db, own)
    if label == "fresh":  # recorded here: --stacks api, the trainer binary at hand
        check(resolved > 0, f"{label}: {resolved} call-chain frames symbolized")
    tables = {r[0] for r in own.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    check("kernels" in tables and "CUPTI_ACTIVITY_KIND_KERNEL" not in tables,
          f"{label}: the default schema is still trainprof's")


def small_files():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() then fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))


def bad_input(tmp, good):
    out = os.path.join(tmp, "bad.sqlite")
    for args, rc, what in (
            (["--format", "chrome", "--schema", "nsys"], 2, "--schema takes"),
            (["--format", "sqlite", "--schema", "nvprof"], 2, "--schema takes"),
            (["--format", "perfetto", "--schema=nsys"], 2, "--schema takes"),
            (["--format", "sqlite", "--schema"], 2, "unknown or incomplete option")):
        r = run("export", good, "-o", out, *args)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == rc and what in lines[0] and not os.path.exists(out),
              f"{args}: exit {r.returncode}, {lines[:1]}")
    junk = os.path.join(tmp, "junk.tprof")
    open(junk, "w").write("this is not a trace\n" * 10)
    r = run("export", junk, "--format", "sqlite", "--schema", "nsys", "-o", out)
    check(r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1
          and "not a trainprof trace" in r.stderr and not os.path.exists(out),
          f"junk: {r.returncode} {r.stderr.strip()}")
    r = run("export", good, "--format", "sqlite", "--schema", "nsys", "-o", "/nonexistent/x.sqlite")
    check(r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1,
          f"unwritable: {r.returncode} {r.stderr.strip()}")
    big = os.path.join(tmp, "big.sqlite")  # a write that fails midway (EFBIG): nothing left
    r = subprocess.run([TP, "export", good, "--format", "sqlite", "--schema", "nsys", "-o", big],
                       capture_output=True, text=True, preexec_fn=small_files)
    check(r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and big in r.stderr
          and not os.path.exists(big), f"EFBIG: {r.returncode} {r.stderr.strip()}")
    if os.path.exists("/dev/full") and stat.S_ISCHR(os.stat("/dev/full").st_mode):
        r = run("export", good, "--format", "sqlite", "--schema", "nsys", "-o", "/dev/full")
        check(r.returncode == 1 and "/dev/full" in r.stderr
              and stat.S_ISCHR(os.stat("/dev/full").st_mode), f"/dev/full: {r.stderr.strip()}")
    mine = os.path.join(tmp, "explicit.sqlite")
    r = run("export", good, "--format", "sqlite", "--schema", "trainprof", "-o", mine)
    check(r.returncode == 0 and sqlite3.connect(mine).execute(
        "SELECT COUNT(*) FROM kernels").fetchone()[0] > 0, "--schema trainprof: trainprof's tables")
    r = run("export", "--help")
    check(r.returncode == 0 and "--schema trainprof|nsys" in r.stdout, "usage names --schema")


def main():
    with tempfile.TemporaryDirectory(prefix="tp-nsys-") as tmp:
        traces = sorted(os.path.join(SAMPLES, f) for f in os.listdir(SAMPLES) if f.endswith(".tprof"))
        fresh = os.path.join(tmp, "fresh.tprof")
        r = run("record", "-o", fresh, "--", TRAINER, "--device", "cpu", "--scenario", "healthy",
                "--steps", "12")
        if sanitizer_build(r):
            print("note: an ASan build cannot record (the collector is preloaded); samples only")
        else:
            check(r.returncode == 0, f"record failed: {r.stderr}")
            traces.append(fresh)
        nvtx = os.path.join(tmp, "nvtx.tprof")
        r = run("record", "-o", nvtx, "--", NVTX_APP)
        if not sanitizer_build(r):
            check(r.returncode == 0, f"nvtx_app record failed: {r.stderr}")
            traces.append(nvtx)
        if CUPTI_APP:  # CUDA runtime + driver calls through the CUPTI stand-in
            cuda = os.path.join(tmp, "cupti.tprof")
            r = run("record", "-o", cuda, "--", CUPTI_APP, "basic")
            if not sanitizer_build(r):
                check(r.returncode == 0, f"cupti_app record failed: {r.stderr}")
                traces.append(cuda)
        for t in traces:
            check_trace(os.path.basename(t).replace(".tprof", ""), t, tmp)
        bad_input(tmp, traces[0])
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
