#!/usr/bin/env python3
"""`trainprof merge`: the cross-rank section from per-rank `report --format json` files.

usage: test_merge.py TRAINPROF PEER_DIR
(a) a synthetic 4-rank job (PyTorch-profiler traces written here, exact times, memory
    events): rank 2 computes 3x longer (straggler, collective-wait), rank 3 holds 1.5x the
    device memory (memory-imbalance). The map step (`report --format json` of each rank's file
    alone) then the merge give the SAME cross_rank object as `report` on the whole set, and the
    same text section; the findings name exactly ranks 2 and 3;
(b) the peer set param_dlrm_8rank (skipped without ../shared, failed under CI=true): the same
    equality, rank files reported one by one;
(c) 64 synthetic ranks from a generator with injected stragglers and memory imbalance: merge
    names exactly those ranks, a healthy 64-rank job gives no finding, and the merge runs under
    a 256 MiB address-space limit with ranks given in any order (structure, never timing);
(d) bad input: not JSON, not a report, a trace, another schema version, a report without the
    rows, a field of the wrong type (the sampled ranks' optional ones too), an impossible
    demand, a rank twice, reports of different modes -> one line on stderr, exit 1."""
import json
import os
import random
import resource
import subprocess
import sys
import tempfile

TP, PEER = sys.argv[1:3]
failures = []
MIB = 1 << 20


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def trace(k, world, step_us, comp_us, nccl_us, mem_mib):
    """One rank: 6 steps of `step_us`, a compute kernel of `comp_us`, an all-reduce of
    `nccl_us` after it, and a block of `mem_mib` MiB allocated and freed in every step."""
    ev, t, total = [], 1000.0, 0
    for i in range(6):
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % i, "pid": 1,
                   "tid": 1, "ts": t, "dur": step_us})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                   "tid": 1, "ts": t + 1, "dur": 5, "args": {"correlation": 2 * i + 1}})
        ev.append({"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7,
                   "ts": t + 10, "dur": comp_us,
                   "args": {"stream": 7, "device": 0, "correlation": 2 * i + 1}})
        if nccl_us:
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                       "tid": 1, "ts": t + 6, "dur": 5, "args": {"correlation": 2 * i + 2}})
            ev.append({"ph": "X", "cat": "kernel",
                       "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0, "tid": 8,
                       "ts": t + 20 + comp_us, "dur": nccl_us,
                       "args": {"stream": 8, "device": 0, "correlation": 2 * i + 2}})
        for sign, at in ((1, t + 2), (-1, t + step_us - 2)):
            total += sign * mem_mib * MIB
            ev.append({"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]",
                       "pid": 1, "tid": 1, "ts": at,
                       "args": {"Device Type": 1, "Device Id": 0, "Addr": 1 << 32,
                                "Bytes": sign * mem_mib * MIB, "Total Allocated": total,
                                "Total Reserved": 2 * mem_mib * MIB}})
        t += step_us + 10
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "H200"}],
            "distributedInfo": {"backend": "nccl", "rank": k, "world_size": world},
            "traceEvents": ev}


def run(*args, **kw):
    return subprocess.run([TP] + list(args), capture_output=True, text=True, **kw)


def write_job(d, specs):
    os.mkdir(d)
    for k, spec in enumerate(specs):
        with open(os.path.join(d, "rank%d.json" % k), "w") as f:
            json.dump(trace(k, len(specs), *spec), f)


def map_step(files, out_dir):
    """`report --format json` of each file alone, as each node would run it."""
    os.makedirs(out_dir, exist_ok=True)
    outs = []
    for i, path in enumerate(files):
        out = os.path.join(out_dir, "r%d.json" % i)
        r = run("report", "--format", "json", "-o", out, path)
        assert r.returncode == 0, r.stderr
        outs.append(out)
    return outs


def text_section(s):
    """The `Ranks` table and `Cross-rank findings` of a text report or merge."""
    lines = s.splitlines()
    a = lines.index("Ranks")
    b = lines.index("Cross-rank findings")
    end = lines.index("", b)
    return lines[a:end]


def same_as_report(name, trace_files, whole, tmp):
    rep = run("report", "--format", "json", *whole)
    assert rep.returncode == 0, rep.stderr
    want = json.loads(rep.stdout)["cross_rank"]
    outs = map_step(trace_files, os.path.join(tmp, name + "-map"))
    m = run("merge", "--format", "json", *outs)
    check(m.returncode == 0, "%s: merge exits 0 (%s)" % (name, m.stderr.strip()))
    got = json.loads(m.stdout) if m.returncode == 0 else {}
    check(got.get("schema") == "trainprof-merge/v1" and got.get("n_ranks") == len(want["ranks"])
          and got.get("n_files") == len(outs), "%s: merge header" % name)
    check(got.get("cross_rank") == want, "%s: merge's cross_rank == report's on the whole set"
          % name)
    # every figure of the section comes from the rows the map step wrote
    rows = {}
    for o in outs:
        for rk in json.load(open(o))["ranks"]:
            rows[rk["rank"]] = rk["cross_rank_row"]
    check(all(rows[r["rank"]][k] == r[k] for r in want["ranks"] for k in r
              if k != "own_p50_ns"), "%s: the report's rows are the per-rank cross_rank_rows"
          % name)
    t_rep = run("report", *whole)
    t_mrg = run("merge", *outs)
    check(text_section(t_rep.stdout) == text_section(t_mrg.stdout),
          "%s: the text sections are the same" % name)
    return want


def named(x):
    return sorted((f["id"], f["rank"]) for f in x["findings"])


with tempfile.TemporaryDirectory() as tmp:
    # (a) rank 2: 3 ms of compute (the others 1 ms, waiting 2.2 ms in the all-reduce); rank 3:
    # 96 MiB at its peak, the others 64 MiB
    d = os.path.join(tmp, "job4")
    ok = (3300, 1000, 2200, 64)
    write_job(d, [ok, ok, (3300, 3000, 200, 64), (3300, 1000, 2200, 96)])
    files = [os.path.join(d, "rank%d.json" % k) for k in range(4)]
    x = same_as_report("4 ranks", files, [d], tmp)
    check(named(x) == [("collective-wait", 2), ("memory-imbalance", 3), ("straggler", 2)],
          "4 ranks: straggler and collective-wait name rank 2, memory-imbalance rank 3 (%s)"
          % named(x))
    rows = {r["rank"]: r for r in x["ranks"]}
    check(rows[3]["mem_peak_bytes"] == 96 * MIB and rows[0]["mem_peak_bytes"] == 64 * MIB and
          x["median_mem_peak_bytes"] == 64 * MIB, "4 ranks: memory peaks 96 MiB and 64 MiB")
    check(rows[2]["exposed_comm_ns"] == 6 * 200000 and
          rows[0]["overlapped_comm_ns"] == 0, "4 ranks: exposed and overlapped communication")
    mem = [f for f in x["findings"] if f["id"] == "memory-imbalance"][0]
    check("1.50x" in mem["title"] and "96.00 MiB" in mem["evidence"] and
          abs(mem["severity"] - 1 / 3) < 1e-9 and "shard" in mem["advice"],
          "4 ranks: memory-imbalance title, evidence, severity and fix (%s)" % mem)

    # (c) 64 ranks: stragglers 5 and 40, memory imbalance 17 and 63 (and 40 is both)
    random.seed(14)
    slow, heavy = {5, 40}, {17, 40, 63}
    specs = []
    for k in range(64):
        comp = 3000 if k in slow else 1000 + random.randrange(0, 60)  # < 6 % apart
        specs.append((3300, comp, 3200 - comp, (64 + random.randrange(0, 4)) * (1.5 if k in heavy
                                                                                  else 1)))
    d = os.path.join(tmp, "job64")
    write_job(d, [(s, c, n, int(m)) for s, c, n, m in specs])
    outs = map_step([os.path.join(d, "rank%d.json" % k) for k in range(64)],
                    os.path.join(tmp, "job64-map"))
    random.shuffle(outs)

    # bounded memory: the merge's own peak resident size (wait4: this child's alone), and an
    # address-space limit where the build allows one (ASan reserves terabytes of shadow)
    asan = b"__asan_init" in open(TP, "rb").read()

    def limited():
        if not asan:
            resource.setrlimit(resource.RLIMIT_AS, (256 * MIB, 256 * MIB))

    res = os.path.join(tmp, "merge64.json")
    with open(res, "w") as fo, open(res + ".err", "w") as fe:
        p = subprocess.Popen([TP, "merge", "--format", "json"] + outs, stdout=fo, stderr=fe,
                             preexec_fn=limited)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
    check(p.returncode == 0, "64 ranks: merge runs%s (%s)" % (
        "" if asan else " under 256 MiB of address space", open(res + ".err").read().strip()))
    check(usage.ru_maxrss * 1024 < 256 * MIB, "64 ranks: merge's peak RSS %d KiB < 256 MiB"
          % usage.ru_maxrss)
    x = json.load(open(res))["cross_rank"] if p.returncode == 0 else {"findings": [], "ranks": []}
    check([r["rank"] for r in x["ranks"]] == list(range(64)), "64 ranks: rows in rank order")
    by = {}
    for f in x["findings"]:
        by.setdefault(f["id"], set()).add(f["rank"])
    check(by.get("straggler") == slow, "64 ranks: straggler names exactly 5, 40 (%s)"
          % by.get("straggler"))
    check(by.get("memory-imbalance") == heavy, "64 ranks: memory-imbalance names exactly "
          "17, 40, 63 (%s)" % by.get("memory-imbalance"))
    cw = [f for f in x["findings"] if f["id"] == "collective-wait"]
    check(len(cw) == 1 and cw[0]["rank"] in slow, "64 ranks: collective-wait names a straggler")
    # the same job healthy: no finding
    d = os.path.join(tmp, "job64ok")
    write_job(d, [(s, 1000 + (k % 7) * 10, 2200, 64 + k % 3) for k, (s, c, n, mm)
                  in enumerate(specs)])
    outs = map_step([os.path.join(d, "rank%d.json" % k) for k in range(64)],
                    os.path.join(tmp, "job64ok-map"))
    m = run("merge", "--format", "json", *outs)
    x = json.loads(m.stdout)["cross_rank"]
    check(len(x["ranks"]) == 64 and x["findings"] == [],
          "64 healthy ranks: no finding (%s)" % named(x))
    m = run("merge", *outs)
    check("no straggler, no rank waiting on the others, no memory imbalance" in m.stdout,
          "64 healthy ranks: the text says so")

    # (d) bad input
    good = os.path.join(tmp, "4 ranks-map", "r0.json")
    rep = json.load(open(good))

    def bad(name, content, want, *extra):
        p = os.path.join(tmp, name)
        with open(p, "w") as f:
            f.write(content if isinstance(content, str) else json.dumps(content))
        r = run("merge", *(list(extra) + [p]))
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 1 and len(lines) == 1 and want in lines[0] and r.stdout == "",
              "bad input %s: one line, exit 1 (%d: %s)" % (name, r.returncode, r.stderr.strip()))

    bad("notjson.json", "{\"schema\": ", "not JSON")
    bad("other.json", {"schema": "something/v1", "ranks": []}, "not a trainprof report")
    bad("array.json", [1, 2], "not a trainprof report")
    bad("v2.json", dict(rep, schema="trainprof-report/v2"), "report schema trainprof-report/v2")
    old = json.loads(json.dumps(rep))
    del old["ranks"][0]["cross_rank_row"]
    bad("old.json", old, "has no cross_rank_row")
    typo = json.loads(json.dumps(rep))
    typo["ranks"][0]["cross_rank_row"]["comm_ns"] = "12"
    bad("typo.json", typo, "cross_rank_row.comm_ns")
    # the optional fields of sampled ranks: typed when present, possible values only
    for key, val, want in (("host", 5, "cross_rank_row.host is missing or not a string"),
                           ("cpu_demand", "2", "cross_rank_row.cpu_demand"),
                           ("host_wait_ns", 1.5, "cross_rank_row.host_wait_ns"),
                           ("cpu_demand", -1.0, "impossible values")):
        odd = json.loads(json.dumps(rep))
        odd["ranks"][0]["cross_rank_row"].update({"cpu_demand": 1.0, "cpus": 2.0, key: val})
        bad("odd-%s.json" % key, odd, want)
    bad("dup.json", rep, "rank 0 is also in", good)
    bad("hta.json", dict(rep, mode="hta"), "a hta report among native ones", good)
    bad("trace.json", trace(0, 1, 1000, 900, 0, 1), "a PyTorch-profiler trace, not a report")
    r = run("merge")
    check(r.returncode == 2 and "no report given" in r.stderr, "no argument: usage, exit 2")

# (b) the peer DLRM job
dlrm = os.path.join(PEER, "param_dlrm_8rank")
if not os.path.isdir(dlrm):
    if os.environ.get("CI") == "true":
        check(False, "peer traces missing under CI")
    else:
        print("skip: no peer traces")
else:
    with tempfile.TemporaryDirectory() as tmp:
        files = sorted(os.path.join(dlrm, f) for f in os.listdir(dlrm))
        x = same_as_report("dlrm", files, [dlrm], tmp)
        check(len(x["ranks"]) == 8, "dlrm: 8 ranks")
        check(("collective-wait", 7) in named(x), "dlrm: ranks wait in collectives for rank 7")

print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
