# bench_common.sh: what the report benchmarks (bench_report_*.sh) share, sourced by each:
# the trainprof of the build measured and, with BEFORE=OLD_BUILD_DIR, the other build's,
# run in the same rounds so a change is measured before and after in one invocation.

# bench_bins BUILD_DIR: sets bin (BUILD_DIR's trainprof) and before_bin (BEFORE's, or ""),
# exiting 2 with one line when either is missing.
bench_bins() {
    bin=$1/cli/trainprof
    [ -x "$bin" ] || { echo "no $bin (build the trainprof target)" >&2; exit 2; }
    before_bin=${BEFORE:+$BEFORE/cli/trainprof}
    [ -z "$before_bin" ] || [ -x "$before_bin" ] || { echo "no $before_bin" >&2; exit 2; }
}

# bench_gnu_time: exits 2 with one line unless GNU time is at /usr/bin/time (peak RSS, %M).
bench_gnu_time() {
    [ -x /usr/bin/time ] || { echo "needs GNU time (/usr/bin/time)" >&2; exit 2; }
}
