#!/bin/sh
# The Timeline as a user of Nsight Systems or Perfetto drives it, in a real terminal (tmux),
# on a trainer run recorded now (its stacks symbolized from the trainer binary here):
#   - find `forward conv1`, Up selects the enclosing `step`, two zooms keep `step` selected;
#   - Enter on the Kernels row conv3x3_fwd lands on a conv3x3_fwd op on a stream lane;
#     Enter there selects the tpLaunchKernel call that launched it, with its stack
#     (launch_conv) and the push stack of its range, and Enter goes back;
#   - w shows the step's window statistics, ] the next step's, Esc clears them;
#   - ? shows the key reference, any key closes it; the kept find is cleared with Esc.
# usage: test_tui_timeline_tmux.sh TRAINPROF TRAINER       (skips, exit 77, without tmux)
set -u
tp=$1 trainer=$2
sock=tp-tl-test-$$
. "$(dirname "$0")/tmux_lib.sh"

if ! "$tp" record --stacks all -o "$tmp/t.tprof" -- "$trainer" --device cpu --steps 4 --seed 1 \
    >"$tmp/record.log" 2>&1; then
    grep -q "ASan runtime does not come first" "$tmp/record.log" &&
        { echo "SKIP: sanitizer build, the collector cannot be preloaded"; exit 77; }
    cat "$tmp/record.log"
    fail "record failed"
fi

# Waits (up to 10 s) until the screen contains every argument (fixed strings).
wait_for() { wait_in tl "$@"; }
# Waits (up to 10 s) until the screen no longer shows s.
lacks() { lacks_in tl "$1"; }

T new-session -d -s tl -x 160 -y 48 \
    "env LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=screen '$tp' tui '$tmp/t.tprof' --view timeline; echo \$? >'$tmp/rc'; sleep 5" ||
    fail "tmux new-session failed"
wait_for "[2 Timeline]" "zoom 1x" "? Keys" "device " "trainprof-trainer (main)"

# Find, then Up to the enclosing level, then zoom: the selection stays.
T send-keys -t tl / f o r w a r d Space c o n v 1 Enter
wait_for "Selected: forward conv1" 'Esc clear "forward conv1"'
T send-keys -t tl Up
wait_for "Selected: step" "Range push stack of step:" "train_loop (tp_train.c:"
T send-keys -t tl +
wait_for "zoom 2x" "Selected: step"
T send-keys -t tl +
wait_for "zoom 4x" "Selected: step"
T send-keys -t tl Escape
wait_for "Selected: step"
lacks 'Esc clear "forward conv1"'

# The step's window: the analyzer's statistics on it; ] the next step; Esc clears.
T send-keys -t tl w
wait_for "Window +" ": step" "Device busy" "conv3x3_fwd" "forward conv1"
cp "$tmp/screen" "$tmp/first-window"
T send-keys -t tl ]
first=$(grep -F "Window +" "$tmp/first-window")
lacks "$first" # polled: the first window's line goes once ] has moved to the next step
wait_for "Window +" ": step"
T send-keys -t tl Escape
wait_for "Selected: step"
lacks "Device busy"

# Kernels: Enter on conv3x3_fwd shows it on its stream; Enter follows the flow both ways.
T send-keys -t tl 3 / c o n v 3 x 3 _ f w d Enter
wait_for "[3 Kernels]" 'search "conv3x3_fwd": 1 shown' "> conv3x3_fwd"
T send-keys -t tl Enter
wait_for "[2 Timeline]" "Selected: conv3x3_fwd" "[kernel]" ">stream "
on_stream() { grep -F "Selected: conv3x3_fwd" -A1 "$tmp/screen" | grep -qF "  stream "; }
holds_in tl "conv3x3_fwd is not on a stream" on_stream
T send-keys -t tl Enter
wait_for "Selected: tpLaunchKernel" "[cuda_runtime]" "launched: conv3x3_fwd on stream" \
    "Stack of tpLaunchKernel:" "launch_conv" "Range push stack of forward conv"
T send-keys -t tl Enter
wait_for "Selected: conv3x3_fwd" "launched by: tpLaunchKernel"

# The key reference, and the key bar's way to it.
T send-keys -t tl ?
wait_for "Keys of the Timeline view" "Everywhere:" "n/p" "Enter"
T send-keys -t tl x
wait_for "Selected: conv3x3_fwd"
lacks "Keys of the Timeline view"

T send-keys -t tl q
i=0
while [ ! -s "$tmp/rc" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(cat "$tmp/rc" 2>/dev/null)" = 0 ] || fail "trainprof tui did not exit 0 after q"
echo "ok: Timeline nesting, zoom, step window, jump from Kernels and launch flow in a real terminal"
