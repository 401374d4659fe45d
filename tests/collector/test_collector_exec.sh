#!/bin/sh
# exec() under `trainprof record`: an image that execs closes its trace first (index
# present); one that recorded events is kept as NAME.execN.tprof so the next image (same
# pid, maybe same name) cannot truncate it; empty traces of exec'ing images and of helper
# processes (a shell wrapper's subshells and commands) are deleted, leaving one trace.
set -eu
trainprof=$1 app=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "FAIL: $*"; ls -la "$dir"; exit 1; }
records() { "$trainprof" info --json "$1"; }

# 1. A program that records a range, then execs itself.
"$trainprof" record -- "$app" exec >log1 2>&1 || fail "record exec: $(cat log1)"
set -- nvtx_app-*.tprof
[ $# -eq 2 ] || fail "expected 2 traces, got $*"
before=$(ls nvtx_app-*.exec1.tprof) || fail "no .exec1 trace"
after=$(ls nvtx_app-*.tprof | grep -v exec1)
records "$before" | grep -q '"NVTX_PUSH":1' || fail "pre-exec trace lost its range"
records "$before" | grep -q '"index_present":true' || fail "pre-exec trace not closed"
records "$after" | grep -q '"index_present":true' || fail "post-exec trace not closed"
if records "$after" | grep -q NVTX_PUSH; then fail "post-exec trace has the old image's range"; fi
grep -q "exec1.tprof" log1 || fail "record did not report the set-aside trace"
# The images of one pid are one recording's generations 0 and 1 (PROCESS exec_gen, job_id).
records "$before" | grep -q '"exec_gen":0}' || fail "pre-exec image is not generation 0"
records "$after" | grep -q '"exec_gen":1}' || fail "post-exec image is not generation 1"
job() { records "$1" | sed 's/.*"job_id":"\([0-9a-f]*\)".*/\1/'; }
[ "$(job "$before")" = "$(job "$after")" ] && [ "$(job "$before")" != 0000000000000000 ] ||
  fail "the two images do not carry one recording id"
rm -f ./*.tprof

# 2. A shell wrapper (subshell, a helper command) that finally execs the program.
"$trainprof" record -- sh -c 'x=$(echo sub); /bin/true; exec "$0" plain' "$app" >log2 2>&1 ||
  fail "record sh: $(cat log2)"
n=$(ls ./*.tprof | wc -l)
[ "$n" -eq 1 ] || fail "expected exactly one trace, got $n"
ls nvtx_app-*.tprof >/dev/null || fail "the program's trace is missing"
[ "$(grep -c 'trainprof: trace' log2)" -eq 1 ] || fail "record listed $(grep -c 'trainprof: trace' log2) traces"
echo "test_collector_exec: 2 passed, 0 failed"
