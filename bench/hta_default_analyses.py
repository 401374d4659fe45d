"""hta_default_analyses: HTA's "default analyses" over one trace set, for side-by-side timing.

Run with a Python that has HTA v0.6.1 installed (never a trainprof dependency):
    HTA_PYTHON SET_DIR
It does what ../shared/peer_traces/README.md section 2 lists for the `default` variant: one
TraceAnalysis(trace_dir=SET_DIR), then the temporal and idle-time breakdowns (with interval
stats), the kernel breakdown twice (default and unfolded), the launch stats, the memory
bandwidth and queue length summaries, the comm/comp overlap and the profiler steps. Plots
are off (visualize=False): HTA computes its frames without drawing them. An analysis that
raises (HTA's own asserts, e.g. tracelens_h100_qwen) is reported on stderr and the rest go
on, as when the reference answers were computed. Prints the rank count on stdout.
"""
import sys
import time

from hta.trace_analysis import TraceAnalysis


def main() -> int:
    t0 = time.monotonic()
    ta = TraceAnalysis(trace_dir=sys.argv[1])
    ranks = list(ta.t.traces.keys())
    calls = [
        ("temporal_breakdown", lambda: ta.get_temporal_breakdown(visualize=False)),
        ("idle_time_breakdown", lambda: ta.get_idle_time_breakdown(
            ranks=ranks, visualize=False, show_idle_interval_stats=True)),
        ("kernel_breakdown", lambda: ta.get_gpu_kernel_breakdown(visualize=False)),
        ("kernel_breakdown_all", lambda: ta.get_gpu_kernel_breakdown(
            visualize=False, duration_ratio=1.0, num_kernels=10**9)),
        ("launch_stats", lambda: ta.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)),
        ("memory_bw_summary", lambda: ta.get_memory_bw_summary(ranks=ranks)),
        ("queue_length_summary", lambda: ta.get_queue_length_summary(ranks=ranks)),
        ("comm_comp_overlap", lambda: ta.get_comm_comp_overlap(visualize=False)),
        ("profiler_steps", ta.get_profiler_steps),
    ]
    for name, call in calls:
        try:
            call()
        except Exception as exc:  # HTA's asserts on odd traces; the others still run
            print(f"hta: {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
    print(f"ranks {len(ranks)} wall {time.monotonic() - t0:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
