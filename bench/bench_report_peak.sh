#!/bin/sh
# bench_report_peak: the peak memory of `trainprof report` per MB of JSON (issue 13's goal:
# <= 0.3 MiB per MB), on the peer trace sets, with the process's own floor measured in the
# same run. For each set: the median of RUNS peaks (GNU time's %M, the largest resident set:
# anonymous memory and the file pages of the program and its shared libraries), MiB per MB of
# JSON text (the sets' files inflated), and the same above the floor ((peak - floor) / MB, what
# the trace's events cost). The floor is the median peak of a report of a one-event trace: the
# process itself, the same for every set, so sets small enough that floor / MB is near 0.3 cannot
# meet the goal at any cost per event (docs/PERFORMANCE.md, "the floor"). Peaks vary by
# ~0.1-0.2 MiB between runs (thread timing, address-space layout): compare medians.
#
# usage: bench/bench_report_peak.sh [BUILD_DIR] [PEER_TRACES]
#        env: RUNS (default 5), MIN_MB (sets smaller than this are skipped, default 10),
#             SETS (space-separated set names, default all), REPORT_ARGS (default --compat hta),
#             BEFORE (another build dir: its trainprof runs in each round too, after ours, and a
#             second line per set, "SET(before)", gives its figures, so a change is measured
#             before and after in one invocation)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
peer=${2:-$here/../shared/peer_traces}
runs=${RUNS:-5}
min_mb=${MIN_MB:-10}
args=${REPORT_ARGS:---compat hta}
. "$here/bench/bench_common.sh"
bench_bins "$build"
[ -d "$peer/traces" ] || { echo "no peer traces at $peer" >&2; exit 2; }
bench_gnu_time
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# peak TAG BIN INPUT: appends the peak (KiB) of one report of INPUT by BIN to $tmp/TAG.
peak() {
    if ! /usr/bin/time -f %M -o "$tmp/time" "$2" report "$3" $args -q >/dev/null 2>"$tmp/err"; then
        echo "$(basename "$3"): $1 failed: $(tail -1 "$tmp/err")" >&2
        return 1
    fi
    tail -1 "$tmp/time" >>"$tmp/$1"
}

# median TAG: the median of the peaks in $tmp/TAG, in MiB.
median() {
    sort -n "$tmp/$1" | awk '{ v[NR] = $1 } END { printf "%.2f", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) / 1024 }'
}

# rounds TAG_OURS TAG_BEFORE INPUT: RUNS alternating peaks of ours (and before's).
rounds() {
    rm -f "$tmp/$1" "$tmp/$2"
    i=0
    while [ $i -lt "$runs" ]; do
        peak "$1" "$bin" "$3" || return 1
        [ -z "$before_bin" ] || peak "$2" "$before_bin" "$3" || return 1
        i=$((i + 1))
    done
}

echo "load before: $(uptime)"
# A Kineto trace of one kernel: every report's fixed cost and nothing per event.
printf '{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":1,"args":{"device":0,"stream":7,"correlation":1}}]}\n' >"$tmp/one_event.json"
rounds floor floor_before "$tmp/one_event.json"
floor=$(median floor)
floor_before=$([ -z "$before_bin" ] || median floor_before)

echo "median of $runs runs each; trainprof report SET $args; floor = a one-event trace's peak: $floor MiB${before_bin:+ (before: $floor_before MiB)}"
printf '%-42s %6s | %7s %7s %s | %9s\n' set MB "MiB" "MiB/MB" goal "above/MB"
for dir in "$peer"/traces/*/; do
    set_name=$(basename "$dir")
    if [ -n "${SETS:-}" ]; then
        case " $SETS " in *" $set_name "*) ;; *) continue ;; esac
    fi
    mb=$(for f in "$dir"*; do gzip -dcf "$f"; done | wc -c | awk '{printf "%.1f", $1 / 1e6}')
    awk -v a="$mb" -v b="$min_mb" 'BEGIN { exit !(a < b) }' && continue
    rounds ours before "$dir" || continue
    { echo "$set_name $mb $(median ours) $floor"
      [ -z "$before_bin" ] || echo "$set_name(before) $mb $(median before) $floor_before"; } | awk '{
        r = $3 / $2; printf "%-42s %6.1f | %7.2f %7.3f %-6s | %9.3f\n",
                            $1, $2, $3, r, (r <= 0.3) ? "met" : "MISSED", ($3 - $4) / $2 }'
done
echo "load after: $(uptime)"
