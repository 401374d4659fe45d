#!/usr/bin/env bash
# Soak test of `trainprof record` under random kills (not in ctest: it runs for minutes and
# its kill moments depend on timing on purpose). N recorded runs of trainprof-trainer (CPU
# device, a scenario drawn per run), each sent SIGKILL, SIGTERM or SIGINT at a random moment
# (seeded; SIGTERM/SIGINT go to the trainer or, as forwarded signals, to `record`). Then:
#   - every trace left opens with `trainprof info` (exit 0);
#   - no junk: nothing in the run folder but run-N.tprof traces, no empty trace, no trace
#     with nothing but its file header unless SIGKILL struck before the first flush (nobody
#     runs after SIGKILL), no manifest left in TMPDIR, no process left behind;
#   - no run hangs (60 s each at most).
# Prints a line per problem and a summary; exit 0 when there was none.
#   scripts/soak-record.sh [-n RUNS] [-s SEED] [-b BUILD_DIR] [-k]    (-k: keep the folder)
set -uo pipefail
runs=200 seed=1 build=build keep=0
while getopts "n:s:b:k" opt; do
  case $opt in
    n) runs=$OPTARG ;;
    s) seed=$OPTARG ;;
    b) build=$OPTARG ;;
    k) keep=1 ;;
    *) echo "usage: $0 [-n RUNS] [-s SEED] [-b BUILD_DIR] [-k]" >&2; exit 2 ;;
  esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
case $build in /*) ;; *) build=$root/$build ;; esac
tp=$build/cli/trainprof trainer=$build/trainer/trainprof-trainer
for bin in "$tp" "$trainer"; do
  [ -x "$bin" ] || { echo "soak: $bin not built" >&2; exit 2; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/tp-soak.XXXXXX")
mkdir -p "$work/runs" "$work/tmp" "$work/logs"
export TMPDIR=$work/tmp # record's manifests go here: any left over is counted
[ "$keep" = 1 ] || trap 'rm -rf "$work"' EXIT
RANDOM=$seed

# Scenarios and steps chosen so that one unkilled run takes about one to three seconds.
scenarios=("healthy 10" "launch-bound 60" "sync-every-step 10" "input-bound 4" "pageable-copies 3")
signals=(KILL TERM INT)
declare -A sent=() outcome=() cut_by=()
problems=0 traces=0 opened=0 intact=0 cut=0 header_only=0 hung=0 t0=$(date +%s)

problem() {
  echo "soak: run $1: $2"
  problems=$((problems + 1))
}

# Waits up to 60 s for pid $1; returns its exit status, or 124 after killing a hung run.
wait_run() {
  local pid=$1 i
  for ((i = 0; i < 600; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    pkill -KILL -P "$pid" 2>/dev/null
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    return 124
  fi
  wait "$pid"
}

for ((i = 1; i <= runs; i++)); do
  read -r scenario steps <<<"${scenarios[RANDOM % ${#scenarios[@]}]}"
  sig=${signals[RANDOM % 3]}
  to_record=0 # a forwarded signal: sent to `record` itself
  [ "$sig" != KILL ] && to_record=$((RANDOM % 2))
  delay_ms=$((RANDOM % 2500))
  out=$work/runs/run-$i.tprof log=$work/logs/run-$i.log
  "$tp" record -o "$out" -- "$trainer" --device cpu --scenario "$scenario" --steps "$steps" \
    --seed "$i" >"$log" 2>&1 &
  rec=$!
  sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
  child=$(pgrep -P "$rec" | head -1)
  what=finished
  if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
    if [ "$to_record" = 1 ]; then
      kill -s "$sig" "$rec" 2>/dev/null && what=$sig-record
    else
      kill -s "$sig" "$child" 2>/dev/null && what=$sig
    fi
  fi
  sent[$what]=$((${sent[$what]:-0} + 1))
  wait_run "$rec"
  rc=$?
  if [ "$rc" = 124 ]; then
    hung=$((hung + 1))
    problem "$i" "hung for 60 s after $what at ${delay_ms} ms ($scenario)"
  fi
  outcome["$what rc=$rc"]=$((${outcome["$what rc=$rc"]:-0} + 1))
  [ -n "$child" ] && kill -0 "$child" 2>/dev/null && problem "$i" "trainer $child still running"
  [ -e "$out" ] || continue
  traces=$((traces + 1))
  size=$(stat -c %s "$out")
  if ! "$tp" info "$out" >"$log.info" 2>&1; then
    problem "$i" "trainprof info fails after $what at ${delay_ms} ms: $(head -1 "$log.info")"
    continue
  fi
  opened=$((opened + 1))
  if grep -q '^integrity: *ok$' "$log.info"; then
    intact=$((intact + 1))
  else
    cut=$((cut + 1))
    cut_by[$what]=$((${cut_by[$what]:-0} + 1))
  fi
  if [ "$size" -eq 0 ]; then
    problem "$i" "empty trace after $what"
  elif [ "$size" -le 64 ]; then
    header_only=$((header_only + 1))
    [ "$what" = KILL ] || problem "$i" "trace with only its header after $what (rc $rc)"
  fi
done

junk=$(find "$work/runs" -mindepth 1 ! -name 'run-*.tprof' | wc -l)
[ "$junk" -eq 0 ] || { problem all "junk in the run folder:"; find "$work/runs" -mindepth 1 ! -name 'run-*.tprof' | head; }
manifests=$(find "$work/tmp" -mindepth 1 | wc -l)
[ "$manifests" -eq 0 ] || problem all "$manifests file(s) left in TMPDIR"
left=$(pgrep -f "$trainer" | wc -l)
[ "$left" -eq 0 ] || problem all "$left trainer process(es) left running"

echo "soak: $runs runs (seed $seed) in $(($(date +%s) - t0)) s"
printf '  sent before exit:'
for k in "${!sent[@]}"; do printf ' %s %d,' "$k" "${sent[$k]}"; done | sed 's/,$//'
echo
printf '  exit statuses:   '
for k in "${!outcome[@]}"; do printf ' [%s] %d' "$k" "${outcome[$k]}"; done
echo
echo "  traces: $traces, open with info: $opened (intact $intact, cut off/no index $cut)," \
  "header-only after SIGKILL: $header_only"
printf '  cut off/no index after:'
for k in "${!cut_by[@]}"; do printf ' %s %d,' "$k" "${cut_by[$k]}"; done | sed 's/,$//'
echo
echo "  junk files: $junk, files left in TMPDIR: $manifests, hung runs: $hung"
echo "  problems: $problems"
[ "$keep" = 1 ] && echo "  kept: $work"
[ "$problems" -eq 0 ]
