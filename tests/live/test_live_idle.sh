#!/bin/bash
# `record --idle`: the job records nothing until asked (its status counts no record while it
# runs steps), two captures in one run work (steps, then seconds), and the job's own trace
# holds only what was asked for: its first step is the first captured one. Then fork: a
# forked child of a live job serves nothing and does not take the parent's socket with it.
# Real processes only; every wait polls for its condition with a generous limit.
set -u
TP=$1 TRAINER=$2 PY=$3 HERE=$4 NVTXPY=$5
# the fork part runs a Python program with the nvtx package (scripts/install-deps.sh's venv)
. "$HERE/live_lib.sh"
need_venv "$NVTXPY"
status() { "$PY" "$HERE/live_client.py" "$SOCKDIR/$JOB.sock" status; }

# Bad command lines: one line and status 2, nothing run.
bad() {
    "$@" >"$W/bad.out" 2>"$W/bad.err"
    [ $? = 2 ] && [ "$(wc -l <"$W/bad.err")" -ge 1 ] || fail "not a usage error: $*"
}
bad "$TP" record --idle --capture nvtx:x -- true
bad "$TP" record --idle --live -- true
bad "$TP" record --step-range @d -- true
bad "$TP" capture 1 --steps 0
bad "$TP" capture 1 --steps 2 --seconds 1
bad "$TP" capture --steps 2
bad "$TP" top
bad "$TP" top 1 --steps x
bad "$TP" ps extra

"$TP" record --idle -o "$W/idle.tprof" -- "$TRAINER" --steps 1000000 --log-every 1 \
    >"$W/job.log" 2>&1 &
REC=$!
poll has_sock || fail "no socket"
JOB=$(basename "$SOCKDIR"/*.sock .sock)
stepped() { [ "$(grep -c '^step ' "$W/job.log")" -ge 3 ]; }
poll stepped || fail "the trainer does not step"
status >"$W/status0.txt" || fail "status"
grep -q '^mode=idle$' "$W/status0.txt" || fail "mode: $(cat "$W/status0.txt")"
grep -q '^records=0$' "$W/status0.txt" || fail "idle recorded: $(cat "$W/status0.txt")"
# ...yet it counts the steps it runs (the trainer logs each step inside its step range, so
# the log's count before the status, less the step still open, is a floor; after it, plus
# the open step, a ceiling).
N1=$(grep -c '^step ' "$W/job.log")
status >"$W/status0.txt" || fail "status"
N2=$(grep -c '^step ' "$W/job.log")
S0=$(sed -n 's/^steps=//p' "$W/status0.txt")
[ "$S0" -ge $((N1 - 1)) ] && [ "$S0" -le $((N2 + 1)) ] ||
    fail "idle steps: status says $S0, the log $N1..$N2"
grep -q '^records=0$' "$W/status0.txt" || fail "counting steps recorded: $(cat "$W/status0.txt")"

"$TP" capture "$JOB" --steps 3 -o "$W/cap1.tprof" >"$W/cap1.log" 2>&1 || fail "capture 1"
"$TP" capture "$JOB" --seconds 0.5 -o "$W/cap2.tprof" >"$W/cap2.log" 2>&1 || fail "capture 2"
"$TP" ps >"$W/ps.txt" && grep -Eq "^$JOB +idle " "$W/ps.txt" || fail "ps: $(cat "$W/ps.txt")"
PS_STEPS=$(awk -v j="$JOB" '$1 == j {print $4}' "$W/ps.txt")
[ "${PS_STEPS:-0}" -ge "$S0" ] || fail "ps shows $PS_STEPS steps, fewer than $S0 before: $(cat "$W/ps.txt")"
# top --snapshot on the idle job: it records from the request on, and the frame waits for
# the steps asked for (not the steps an earlier watch left in the live buffer).
"$TP" top "$JOB" --snapshot --steps 2 >"$W/snap.txt" 2>"$W/top.log" || fail "top --snapshot"
grep -q "window: 2 steps in" "$W/snap.txt" || fail "idle snapshot: $(head -8 "$W/snap.txt")"
# a row of its own, not necessarily the first: in a short window a range of another thread
# (the trainer's loader) may add up to more than the steps
grep -Eq "^[> ] step " "$W/snap.txt" || fail "idle snapshot has no step row: $(cat "$W/snap.txt")"
kill -TERM "$JOB"
wait "$REC"
REC= JOB=
for f in cap1 cap2 idle; do
    "$TP" export "$W/$f.tprof" --format chrome -o "$W/$f.json" >/dev/null 2>&1 || fail "export $f"
done
"$PY" - "$W/cap1.json" "$W/cap2.json" "$W/idle.json" <<'PYEOF' || fail "idle traces"
import json, sys
def steps(path):
    ev = json.load(open(path))["traceEvents"]
    return sorted(e["ts"] for e in ev if e.get("name") == "step" and e.get("ph") == "X")
def stamps(path):
    ev = json.load(open(path))["traceEvents"]
    return sorted(e["ts"] for e in ev if "ts" in e and e.get("ph") not in ("M", "C"))
cap1, idle = steps(sys.argv[1]), steps(sys.argv[3])
cap2 = stamps(sys.argv[2])
assert len(cap1) == 3, cap1
assert idle and abs(idle[0] - cap1[0]) < 0.01, (idle[:2], cap1)  # nothing before it
# The second capture came later. (Its 0.5 s need not hold a whole step on a loaded machine:
# what it holds, if anything, starts after the first capture's last step began.)
assert all(t > cap1[-1] for t in cap2), (cap1, cap2[:3])
PYEOF

# fork: the child serves nothing, and leaving does not remove the parent's socket.
"$TP" record --live -o "$W/fork.tprof" -- "$NVTXPY" "$HERE/fork_job.py" "$W/stop" \
    "$W/child.pid" >"$W/fork.log" 2>&1 &
REC=$!
poll test -s "$W/child.pid" || fail "the job did not fork"
poll has_sock || fail "no socket for the forking job"
JOB=$(basename "$SOCKDIR"/*.sock .sock)
CHILD=$(cat "$W/child.pid")
[ "$(ls "$SOCKDIR" | wc -l)" = 1 ] || fail "more than one socket: $(ls "$SOCKDIR")"
[ ! -e "$SOCKDIR/$CHILD.sock" ] || fail "the child serves"
touch "$W/stop"
gone() { ! kill -0 "$CHILD" 2>/dev/null || grep -q zombie "/proc/$CHILD/status" 2>/dev/null; }
poll gone || fail "the child did not leave"
status >"$W/status1.txt" || fail "the parent stopped serving after its child left"
grep -q "^pid=$JOB$" "$W/status1.txt" || fail "status: $(cat "$W/status1.txt")"
echo ok
