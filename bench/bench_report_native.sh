#!/bin/sh
# bench_report_native: `trainprof report TRACE` on a native .tprof, ROUNDS times, and with
# BEFORE set another build's trainprof in each round right after ours (ours, before, ours,
# before, ...), so both see the same machine load and a change is measured before and after
# in one invocation. Prints every run (GNU time: wall, user, sys, peak RSS, minor faults),
# then per build the median and range of wall and CPU (user+sys), the faults and the peak, and
# the records per second of wall (records as `trainprof info` counts them). Issue 13's goal:
# >= 10 M records/s of wall on a 20,000-step launch-bound recording (~9.8 M records):
#   build/cli/trainprof record -o lb20k.tprof -- build/trainer/trainprof-trainer \
#       --scenario launch-bound --steps 20000
# The load (`uptime`) is printed before and after: wall figures mean something only on a
# machine with nothing else running, and only as ratios within one invocation (the same
# binary's wall moved 2x between hours on one VM host, docs/PERFORMANCE.md).
#
# usage: [BEFORE=OLD_BUILD_DIR] bench/bench_report_native.sh BUILD_DIR TRACE [ROUNDS]
#        (ROUNDS default 6; progress lines are switched off so stderr stays empty)
set -eu
[ $# -ge 2 ] || { sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
build=$1
trace=$2
rounds=${3:-6}
. "$(dirname "$0")/bench_common.sh"
bench_bins "$build"
[ -r "$trace" ] || { echo "cannot read $trace" >&2; exit 2; }
bench_gnu_time
records=$("$bin" info "$trace" | awk '$1 == "records:" { print $2 }')
[ -n "$records" ] || { echo "$bin info $trace: no record count" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# one TAG BIN: runs BIN report TRACE once, appends "wall user sys kib faults" to $tmp/TAG.
one() {
    if ! TRAINPROF_PROGRESS_AFTER_MS=100000000 /usr/bin/time -f '%e %U %S %M %R' -o "$tmp/t" \
        "$2" report "$trace" >/dev/null 2>"$tmp/err"; then
        echo "$1: report failed: $(tail -1 "$tmp/err")" >&2
        exit 1
    fi
    cat "$tmp/t" >>"$tmp/$1"
    awk -v t="$1" '{ printf "%-7s %6.2f s wall %6.2f u %5.2f s %8.1f MB %8d faults\n",
                     t, $1, $2, $3, $4 / 1024, $5 }' "$tmp/t"
}

# summary TAG: medians and ranges over the runs in $tmp/TAG.
summary() {
    awk -v t="$1" -v rec="$records" '
        { w[NR] = $1; c[NR] = $2 + $3; m[NR] = $4; f[NR] = $5 }
        function med(a, n,   i, j, x, b) { for (i = 1; i <= n; i++) b[i] = a[i]
            for (i = 2; i <= n; i++) { x = b[i]; for (j = i - 1; j > 0 && b[j] > x; j--)
                b[j + 1] = b[j]; b[j + 1] = x }
            return n % 2 ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2 }
        function lo(a, n,   i, x) { x = a[1]; for (i = 2; i <= n; i++) if (a[i] < x) x = a[i]; return x }
        function hi(a, n,   i, x) { x = a[1]; for (i = 2; i <= n; i++) if (a[i] > x) x = a[i]; return x }
        END { n = NR; mw = med(w, n)
            printf "%-7s wall %.2f-%.2f s (median %.3f), cpu %.2f-%.2f s (median %.3f), " \
                   "%.0f-%.0f faults, peak %.0f-%.0f MB, %.2f M records/s (median wall)\n",
                   t, lo(w, n), hi(w, n), mw, lo(c, n), hi(c, n), med(c, n),
                   lo(f, n), hi(f, n), lo(m, n) / 1024, hi(m, n) / 1024, rec / mw / 1e6 }' "$tmp/$1"
}

echo "load before: $(uptime)"
echo "trace: $trace ($records records); $rounds rounds${before_bin:+, ours then before}"
i=0
while [ $i -lt "$rounds" ]; do
    one ours "$bin"
    [ -z "$before_bin" ] || one before "$before_bin"
    i=$((i + 1))
done
echo "load after: $(uptime)"
summary ours
if [ -n "$before_bin" ]; then
    summary before
    paste "$tmp/ours" "$tmp/before" | awk '{ print $1 / $6 }' | sort -n | awk '
        { r[NR] = $1 } END { printf "ratio ours/before per round: %.3f-%.3f (median %.3f)\n",
        r[1], r[NR], NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2 }'
fi
