#!/bin/bash
# Live mode end to end, with real processes only: the trainer (input-bound) under
# `trainprof record --live`; `ps`; `top PID --snapshot` (the step counter advances, the
# input-bound finding is there); `capture --steps 5` (exactly 5 step ranges, `report` reads
# it); the live figures of a window equal `report` on that window's trace; clients that send
# garbage, oversized or foreign-version frames, flood, or never read, and a client of
# another uid, leave the job serving and its trace whole; a job killed with SIGKILL leaves a
# stale socket that `ps` removes. Nothing here waits for a fixed time: every step polls for
# its condition with a generous limit.
set -u
TP=$1 TRAINER=$2 PY=$3 HERE=$4
. "$HERE/live_lib.sh"

"$TP" record --live -o "$W/main.tprof" -- "$TRAINER" --scenario input-bound --steps 1000000 \
    --log-every 0 >"$W/job.log" 2>&1 &
REC=$!
poll has_sock || fail "no socket appeared in $SOCKDIR"
JOB=$(basename "$SOCKDIR"/*.sock .sock)
SOCK=$SOCKDIR/$JOB.sock

# The folder and the socket are the user's alone.
[ "$(stat -c %a "$SOCKDIR")" = 700 ] || fail "socket folder mode $(stat -c %a "$SOCKDIR")"
[ "$(stat -c %a "$SOCK")" = 600 ] || fail "socket mode $(stat -c %a "$SOCK")"

# ps lists the job with its mode, trace and command.
"$TP" ps >"$W/ps.txt" || fail "ps failed"
grep -E "^$JOB +live .*$W/main.tprof .*trainprof-trainer" "$W/ps.txt" >/dev/null ||
    fail "ps does not list job $JOB: $(cat "$W/ps.txt")"

# top --snapshot: once a step completed, the window holds the input-bound finding.
snap_has_finding() {
    "$TP" top "$JOB" --snapshot --steps 3 >"$W/snap1.txt" 2>>"$W/top.log" &&
        grep -q "the device waits for the input pipeline" "$W/snap1.txt"
}
poll snap_has_finding || fail "no input-bound finding in: $(cat "$W/snap1.txt")"
steps_of() { sed -n 's/.* steps \([0-9]*\)  window.*/\1/p' "$1"; }
S1=$(steps_of "$W/snap1.txt")
[ -n "$S1" ] || fail "no step counter in the snapshot"
advanced() {
    "$TP" top "$JOB" --snapshot --steps 3 >"$W/snap2.txt" 2>>"$W/top.log" &&
        [ "$(steps_of "$W/snap2.txt")" -gt "$S1" ]
}
poll advanced || fail "the step counter did not advance past $S1"

# capture --steps 5: exactly 5 step ranges, read by report.
"$TP" capture "$JOB" --steps 5 -o "$W/cap.tprof" >"$W/capture.log" 2>&1 ||
    fail "capture failed: $(cat "$W/capture.log")"
"$TP" report --format json "$W/cap.tprof" >"$W/cap.json" 2>"$W/report.log" ||
    fail "report cannot read the capture"
"$PY" - "$W/cap.json" <<'PYEOF' || fail "the capture's steps"
import json, sys
r = json.load(open(sys.argv[1]))["ranks"][0]
steps = [x["count"] for x in r["ranges"] if x["name"] == "step"]
assert steps == [5], steps
assert r["findings"] and r["findings"][0]["id"] == "input-bound", r["findings"][:1]
PYEOF

# The live figures of a window equal report's on that window's trace (--save keeps it).
"$TP" top "$JOB" --snapshot --steps 4 --save "$W/win.tprof" >"$W/snap3.txt" 2>>"$W/top.log" ||
    fail "top --save"
"$TP" report --format json "$W/win.tprof" >"$W/win.json" || fail "report on the window"
"$PY" "$HERE/check_live_vs_report.py" "$W/snap3.txt" "$W/win.json" || fail "live vs report"

# The allocator's memory (NVTX memory extension) is shown, with the state from before the
# window: the trainer's weights were allocated long before these 4 steps.
grep -Eq "memory: allocated [1-9][0-9.]* [KMG]?i?B  reserved [1-9][0-9.]* [KMG]?i?B  \(at the window's start [1-9]" \
    "$W/snap3.txt" || fail "no allocator memory: $(grep memory: "$W/snap3.txt")"

# The aggregator's figures on their own (the request `top` makes between cut windows), from
# a client written from the protocol's description.
"$PY" "$HERE/live_client.py" "$SOCK" figures 3 >"$W/figures.txt" || fail "figures: $(cat "$W/figures.txt")"
"$PY" - "$W/figures.txt" <<'PYEOF' || fail "figures: $(cat "$W/figures.txt")"
import sys
kv = dict(l.split("=", 1) for l in open(sys.argv[1]).read().splitlines() if "=" in l)
t0, t1 = int(kv["agg_t0"]), int(kv["agg_t1"])
assert int(kv["steps"]) == 3 and t1 > t0 and 0 < int(kv["agg_busy_ns"]) <= t1 - t0, kv
step = [kv[k] for k in kv if k.startswith("r") and kv[k].endswith(",step")]
assert len(step) == 1 and step[0].split(",")[0] == "3", step
assert "k0" in kv and int(kv["agg_alloc0"]) > 0 and int(kv["agg_reserved1"]) > 0, kv
PYEOF

# Misbehaving clients get an error and the job goes on.
for a in garbage oversize badversion; do
    "$PY" "$HERE/live_client.py" "$SOCK" $a >"$W/$a.txt" 2>&1 || fail "$a: $(cat "$W/$a.txt")"
done
"$PY" "$HERE/live_client.py" "$SOCK" flood >"$W/flood.txt" 2>&1 || fail "flood"
grep -Eq "refused=([1-9][0-9]*)" "$W/flood.txt" || fail "a flood was not limited: $(cat "$W/flood.txt")"
"$PY" "$HERE/live_client.py" "$SOCK" noread >"$W/noread.txt" 2>&1 || fail "noread"

# Another uid is refused (needs root to become nobody): the folder keeps it out, and with
# the folder opened for this test, the job's own check (SO_PEERCRED) refuses it, once said.
# (The system's python: the test's may live where nobody cannot read.)
SYSPY=/usr/bin/python3
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1 &&
    [ -x $SYSPY ]; then
    AS_NOBODY="setpriv --reuid=nobody --regid=nogroup --clear-groups"
    $AS_NOBODY $SYSPY -c "print(1)" >/dev/null 2>&1 || fail "nobody cannot run $SYSPY"
    chmod 711 "$W"
    $AS_NOBODY $SYSPY "$HERE/live_client.py" "$SOCK" denied >"$W/nobody0.txt" 2>&1 ||
        fail "nobody was not kept out by the folder: $(cat "$W/nobody0.txt")"
    chmod 711 "$XDG_RUNTIME_DIR" "$SOCKDIR" && chmod 666 "$SOCK"
    for k in 1 2; do
        $AS_NOBODY $SYSPY "$HERE/live_client.py" "$SOCK" refused >"$W/nobody$k.txt" 2>&1 ||
            fail "nobody was not refused: $(cat "$W/nobody$k.txt")"
    done
    chmod 700 "$W" "$XDG_RUNTIME_DIR" "$SOCKDIR" && chmod 600 "$SOCK"
    poll grep -q "refused a connection from uid 65534" "$W/job.log" || fail "refusal not said"
    [ "$(grep -c "refused a connection" "$W/job.log")" = 1 ] || fail "refusal said more than once"
fi

# After all that the job still serves, and still counts steps.
"$PY" "$HERE/live_client.py" "$SOCK" status >"$W/status.txt" || fail "job stopped serving"
S3=$(sed -n 's/^steps=//p' "$W/status.txt")
more_steps() {
    "$PY" "$HERE/live_client.py" "$SOCK" status >"$W/status2.txt" &&
        [ "$(sed -n 's/^steps=//p' "$W/status2.txt")" -gt "$S3" ]
}
poll more_steps || fail "the job stopped stepping after the misbehaving clients"

# A clean end: the socket goes, the trace is whole (report reads it, with its steps).
kill -TERM "$JOB"
wait "$REC"
REC=
[ ! -e "$SOCK" ] || fail "the socket outlived the job"
"$TP" report --format json "$W/main.tprof" >"$W/main.json" || fail "report on the job's trace"
"$PY" - "$W/main.json" "$S3" <<'PYEOF' || fail "the job's trace"
import json, sys
r = json.load(open(sys.argv[1]))["ranks"][0]
steps = [x["count"] for x in r["ranges"] if x["name"] == "step"]
assert steps and steps[0] > int(sys.argv[2]), (steps, sys.argv[2])
PYEOF
"$TP" info "$W/main.tprof" >"$W/info.txt" 2>&1 || fail "info: $(cat "$W/info.txt")"

# SIGKILL leaves the socket behind; the next ps removes it and lists nothing.
"$TP" record --live -o "$W/killed.tprof" -- "$TRAINER" --steps 1000000 --log-every 0 \
    >"$W/job2.log" 2>&1 &
REC=$!
poll has_sock || fail "no socket for the second job"
JOB=$(basename "$SOCKDIR"/*.sock .sock)
kill -KILL "$JOB"
wait "$REC"
REC=
[ -S "$SOCKDIR/$JOB.sock" ] || fail "SIGKILL should leave the socket"
"$TP" ps >"$W/ps2.txt" || fail "ps after SIGKILL"
[ ! -e "$SOCKDIR/$JOB.sock" ] || fail "ps left the stale socket"
grep -q "^$JOB " "$W/ps2.txt" && fail "ps lists a dead job"
"$TP" capture "$JOB" --steps 1 -o "$W/none.tprof" 2>"$W/cap2.log" && fail "capture of a dead job"
grep -q "no live job with pid $JOB" "$W/cap2.log" || fail "capture's error: $(cat "$W/cap2.log")"
[ ! -e "$W/none.tprof" ] || fail "a failed capture left its file"
echo "ok"
