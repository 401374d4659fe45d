# report_phases_gdb.py: where a `trainprof report` has its peak RSS, phase by phase, without
# touching the program: gdb stops at the entry of each phase's function, reads VmRSS, VmHWM,
# RssAnon and RssFile from /proc/PID/status and writes 5 to /proc/PID/clear_refs (which resets
# VmHWM), so each line's hwm is the high water of the phase that ended there.
#
#   gdb -q -batch -x bench/report_phases_gdb.py --args build/cli/trainprof report SET --compat hta \
#     2>&1 >/dev/null | grep '^PH'
#
# (the lines go to stderr: the report's own text, on stdout, would split them)
# TP_ANALYSIS_THREADS=1 (and TP_IMPORT_THREADS=1) give the phases in one order without overlap.
# Each breakpoint costs the process one copied page of text (~4 KiB of anon RSS each), and the
# file-backed part of the RSS depends on how the binary came into the page cache (compare
# builds written by the linker, not a copy against an original: docs/PERFORMANCE.md, Kineto
# report peak, fourth round). A function that is inlined everywhere gets no breakpoint.
import sys

import gdb

PHASES = [
    "read_stream", "pieces_free", "source_close", "malloc_trim", "tp_model_finish",
    "tp_report_write", "tp_an_view_build", "tp_an_temporal_run", "tp_an_idle_run",
    "tp_an_kernels_run", "tp_an_launch_run", "tp_an_queue_run", "tp_an_memory_run",
    "tp_an_overlap_run", "tp_an_nvtx_run", "tp_an_memuse_run", "tp_diagnose_run_with",
    "tp_an_cpuops_run", "tp_an_host_run", "text_rank_st", "json_rank_st", "tp_rank_analysis_free",
]
last = ["start"]


def mark(where):
    pid = gdb.selected_inferior().pid
    d = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                d[k] = int(v.split()[0]) / 1024.0
    with open("/proc/%d/clear_refs" % pid, "w") as f:
        f.write("5")
    sys.stderr.write("PH %-22s -> %-22s hwm %6.1f  rss %6.1f  anon %6.1f  file %5.1f MiB\n" %
                     (last[0], where, d["VmHWM"], d["VmRSS"], d["RssAnon"], d["RssFile"]))
    last[0] = where


class Phase(gdb.Breakpoint):
    def stop(self):
        mark(self.location)
        return False


gdb.execute("set pagination off")
gdb.execute("set breakpoint pending on")
for name in PHASES:
    Phase(name)
gdb.execute("catch syscall exit_group")
gdb.execute("run")
mark("exit")
