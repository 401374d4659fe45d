#!/bin/sh
# The real `trainprof tui` in a real terminal: a detached tmux session of fixed size runs it
# on the committed sample; keys are sent as a user would type them and the screen text is
# captured and checked after each; q must end the program with status 0.
# usage: test_tui_tmux.sh TRAINPROF SOURCE_DIR          (skips, exit 77, without tmux)
set -u
tp=$1 src=$2
sock=tp-tui-test-$$
. "$(dirname "$0")/tmux_lib.sh"
sample=$src/traces/samples/cpu-trainer-input-bound.tprof

# Waits (up to 10 s) until the screen contains every argument (fixed strings).
wait_for() { wait_in tui "$@"; }

T new-session -d -s tui -x 120 -y 40 \
    "env LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=screen '$tp' tui '$sample'; echo \$? >'$tmp/rc'; sleep 5" ||
    fail "tmux new-session failed"

wait_for "[1 Summary]" "Device utilization" "q Quit"
T send-keys -t tui 2
wait_for "[2 Timeline]" "zoom 1x" ">stream 0" "Selected: " "? Keys"
T send-keys -t tui +
wait_for "zoom 2x"
T send-keys -t tui +
wait_for "zoom 4x"
T send-keys -t tui -
wait_for "zoom 2x"
T send-keys -t tui Down Down
# Stream 0 has two levels (syncs overlap its kernels); then the process header and the
# trainer's main thread, named after the program (its comm), with its tid.
wait_for ">trainprof-t" "pid " "trainprof-trainer (main)" " thread "
T send-keys -t tui 3
wait_for "[3 Kernels]" "17 kernels, sorted by total" "> conv3x3_bwd_filter"
T send-keys -t tui s
wait_for "sorted by mean"
T send-keys -t tui / r e l u Enter
wait_for 'search "relu": 2 shown' "relu_bwd" "relu_fwd"
lacks_in tui conv3x3 # (polled: rows below the two found ones may not be cleared yet)
T send-keys -t tui Escape
T send-keys -t tui 4
wait_for "[4 Ranges]" "> step"

# Resize: too small, then back.
T resize-window -t tui -x 30 -y 8
wait_for "terminal too"
T resize-window -t tui -x 100 -y 30
wait_for "[4 Ranges]" "> step"

T send-keys -t tui q
i=0
while [ ! -s "$tmp/rc" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$tmp/rc" ] || fail "trainprof tui did not exit after q"
rc=$(cat "$tmp/rc")
[ "$rc" = 0 ] || fail "trainprof tui exited $rc"
# A terminal whose locale is not UTF-8 gets ASCII only (busy glyphs, markers, names).
rm -f "$tmp/rc"
T new-session -d -s tui2 -x 100 -y 30 \
    "env LANG=C LC_ALL=C TERM=screen '$tp' tui '$sample' --view kernels; echo \$? >'$tmp/rc'; sleep 5" ||
    fail "tmux new-session (C locale) failed"
# The whole frame, its last row and the key line included: the UI computes a view's data in
# the background (a "computing" frame comes first), and curses may paint one frame in more
# than one write, so a capture can hold the top of a frame without its table.
wait_in tui2 "[3 Kernels]" "sorted by" "Memcpy DtoH" "q Quit"
grep -qF "totalv" "$tmp/screen" || fail "no ASCII sort marker in the C locale"
ascii_only() { ! LC_ALL=C grep -q "$(printf '[\200-\377]')" "$tmp/screen"; }
ascii_only || fail "non-ASCII bytes in the C locale"
T send-keys -t tui2 2
wait_in tui2 "zoom 1x" "Selected: " "? Keys"
ascii_only || fail "non-ASCII timeline in the C locale"
grep -q '[#@*]' "$tmp/screen" || fail "no ASCII busy glyphs in the C-locale timeline"
T send-keys -t tui2 q
i=0
while [ ! -s "$tmp/rc" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(cat "$tmp/rc" 2>/dev/null)" = 0 ] || fail "C-locale session did not exit 0 after q"

# Two traces as two ranks: R compares them (the background thread analyses both, "computing"
# until then), Enter on the second row opens that rank's Summary, R comes back to the same table.
rm -f "$tmp/rc"
other=$src/traces/samples/cpu-trainer-pageable-copies.tprof
T new-session -d -s tui3 -x 120 -y 40 \
    "env LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=screen '$tp' tui '$sample' '$other'; echo \$? >'$tmp/rc'; sleep 5" ||
    fail "tmux new-session (two ranks) failed"
wait_in tui3 "rank 0 (1 of 2)" "[1 Summary]" "r Rank"
T send-keys -t tui3 R
wait_in tui3 "[R Ranks]" "2 ranks, sorted by" "Cross-rank findings" ">      0  input-straggler" \
    "Enter open the rank"
T send-keys -t tui3 Down Enter
wait_in tui3 "rank 1 (2 of 2)" "[1 Summary]"
T send-keys -t tui3 R
wait_in tui3 "[R Ranks]" ">      1  memory-imbalance" "Cross-rank findings"
T send-keys -t tui3 q
i=0
while [ ! -s "$tmp/rc" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(cat "$tmp/rc" 2>/dev/null)" = 0 ] || fail "two-rank session did not exit 0 after q"

echo "ok: tmux-driven session (views, zoom, lanes, sort, search, resize, ranks, quit)"
