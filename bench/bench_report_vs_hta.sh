#!/bin/sh
# bench_report_vs_hta: `trainprof report` and HTA v0.6.1 side by side on the same peer trace
# sets, in the same minute: for each set the two tools run alternately (ours, HTA, ours,
# HTA, ...), RUNS times each, so both see the same machine load. Reports per tool the best
# wall time, the best CPU time (user+sys, steadier on a shared machine) and the peak RSS, and
# the ratios HTA/ours (bench/timed_run.py: to the microsecond; GNU time's 10 ms steps were a
# tenth of a 0.1 s report). Goal on sets of >= 10 MB of JSON: >= 30x faster (CPU and wall) and
# <= 1/10 of HTA's peak memory. The load (`uptime`) is printed before and after.
#
# HTA is never a trainprof dependency: point HTA_PYTHON at a Python where HTA v0.6.1 is
# installed (e.g. a scratch venv with `pip install --no-deps` of its source); it runs
# bench/hta_default_analyses.py, the default analyses of ../shared/peer_traces/README.md.
#
# usage: HTA_PYTHON=/path/python bench/bench_report_vs_hta.sh [BUILD_DIR] [PEER_TRACES]
#        env: RUNS (default 3), MIN_MB (sets smaller than this are skipped, default 0),
#             SETS (space-separated set names, default all), REPORT_ARGS (default --compat hta),
#             BEFORE (another build dir: its trainprof runs in each round too, after ours, and
#             a second line per set, "SET(before)", gives its figures against the same HTA
#             runs, so a change is measured before and after in one invocation)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
peer=${2:-$here/../shared/peer_traces}
runs=${RUNS:-3}
min_mb=${MIN_MB:-0}
args=${REPORT_ARGS:---compat hta}
hta_py=${HTA_PYTHON:-}
. "$here/bench/bench_common.sh"
bench_bins "$build"
[ -d "$peer/traces" ] || { echo "no peer traces at $peer" >&2; exit 2; }
[ -n "$hta_py" ] && [ -x "$hta_py" ] || { echo "set HTA_PYTHON to a Python with HTA v0.6.1" >&2; exit 2; }
"$hta_py" -c 'import hta.trace_analysis' 2>/dev/null || { echo "$hta_py: cannot import hta" >&2; exit 2; }
command -v python3 >/dev/null && [ -x /usr/bin/time ] || { echo "needs python3 and GNU time (bench/timed_run.py)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run TAG CMD...: appends "wall cpu kib" of one run of CMD to $tmp/TAG; 1 if it failed.
run() {
    tag=$1
    shift
    if ! python3 "$here/bench/timed_run.py" "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err"; then
        echo "$set_name: $tag failed: $(grep -v '^[[:space:]]*$' "$tmp/err" | tail -1)" >&2
        return 1
    fi
    cat "$tmp/time" >>"$tmp/$tag"
}

# best TAG: "best_wall best_cpu peak_mib" over the runs in $tmp/TAG.
best() {
    awk 'NR == 1 || $1 < w { w = $1 } NR == 1 || $2 < c { c = $2 } $3 > m { m = $3 }
         END { printf "%.4f %.4f %.1f", w, c, m / 1024 }' "$tmp/$1"
}

echo "load before: $(uptime)"
echo "HTA: $("$hta_py" -c 'import hta, pandas, numpy; print("hta", getattr(hta, "__version__", "?"), "pandas", pandas.__version__, "numpy", numpy.__version__)' 2>/dev/null)"
echo "best of $runs alternating runs each; ours: trainprof report SET $args; cpu = user+sys"
printf '%-32s %6s | %6s %6s %6s | %7s %7s %7s | %6s %6s %5s %s\n' set "MB" "wall" "cpu" "MiB" \
    "HTAwall" "HTAcpu" "HTAMiB" "x wall" "x cpu" "mem" goal
for dir in "$peer"/traces/*/; do
    set_name=$(basename "$dir")
    if [ -n "${SETS:-}" ]; then
        case " $SETS " in *" $set_name "*) ;; *) continue ;; esac
    fi
    mb=$(for f in "$dir"*; do gzip -dcf "$f"; done | wc -c | awk '{printf "%.1f", $1 / 1e6}')
    awk -v a="$mb" -v b="$min_mb" 'BEGIN { exit !(a < b) }' && continue
    rm -f "$tmp/ours" "$tmp/before" "$tmp/hta"
    ok=1
    i=0
    while [ $i -lt "$runs" ]; do
        run ours "$bin" report "$dir" $args || ok=0
        [ -z "$before_bin" ] || run before "$before_bin" report "$dir" $args || ok=0
        run hta "$hta_py" "$here/bench/hta_default_analyses.py" "$dir" || ok=0
        i=$((i + 1))
    done
    [ $ok = 1 ] || continue
    { echo "$set_name $mb $(best ours) $(best hta)"
      [ -z "$before_bin" ] || echo "$set_name(before) $mb $(best before) $(best hta)"; } | awk '{
        xw = ($3 > 0) ? $6 / $3 : 0; xc = ($4 > 0) ? $7 / $4 : 0; mr = ($8 > 0) ? $5 / $8 : 0;
        goal = ($2 < 10) ? "-" : ((xw >= 30 && xc >= 30 && mr <= 0.1) ? "met" : "MISSED");
        printf "%-32s %6.1f | %6.3f %6.3f %6.1f | %7.2f %7.2f %7.1f | %5.1fx %5.1fx %5.3f %s\n",
               $1, $2, $3, $4, $5, $6, $7, $8, xw, xc, mr, goal }'
done
echo "load after: $(uptime)"
