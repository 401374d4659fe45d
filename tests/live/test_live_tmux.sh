#!/bin/bash
# The real `trainprof top -- CMD` in a real terminal (tmux): it starts the trainer under
# `record --live` and shows it; the capture key writes the next steps to a file that
# `report` reads; v opens the offline views on the window and comes back; q ends the view
# with status 0 while the job keeps running (ps still lists it). Every wait polls the
# screen with a generous limit. (skips, exit 77, without tmux)
set -u
TP=$1 TRAINER=$2 PY=$3
command -v tmux >/dev/null 2>&1 || { echo "SKIP: tmux not installed"; exit 77; }
W=$(mktemp -d)
export XDG_RUNTIME_DIR=$W/run
mkdir -m 700 "$XDG_RUNTIME_DIR"
SOCKDIR=$XDG_RUNTIME_DIR/trainprof
sock=tp-live-test-$$
T() { tmux -L "$sock" -f /dev/null "$@"; }
JOB=
cleanup() {
    T kill-server >/dev/null 2>&1
    [ -n "$JOB" ] && kill -KILL "$JOB" 2>/dev/null
    [ -n "${KEEP:-}" ] || rm -rf "$W"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*"
    echo "---- screen ----"
    cat "$W/screen" 2>/dev/null
    tail -5 "$W"/*.log 2>/dev/null
    exit 1
}
wait_for() {
    for _ in $(seq 1200); do
        T capture-pane -p -t top >"$W/screen" 2>/dev/null
        local ok=1
        for s in "$@"; do grep -qF -- "$s" "$W/screen" || ok=0; done
        [ $ok = 1 ] && return 0
        sleep 0.1
    done
    fail "screen never showed: $*"
}

T new-session -d -s top -x 130 -y 45 -c "$W" \
    "env LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=screen XDG_RUNTIME_DIR='$XDG_RUNTIME_DIR' \
     '$TP' top --capture-steps 3 --dir '$W' -- '$TRAINER' --scenario input-bound \
     --steps 1000000 --log-every 0; echo \$? >'$W/rc'; sleep 60" || fail "tmux new-session failed"

wait_for "trainprof top" "(live)" "q quit" "c capture next 3 steps"
wait_for "input-bound: the device waits" "step time" "steps/s" "stream"
JOB=$(basename "$SOCKDIR"/*.sock .sock)
T send-keys -t top c
wait_for "capture written: $W/top-$JOB-capture-1.tprof (3 steps)" "q quit"
"$TP" report --format json "$W/top-$JOB-capture-1.tprof" >"$W/cap.json" || fail "report on it"
"$PY" -c "
import json, sys
r = json.load(open(sys.argv[1]))['ranks'][0]
assert [x['count'] for x in r['ranges'] if x['name'] == 'step'] == [3], r['ranges'][:2]
" "$W/cap.json" || fail "the capture does not hold 3 steps"
T send-keys -t top v
wait_for "[1 Summary]"
T send-keys -t top 3
wait_for "[3 Kernels]"
T send-keys -t top v
wait_for "trainprof top" "c capture next 3 steps"
# The refreshes between cut windows draw the aggregator's figures: the allocator's memory
# with its state at the window's start, and the ranges' device time.
wait_for "at the window's start" "GPU time" "dataloader wait"
# Seconds instead of steps (a cut window every refresh), then steps again.
T send-keys -t top w
wait_for "window: last 10.0 s" "input-bound: the device waits"
T send-keys -t top w
wait_for "window: last 20 steps" "at the window's start"
T send-keys -t top q
for _ in $(seq 600); do [ -s "$W/rc" ] && break; sleep 0.2; done
[ "$(cat "$W/rc" 2>/dev/null)" = 0 ] || fail "top did not end with status 0"
kill -0 "$JOB" 2>/dev/null || fail "the job ended with the view"
"$TP" ps >"$W/ps.txt" && grep -Eq "^$JOB +live " "$W/ps.txt" || fail "ps: $(cat "$W/ps.txt")"
echo ok
