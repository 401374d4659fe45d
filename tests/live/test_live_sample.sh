#!/bin/bash
# `trainprof top` on a job recorded with --sample: the live view shows the window's CPU time by
# line (the Stacks view's table), the line that burns the CPU first, with its caller; a window
# with few samples says how to widen it; a window in seconds of a job without a device says
# its span and 0 % busy; a job whose batches a forked worker makes shows the worker's line too
# (its samples from its own trace, cut to the window). Real processes; every wait polls for its condition with a generous
# limit, and the assertions hold for any number of samples the machine's load allows.
set -u
TP=$1 HERE=$2 NVTXPY=$3
. "$HERE/live_lib.sh"
need_venv "$NVTXPY"
BURN=$(grep -n '# BURN' "$HERE/sample_job.py" | cut -d: -f1)
STEP=$(grep -n '# STEP' "$HERE/sample_job.py" | cut -d: -f1)
MAKE=$(grep -n '# MAKE' "$HERE/sample_job.py" | cut -d: -f1)

"$TP" record --live --sample -o "$W/job.tprof" -- "$NVTXPY" "$HERE/sample_job.py" "$W/done" \
    >"$W/job.log" 2>&1 &
REC=$!
poll has_sock || fail "no socket"
JOB=$(basename "$SOCKDIR"/*.sock .sock)
stepped() { [ "$(cat "$W/done" 2>/dev/null || echo 0)" -ge 5 ]; }
poll stepped || fail "the job does not step"

# A window in seconds: the burning line and its caller, sampled. Polled: on a loaded machine
# the first window may hold no sample of it yet.
row="sample_job.py:$BURN in burn < sample_job.py:$STEP in <module>"
hot() {
    "$TP" top "$JOB" --snapshot --seconds 5 --width 160 --height 44 >"$W/secs.txt" 2>>"$W/top.log" &&
        grep -q "^> $row " "$W/secs.txt"
}
poll hot || fail "no sampled row '> $row' in a window in seconds"
grep -Eq '^ CPU time by line, sampled: [0-9]+ samples of 1 threads, [0-9]+ a second' "$W/secs.txt" ||
    fail "no samples header"
grep -Eq '^ window: [0-9]+ steps in [0-9.]+ s, .* a step; device busy 0.00 % of it' "$W/secs.txt" ||
    fail "the window in seconds: $(grep '^ window:' "$W/secs.txt")"
grep -q 'nan' "$W/secs.txt" && fail "nan in the frame"
# ...and its step ranges are its steps: the step still running at the cut is left out, not
# counted as a step of 0 ns
WSTEPS=$(sed -n 's/^ window: \([0-9]*\) steps in.*/\1/p' "$W/secs.txt")
RSTEPS=$(sed -n 's/^[> ] step  *\([0-9][0-9]*\)  .*/\1/p' "$W/secs.txt")
[ -n "$WSTEPS" ] && [ "$WSTEPS" = "$RSTEPS" ] ||
    fail "window steps $WSTEPS, step ranges $RSTEPS: $(grep -E '^[> ] step ' "$W/secs.txt")"

# A window of 2 steps: the same table; fewer than 50 samples say how to widen the window.
"$TP" top "$JOB" --snapshot --steps 2 --width 160 --height 44 >"$W/steps.txt" 2>>"$W/top.log" ||
    fail "top --steps 2"
N=$(sed -n 's/^ CPU time by line, sampled: \([0-9]*\) samples.*/\1/p' "$W/steps.txt")
if [ -n "$N" ]; then
    if [ "$N" -lt 50 ]; then
        grep -q "few in this window: + widens it, w makes it seconds" "$W/steps.txt" ||
            fail "no hint with $N samples"
    else
        grep -q "few in this window" "$W/steps.txt" && fail "a hint with $N samples"
    fi
fi
# The offline views on the window: the Stacks view opens on the samples (no GPU launches).
"$TP" top "$JOB" --snapshot --seconds 5 --save "$W/win.tprof" >/dev/null 2>>"$W/top.log" ||
    fail "top --save"
"$TP" tui "$W/win.tprof" --snapshot --view stacks --width 160 --height 40 >"$W/view.txt" \
    2>>"$W/top.log" || fail "tui --view stacks"
grep -Eq '^[0-9]+ sampled stacks' "$W/view.txt" || fail "the Stacks view: $(head -3 "$W/view.txt")"
kill -TERM "$JOB"
wait "$REC"
REC= JOB=

# A forked worker makes the batches: the window's samples are the job's processes' (the worker's
# from its trace beside the main one), its line among the rows, two threads counted.
rm -f "$W/done"
"$TP" record --live --sample -o "$W/wjob.tprof" -- "$NVTXPY" "$HERE/sample_job.py" "$W/done" \
    worker >"$W/wjob.log" 2>&1 &
REC=$!

poll has_sock || fail "no socket for the worker job"
JOB=$(basename "$SOCKDIR"/*.sock .sock)
poll stepped || fail "the worker job does not step"
wrow="sample_job.py:$BURN in burn < sample_job.py:$MAKE in <module>"
worker_hot() {
    "$TP" top "$JOB" --snapshot --seconds 5 --width 160 --height 44 >"$W/wsecs.txt" \
        2>>"$W/top.log" && grep -q "^[> ] $wrow " "$W/wsecs.txt"
}
poll worker_hot || fail "no sampled row of the worker '$wrow': $(grep -A6 '^ CPU time' "$W/wsecs.txt")"
grep -Eq '^ CPU time by line, sampled: [0-9]+ samples of 2 threads, ' "$W/wsecs.txt" ||
    fail "the worker job's samples header: $(grep '^ CPU time' "$W/wsecs.txt")"
# ...and `--save` writes the worker's span beside the window's trace, twice in a row (each save
# replaces the last)
for k in 1 2; do
    "$TP" top "$JOB" --snapshot --seconds 3 --save "$W/wwin.tprof" >/dev/null 2>>"$W/top.log" ||
        fail "top --save ($k)"
done
[ "$(ls "$W"/wwin.[0-9]*.tprof 2>/dev/null | wc -l)" -eq 1 ] ||
    fail "the saved window's worker traces: $(ls "$W")"
"$TP" report "$W/wwin.tprof" >"$W/wwin-report.txt" 2>>"$W/top.log" || fail "report of the saved window"
grep -q "sample_job.py:$MAKE in <module>" "$W/wwin-report.txt" ||
    fail "the saved window's report lacks the worker's line"
# ...and a capture of it holds the worker too: its span cut from the worker's trace, beside the
# capture under the recording's names, read by report as one job
"$TP" capture "$JOB" --seconds 2 -o "$W/cap.tprof" >"$W/cap.txt" 2>>"$W/top.log" || fail "capture"
grep -q "with 1 other process of the job beside it" "$W/cap.txt" || fail "capture: $(cat "$W/cap.txt")"
ls "$W"/cap.[0-9]*.tprof >/dev/null 2>&1 || fail "no worker trace beside the capture: $(ls "$W")"
"$TP" report "$W/cap.tprof" >"$W/cap-report.txt" 2>>"$W/top.log" || fail "report of the capture"
grep -Eq "^  [0-9]+ +[0-9]+ +(main|worker) " "$W/cap-report.txt" &&
    [ "$(grep -Ec '^ +[0-9]+ +[0-9]+ +(main|worker) ' "$W/cap-report.txt")" -eq 2 ] ||
    fail "the capture's processes: $(grep -A4 '^Processes' "$W/cap-report.txt")"
grep -q "sample_job.py:$BURN in burn" "$W/cap-report.txt" &&
    grep -q "sample_job.py:$MAKE in <module>" "$W/cap-report.txt" ||
    fail "the capture's report lacks the worker's line: $(grep -A12 '^CPU time by line' "$W/cap-report.txt")"
kill -TERM "$JOB"
wait "$REC"
REC= JOB=

# top -- CMD --snapshot: the frame waits for the window of the job it started (not a frame of
# a job with no step yet), and says the job goes on.
(cd "$W" && "$TP" top --sample --snapshot --steps 3 --width 160 --height 44 -- "$NVTXPY" \
    "$HERE/sample_job.py" "$W/done2" >"$W/fresh.txt" 2>"$W/fresh.log")
JOB=$(sed -n 's/^trainprof top: job \([0-9]*\) goes on.*/\1/p' "$W/fresh.log")
[ -n "$JOB" ] || fail "top -- CMD: $(cat "$W/fresh.log")"
grep -Eq '^ window: 3 steps in ' "$W/fresh.txt" || fail "fresh job: $(head -5 "$W/fresh.txt")"
grep -q 'no complete step yet' "$W/fresh.txt" && fail "a frame before the first step"
grep -Eq '^ CPU time by line, sampled: ' "$W/fresh.txt" || fail "top --sample -- CMD: no samples"
echo ok
