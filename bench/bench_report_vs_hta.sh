#!/bin/sh
# bench_report_vs_hta: wall time and peak RSS of `trainprof report` on every peer trace set,
# side by side with HTA v0.6.1's figures recorded in expected/SET.json
# (process_default_variant_only: wall_s, peak_rss_mib; a separate GNU-time'd process that
# loads the set and runs HTA's default analyses). Goal on sets of >= 10 MB of JSON:
# >= 30x faster and <= 1/3 of HTA's peak memory.
#
# usage: bench/bench_report_vs_hta.sh [BUILD_DIR] [PEER_TRACES] [-- extra report args]
#   default BUILD_DIR=build, PEER_TRACES=../shared/peer_traces, report args: --compat hta
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
build=$here/build
peer=$here/../shared/peer_traces
if [ $# -gt 0 ] && [ "$1" != "--" ]; then build=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" != "--" ]; then peer=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" = "--" ]; then shift; fi
args=${*:---compat hta}
bin=$build/cli/trainprof
[ -x "$bin" ] || { echo "no $bin (build the trainprof target)" >&2; exit 2; }
[ -d "$peer/traces" ] || { echo "no peer traces at $peer" >&2; exit 2; }
command -v /usr/bin/time >/dev/null || { echo "needs GNU time (/usr/bin/time)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

printf '%-34s %8s %9s %9s %8s %9s %8s %7s %s\n' set "JSON MB" "ours s" "ours MiB" "HTA s" \
    "HTA MiB" speedup "mem" goal
for dir in "$peer"/traces/*/; do
    set_name=$(basename "$dir")
    mb=$(for f in "$dir"*; do gzip -dcf "$f"; done | wc -c | awk '{printf "%.1f", $1 / 1e6}')
    best=""
    rss=0
    for run in 1 2 3; do # best wall of three; peak RSS of the runs
        t0=$(date +%s.%N)
        if ! /usr/bin/time -f '%M' -o "$tmp/time" "$bin" report "$dir" $args \
            >"$tmp/out" 2>"$tmp/err"; then
            echo "$set_name: trainprof report failed: $(tail -1 "$tmp/err")" >&2
            break
        fi
        t1=$(date +%s.%N)
        wall=$(echo "$t1 $t0" | awk '{printf "%.3f", $1 - $2}')
        best=$(echo "$wall ${best:-$wall}" | awk '{print ($1 < $2) ? $1 : $2}')
        kib=$(tail -1 "$tmp/time")
        [ "$kib" -gt "$rss" ] && rss=$kib
    done
    ours_mib=$(echo "$rss" | awk '{printf "%.1f", $1 / 1024}')
    exp="$peer/expected/$set_name.json"
    if [ -f "$exp" ]; then
        hta=$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["process_default_variant_only"]; print(p["wall_s"], p["peak_rss_mib"])' "$exp")
        hta_s=${hta% *}
        hta_mib=${hta#* }
        echo "$set_name $mb ${best:-nan} $ours_mib $hta_s $hta_mib" | awk '{
            sp = ($3 > 0) ? $5 / $3 : 0; mr = ($6 > 0) ? $4 / $6 : 0;
            goal = ($2 < 10) ? "-" : ((sp >= 30 && mr <= 1/3) ? "met" : "MISSED");
            printf "%-34s %8.1f %9.3f %9.1f %8.2f %9.1f %7.0fx %6.2f  %s\n",
                   $1, $2, $3, $4, $5, $6, sp, mr, goal }'
    else
        printf '%-34s %8.1f %9.3f %9.1f %8s %9s %8s %7s %s\n' "$set_name" "$mb" "${best:-nan}" \
            "$ours_mib" "-" "-" "-" "-" "(no HTA figures)"
    fi
done
