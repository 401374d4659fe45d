#!/bin/sh
# The Diagnosis view in a real terminal: a detached tmux session of fixed size runs
# `trainprof tui --view diagnosis` on the committed samples; Enter on a finding must show its
# range selected in Ranges, t its op under the Timeline's cursor; q ends with status 0.
# usage: test_tui_diagnosis_tmux.sh TRAINPROF SOURCE_DIR        (skips, exit 77, without tmux)
set -u
tp=$1 src=$2
sock=tp-tui-diag-$$
. "$(dirname "$0")/tmux_lib.sh"

# Waits (up to 10 s) until the screen of session $1 contains every other argument.
wait_for() { wait_in "$@"; }

start() { # session trace
    rm -f "$tmp/rc.$1"
    T new-session -d -s "$1" -x 120 -y 40 \
        "env LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=screen '$tp' tui '$2' --view diagnosis; echo \$? >'$tmp/rc.$1'; sleep 5" ||
        fail "tmux new-session failed"
}

quit() { # session
    T send-keys -t "$1" q
    i=0
    while [ ! -s "$tmp/rc.$1" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
    [ "$(cat "$tmp/rc.$1" 2>/dev/null)" = 0 ] || fail "$1: trainprof tui did not exit 0 after q"
}

# pageable-h2d: its range is 'host-to-device copy'; its op the slowest copy call, the
# sample's longest tpMemcpy (209.35 ms, 754.22 ms into the trace).
start pg "$src/traces/samples/cpu-trainer-pageable-copies.tprof"
wait_for pg "[6 Diagnosis]" "> 1. [high" "pageable-h2d:" \
    "go to:     Enter range 'host-to-device copy' in Ranges, t 'tpMemcpy' on the Timeline"
T send-keys -t pg Enter
wait_for pg "[4 Ranges]" "> host-to-device copy "
T send-keys -t pg 6
wait_for pg "[6 Diagnosis]"
T send-keys -t pg t
wait_for pg "[2 Timeline]" ">trainprof-t" "Selected: tpMemcpy" \
    "start +754.22 ms  duration 209.35 ms" "in range: host-to-device copy"
quit pg

# input-bound: Enter shows the data-loading range in Ranges.
start ib "$src/traces/samples/cpu-trainer-input-bound.tprof"
wait_for ib "[6 Diagnosis]" "input-bound:" "Enter range 'dataloader wait' in Ranges"
T send-keys -t ib Enter
wait_for ib "[4 Ranges]" "> dataloader wait "
quit ib
echo "ok: Enter and t on a finding show its evidence (Ranges, Timeline) in a real terminal"
