"""hta_expected: HTA v0.6.1's answers on one trace set, as a peer-trace-expected/v1 file.

Run with a Python that has HTA installed (never a trainprof dependency; Debian's pandas and
numpy, HTA from source at commit f4d0062c, as ../shared/peer_traces/README.md section 2 says):
    HTA_PYTHON bench/hta_expected.py SET_DIR OUT.json [SET_NAME]
SET_DIR holds the trace file(s) of one job (HTA's TraceAnalysis(trace_dir=...)). It writes the
schema of ../shared/peer_traces/README.md section 3 (what tests/analyzer/test_hta_compat.c
reads): the raw inventory of each file, then per variant what HTA kept and the answers of
its analyses, with the same calls and variants as the peer answers: `default`;
`include_last_step` when some file has >= 2 distinct ProfilerStep#N; `no_ns_rounding` when
some ts is fractional. Each variant runs in its own process, since HTA reads
HTA_DISABLE_NS_ROUNDING once. An analysis that raises is recorded under `errors` and the
others go on. On the 18 peer sets with answers it reproduces their `results` and `files`
(checked with HTA at f4d0062c; timings aside), but for `memcpy_stats` of hta_cpu_only: the
peer file's generator raised KeyError 'name' there, this one gives an empty table (a field
derived from HTA's frame, not an HTA call; test_hta_compat does not read it).
tests/analyzer/data/gpu-h200-torch-profiler.hta.json was written by it from
traces/samples/gpu-h200-torch-profiler.json.gz alone in a folder.
"""
import gzip
import hashlib
import json
import math
import os
import subprocess
import sys
import time
import traceback

import numpy as np

HTA_COMMIT = "f4d0062c382f42bd8a74838bcdad1916c7d5d2da"
KERNEL_CATS = ("kernel", "Kernel")
MEMCPY_CATS = ("gpu_memcpy", "Memcpy")
MEMSET_CATS = ("gpu_memset", "Memset")
RUNTIME_CATS = ("cuda_runtime", "cuda_driver", "Runtime")


def clean(o):
    """JSON-ready: numpy scalars to Python, NaN to None, keys to strings."""
    if isinstance(o, dict):
        return {str(k): clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [clean(v) for v in o]
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, (np.floating, float)):
        return None if math.isnan(float(o)) else float(o)
    if isinstance(o, np.bool_):
        return bool(o)
    return o


def counts(values):
    out = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def inventory(path):
    """The raw file, before HTA: (inventory dict, distinct ProfilerStep names, fractional ts)."""
    with open(path, "rb") as f:
        raw = f.read()
    gz = raw[:2] == b"\x1f\x8b"
    text = (gzip.decompress(raw) if gz else raw).decode("utf-8")
    d = json.loads(text)
    ev = d.get("traceEvents", [])
    steps = {e.get("name") for e in ev if str(e.get("name", "")).startswith("ProfilerStep#")}
    xs = [e for e in ev if "ts" in e]
    frac = any(isinstance(e["ts"], float) and e["ts"] != int(e["ts"]) for e in xs)
    di = d.get("distributedInfo") or {}
    of_cat = lambda cats: [e for e in ev if e.get("cat") in cats]
    pairs = {(str(e.get("pid")), str(e["args"]["stream"])) for e in
             of_cat(KERNEL_CATS + MEMCPY_CATS + MEMSET_CATS) if "stream" in e.get("args", {})}
    ts_min = min(e["ts"] for e in xs) if xs else None
    ts_max = max((e["ts"] + e["dur"] for e in xs if "dur" in e), default=None)
    return {
        "file": os.path.basename(path),
        "sha256": hashlib.sha256(raw).hexdigest(),
        "bytes_on_disk": len(raw),
        "bytes_uncompressed": len(text.encode()),
        "gzip": gz,
        "schemaVersion": d.get("schemaVersion"),
        "distributedInfo_rank": di.get("rank"),
        "distributedInfo_world_size": di.get("world_size"),
        "deviceProperties": len(d.get("deviceProperties", [])),
        "n_events": len(ev),
        "n_complete_X": sum(e.get("ph") == "X" for e in ev),
        "ph_counts": counts(e.get("ph") for e in ev),
        "cat_counts": {str(k): v for k, v in counts(e.get("cat") for e in ev).items()},
        "n_kernels": len(of_cat(KERNEL_CATS)),
        "n_memcpy": len(of_cat(MEMCPY_CATS)),
        "memcpy_by_name": counts(e.get("name") for e in of_cat(MEMCPY_CATS)),
        "n_memset": len(of_cat(MEMSET_CATS)),
        "n_memory_events": sum(e.get("name") == "[memory]" for e in ev),
        "n_runtime": len(of_cat(RUNTIME_CATS)),
        "runtime_by_name": counts(e.get("name") for e in of_cat(RUNTIME_CATS)),
        "n_profiler_steps": len(steps),
        "gpu_pid_stream_pairs": sorted(list(p) for p in pairs),
        "ts_min_us": ts_min,
        "ts_max_end_us": ts_max,
        "span_us": None if ts_max is None else ts_max - ts_min,
        "has_fractional_ts": frac,
    }, len(steps), frac


def timed(res, name, call):
    """call(), its wall time in res["timings_s"]; an exception goes to res["errors"], None."""
    t0 = time.monotonic()
    try:
        return call()
    except Exception as exc:  # HTA's own asserts on odd traces; the others still run
        res["errors"][name] = f"{type(exc).__name__}: {exc}"
        res["errors"][name + "_traceback"] = traceback.format_exc()
        return None
    finally:
        res["timings_s"][name] = round(time.monotonic() - t0, 4)


def dist(s):
    if len(s) == 0:
        return {"count": 0}
    a = s.to_numpy(dtype=float)
    return {"count": int(len(a)), "sum": a.sum(), "mean": a.mean(), "min": a.min(),
            "p50": np.percentile(a, 50), "p95": np.percentile(a, 95), "max": a.max()}


def describe_rows(df, prefix):
    """HTA's (rank, key) x (prefix, stat) describe() frame as rows of prefix_stat columns."""
    if df is None:
        return None
    df = df.copy()
    df.columns = [f"{prefix}_{c[1]}" if isinstance(c, tuple) else c for c in df.columns]
    return df.reset_index().to_dict("records")


def dataframe_info(t, sym):
    info = {}
    for r, df in t.traces.items():
        gpu = df[df["stream"].ne(-1)]
        info[r] = {
            "n_events": len(df),
            "n_gpu_events_stream_ne_-1": len(gpu),
            "gpu_cat_counts": gpu["cat"].map(lambda i: sym[i]).value_counts().to_dict(),
            "cat_counts": df["cat"].map(lambda i: sym[i]).value_counts().to_dict(),
            "streams": sorted(int(s) for s in gpu["stream"].unique()),
            "iterations": sorted(int(i) for i in df["iteration"].unique() if i == i and i != -1),
            "trace_duration_us": df["ts"].max() - df["ts"].min(),
            "device_type": t.meta_data[r].get("device_type"),
        }
    return info


def launch_stats(ls):
    out = {}
    for r, df in (ls or {}).items():
        cpu, gpu, delay = df["cpu_duration"], df["gpu_duration"], df["launch_delay"]
        out[r] = {
            "n_pairs": len(df),
            "cpu_duration_us": dist(cpu),
            "gpu_duration_us": dist(gpu),
            "launch_delay_us": dist(delay),
            "n_short_gpu_kernels": int(((cpu <= 50) & (gpu < cpu)).sum()),
            "n_runtime_outliers_gt_50us": int((cpu > 50).sum()),
            "n_launch_delay_outliers_gt_100us": int((delay > 100).sum()),
        }
    return out


def memcpy_stats(t, sym):
    ms = {}
    for r, df in t.traces.items():
        ms[r] = {}
        names = df["name"].map(lambda i: sym[i])
        cats = df["cat"].map(lambda i: sym[i])
        m = df[cats.isin(MEMCPY_CATS + MEMSET_CATS)]
        kind = names[m.index].map(lambda n: "Memset" if "Memset" in n else n[:11])
        for typ, g in m.groupby(kind):
            ms[r][typ] = {"count": len(g), "dur_sum_us": g["dur"].sum(),
                          "bytes_sum": g["bytes"].clip(lower=0).sum(),
                          "memory_bw_gbps_mean": g["memory_bw_gbps"].mean()}
    return ms


def kernel_counts(t, sym):
    """Invocations per (rank, name) among the events HTA's kernel breakdown sees."""
    out = {}
    for r, df in t.traces.items():
        names = df[df["stream"].ne(-1)]["name"].map(lambda i: sym[i])
        for n, c in names.value_counts().items():
            out[(r, n)] = c
    return out


def one_variant(set_dir, include_last):
    from hta.trace_analysis import TraceAnalysis

    res = {"include_last_profiler_step": include_last,
           "ns_rounding_disabled": os.environ.get("HTA_DISABLE_NS_ROUNDING") == "1",
           "timings_s": {}, "errors": {}}
    ta = timed(res, "load_traces",
               lambda: TraceAnalysis(trace_dir=set_dir, include_last_profiler_step=include_last))
    t = ta.t
    sym = t.symbol_table.get_sym_table()
    ranks = sorted(t.traces.keys())
    res["ranks"] = ranks
    res["rank_to_file"] = {r: os.path.basename(t.trace_files[r]) for r in ranks}
    res["hta_dataframe_info"] = dataframe_info(t, sym)
    res["profiler_steps"] = timed(res, "get_profiler_steps", ta.get_profiler_steps) or []

    tb = timed(res, "temporal_breakdown", lambda: ta.get_temporal_breakdown(visualize=False))
    res["temporal_breakdown"] = None if tb is None else tb.rename(columns={
        "idle_time(us)": "idle_time_us", "compute_time(us)": "compute_time_us",
        "non_compute_time(us)": "non_compute_time_us", "kernel_time(us)": "kernel_time_us",
    }).to_dict("records")

    it = timed(res, "idle_time_breakdown", lambda: ta.get_idle_time_breakdown(
        ranks=ranks, visualize=False, show_idle_interval_stats=True))
    res["idle_time_breakdown"] = None if it is None else it[0].rename(
        columns={"idle_time": "idle_time_us"}).to_dict("records")
    if it is not None:
        res["idle_interval_stats"] = it[1].reset_index().to_dict("records")

    us = {"sum (us)": "sum_us", "max (us)": "max_us", "min (us)": "min_us",
          "mean (us)": "mean_us"}
    kb = timed(res, "kernel_breakdown", lambda: ta.get_gpu_kernel_breakdown(visualize=False))
    if kb is not None:
        res["kernel_type_breakdown"] = kb[0].rename(columns={"sum": "sum_us"}).to_dict("records")
        res["kernel_breakdown_default_top"] = kb[1].rename(columns=us).to_dict("records")
    ka = timed(res, "kernel_breakdown_all", lambda: ta.get_gpu_kernel_breakdown(
        visualize=False, duration_ratio=1.0, num_kernels=10**9))
    if ka is not None:
        rows = ka[1].rename(columns=us).to_dict("records")
        n = kernel_counts(t, sym)
        for row in rows:
            row["count"] = n.get((row["rank"], row["name"]), 0)
        rows.sort(key=lambda x: (x["rank"], -x["sum_us"]))
        res["kernel_breakdown_all"] = rows

    res["cuda_kernel_launch_stats"] = launch_stats(timed(
        res, "cuda_kernel_launch_stats",
        lambda: ta.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)))
    res["memory_bw_summary"] = describe_rows(timed(
        res, "memory_bw_summary", lambda: ta.get_memory_bw_summary(ranks=ranks)),
        "memory_bw_gbps")
    res["memcpy_stats"] = timed(res, "memcpy_stats", lambda: memcpy_stats(t, sym))
    res["queue_length_summary"] = describe_rows(timed(
        res, "queue_length_summary", lambda: ta.get_queue_length_summary(ranks=ranks)),
        "queue_length")
    ov = timed(res, "comm_comp_overlap", lambda: ta.get_comm_comp_overlap(visualize=False))
    res["comm_comp_overlap"] = None if ov is None else ov.to_dict("records")
    return clean(res)


MARK = "\n@@hta_expected@@"  # HTA logs on stdout too; the answer follows this line


def run_variant(set_dir, include_last, no_ns_rounding):
    env = dict(os.environ)
    env.pop("HTA_DISABLE_NS_ROUNDING", None)
    if no_ns_rounding:
        env["HTA_DISABLE_NS_ROUNDING"] = "1"
    p = subprocess.run([sys.executable, __file__, "--variant", set_dir, str(int(include_last))],
                       env=env, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(p.stdout.split(MARK, 1)[1])


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--variant":
        sys.stdout.write(MARK + json.dumps(one_variant(sys.argv[2], sys.argv[3] == "1")))
        return 0
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    set_dir, out_path = sys.argv[1], sys.argv[2]
    name = sys.argv[3] if len(sys.argv) > 3 else os.path.basename(os.path.normpath(set_dir))
    files, nsteps, frac = [], 0, False
    for f in sorted(os.listdir(set_dir)):
        inv, s, fr = inventory(os.path.join(set_dir, f))
        files.append(inv)
        nsteps, frac = max(nsteps, s), frac or fr
    import pandas

    t0 = time.monotonic()
    results = {"default": run_variant(set_dir, False, False)}
    if nsteps >= 2:
        results["include_last_step"] = run_variant(set_dir, True, False)
    if frac:
        results["no_ns_rounding"] = run_variant(set_dir, False, True)
    doc = {
        "schema": "peer-trace-expected/v1",
        "trace_set": name,
        "files": clean(files),
        "tool": {"name": "HolisticTraceAnalysis", "version": "0.6.1",
                 "commit": os.environ.get("HTA_COMMIT", HTA_COMMIT),
                 "python": sys.version.split()[0], "pandas": pandas.__version__,
                 "numpy": np.__version__, "parser_backend": "json (HTA default)",
                 "generator": "bench/hta_expected.py"},
        "results": results,
        "total_wall_s": round(time.monotonic() - t0, 3),
    }
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
